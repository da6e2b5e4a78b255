// Collectives priced by their algorithm over the links they actually use (issue 4, DESIGN.md
// "Cost model and simulator"), so that hierarchy shows: a ring that crosses a node's NIC runs at
// the NIC's speed, a ring inside an NVSwitch node at NVLink's.
//
// Ring (all-gather, reduce-scatter, all-reduce): the group, in the order given, forms a ring; each
// of (n-1) steps (2(n-1) for all-reduce) every member sends bytes/n to its successor at once, so
// a step lasts as long as the slowest ring hop, whose bandwidth is its route's bottleneck shared
// among the ring hops that cross the same link direction. Tree (all-reduce only, as in NCCL): a
// pipelined reduce up and broadcast down a binary tree over the group, 2 (ceil(log2 n) latency +
// bytes / tree bottleneck). An all-reduce takes whichever is faster for its size.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "cluster/cluster.h"

namespace cleave::cost {

enum class CollectiveKind : std::uint8_t { all_gather, reduce_scatter, all_reduce };
enum class CollectiveAlgorithm : std::uint8_t { ring, tree };

std::string_view collective_kind_name(CollectiveKind kind);
std::string_view collective_algorithm_name(CollectiveAlgorithm algorithm);

struct CollectiveCost {
  Seconds time{0};
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::ring;
  // Bytes each link direction carries, by Hop::channel(), ascending: the simulator's resources
  // and the per-link traffic report.
  std::vector<std::pair<std::size_t, Bytes>> channel_bytes;
};

// The fraction of a link's line rate NCCL's protocols move as payload, by link kind. NVLink and
// NVSwitch: 0.8, since SM-driven transfers carry 128-byte payloads and reach ~20 of each link's
// 25 GB/s (NCCL maintainers, nccl-tests#149: ~230 GB/s of 300 on A100; nccl-tests#212: 370 GB/s
// of 450 on H100). InfiniBand: 0.94, 46-48 GB/s per 400 Gb/s NDR NIC (nccl-tests#290). Others:
// 1, because the presets already give PCIe and host links at their effective rates.
struct CollectiveOptions {
  double nvlink_efficiency = 0.8;  // nvlink and nvswitch links
  double infiniband_efficiency = 0.94;
  double other_efficiency = 1.0;

  double efficiency(cluster::LinkKind kind) const;
};

// A collective over `group` (distinct devices; ring order as given) on a buffer of `bytes` (the
// whole gathered or reduced buffer, not one member's share). A group of one costs nothing.
CollectiveCost collective_cost(cluster::Cluster const& cluster, CollectiveKind kind, Bytes bytes,
                               std::span<cluster::DeviceId const> group,
                               CollectiveOptions const& options = {});

// NCCL's bus bandwidth for a collective that took `time`: algorithm bandwidth (bytes / time)
// times (n-1)/n for all-gather and reduce-scatter, 2 (n-1)/n for all-reduce, the figure
// nccl-tests prints and the one to compare with published measurements.
BytesPerSecond bus_bandwidth(CollectiveKind kind, Bytes bytes, std::size_t members, Seconds time);

}  // namespace cleave::cost
