// The versioned JSON form of a cluster, "cleave.cluster/1" (docs/clusters.md). Round-trips
// exactly: cluster_from_json(cluster_to_json(c)) describes the same cluster, and writing it again
// gives byte-identical text. Devices, nodes and switches are referred to by name, so a file can be
// edited by hand.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "cluster/cluster.h"

namespace cleave::cluster {

inline constexpr std::string_view cluster_format = "cleave.cluster/1";

std::string cluster_to_json(Cluster const& cluster);
// Errors say what is wrong and where (byte offset for syntax; the device, node, switch or link and
// key for content), then Cluster::create verifies the result.
Expected<Cluster> cluster_from_json(std::string_view text);

Status save_cluster(Cluster const& cluster, std::string const& path);  // atomic
Expected<Cluster> load_cluster_file(std::string const& path);

// FNV-1a 64 over the canonical JSON without "name" and "sources": the same hardware gives the same
// fingerprint however it was named, and any change of a device, link or number changes it. Plans
// record it to say which cluster they were made for.
std::uint64_t fingerprint(Cluster const& cluster);
std::string fingerprint_hex(Cluster const& cluster);  // 16 lower-case hex digits

}  // namespace cleave::cluster
