// A cluster: devices (memory, peak FLOP/s per dtype, memory bandwidth), the nodes they sit in, and
// the topology that connects them (docs/clusters.md). An immutable, verified value made by
// Cluster::create, with the route of every transfer precomputed, so the cost model, the simulator
// and the planners all see the same paths.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/types.h"
#include "support/status.h"
#include "support/strong_id.h"
#include "support/units.h"

namespace cleave::cluster {

using DeviceId = StrongId<struct DeviceTag>;
using NodeId = StrongId<struct NodeTag>;
using SwitchId = StrongId<struct SwitchTag>;
using VertexId = StrongId<struct VertexTag>;
using LinkId = StrongId<struct LinkTag>;

// More devices than this would make the all-pairs route table (n^2 routes) too large to hold.
inline constexpr std::size_t max_devices = 1024;

struct Device {
  std::string name;  // unique among all topology vertices, e.g. "gpu3"
  std::string kind;  // the hardware, e.g. "V100-SXM2-16GB"; devices of one kind are alike
  NodeId node;
  Bytes memory;
  // Peak rate per floating dtype (fp32, fp16, bf16); a dtype the device lacks is absent.
  std::map<ir::DType, FlopsPerSecond> peak;
  BytesPerSecond memory_bandwidth;

  std::optional<FlopsPerSecond> peak_for(ir::DType dtype) const;
};

// Whether the device moves data with its own compute stream, having no copy engine: the runtime's
// CPU cores (kind "cpu-core"), whose worker thread runs every transfer into its device (and its
// share of a collective) between its compute tasks. The simulator then holds the stream for the
// copy; a GPU's copies overlap its kernels.
bool copies_on_compute(Device const& device);

// A machine: its devices share one host (CPU memory), the target of swapping.
struct Node {
  std::string name;  // e.g. "node0"; its host vertex is named "<name>/host"
  Bytes host_memory;
};

enum class SwitchKind : std::uint8_t { nvswitch, pcie_switch, nic, network_switch };
std::string_view switch_kind_name(SwitchKind kind);
std::optional<SwitchKind> parse_switch_kind(std::string_view name);

// A topology vertex that is neither a device nor a host. An NVSwitch fabric, a PCIe switch or a
// NIC sits in a node; a network (InfiniBand or Ethernet) switch sits in none.
struct Switch {
  std::string name;
  SwitchKind kind = SwitchKind::pcie_switch;
  NodeId node;  // invalid: outside every node
};

enum class LinkKind : std::uint8_t { nvlink, pcie, nvswitch, infiniband, ethernet, host };
std::string_view link_kind_name(LinkKind kind);
std::optional<LinkKind> parse_link_kind(std::string_view name);

// A full-duplex link between two vertices: each direction is a separate resource with the
// given bandwidth, so traffic a->b does not slow traffic b->a.
struct Link {
  LinkKind kind = LinkKind::pcie;
  VertexId a;
  VertexId b;
  BytesPerSecond bandwidth;  // per direction
  Seconds latency;           // per traversal
};

enum class Direction : std::uint8_t { a_to_b, b_to_a };

// One link crossed in one direction. `channel` numbers the (link, direction) resources densely
// (0 .. 2 * num_links - 1) for simulators that keep one queue per resource.
struct Hop {
  LinkId link;
  Direction direction = Direction::a_to_b;
  std::size_t channel() const {
    return 2 * std::size_t{link.value()} + (direction == Direction::b_to_a);
  }
  auto operator<=>(Hop const&) const = default;
};

// The path a transfer takes; empty from a device to itself (then bottleneck is +infinity and
// latency 0: nothing moves).
struct Route {
  std::span<Hop const> hops;
  BytesPerSecond bottleneck;  // the smallest per-direction bandwidth along the route
  Seconds latency;            // the sum of the links' latencies
};

enum class VertexKind : std::uint8_t { device, host, switch_ };

// Vertices are numbered devices first, then one host per node, then switches.
struct Vertex {
  VertexKind kind = VertexKind::device;
  std::uint32_t index = 0;  // into devices(), nodes() (its host) or switches()
};

// What Cluster::create takes. Names, not ids, are what users write, but ids are what the parts
// hold: endpoints of links are vertex ids in the numbering above.
struct ClusterParts {
  std::string name;                  // e.g. the canonical preset spec
  std::vector<std::string> sources;  // where each constant comes from, one line each
  std::vector<Node> nodes;
  std::vector<Device> devices;
  std::vector<Switch> switches;
  std::vector<Link> links;
};

class Cluster {
 public:
  // Verifies the parts (unique names, at least one device, positive memory and bandwidths,
  // non-negative latencies, a peak rate for some floating dtype, every device with a host link to
  // its node's host, ids in range, every device reachable from every other) and routes every
  // ordered pair of devices. Errors name the offending device, node, switch or link.
  static Expected<Cluster> create(ClusterParts parts);

  std::string const& name() const { return parts_.name; }
  std::vector<std::string> const& sources() const { return parts_.sources; }
  std::vector<Node> const& nodes() const { return parts_.nodes; }
  std::vector<Device> const& devices() const { return parts_.devices; }
  std::vector<Switch> const& switches() const { return parts_.switches; }
  std::vector<Link> const& links() const { return parts_.links; }
  ClusterParts const& parts() const { return parts_; }

  std::size_t num_devices() const { return parts_.devices.size(); }
  Device const& device(DeviceId id) const;
  Node const& node(NodeId id) const;
  Link const& link(LinkId id) const;
  std::vector<DeviceId> const& devices_of(NodeId id) const;

  std::size_t num_vertices() const;
  Vertex vertex(VertexId id) const;
  std::string vertex_name(VertexId id) const;
  VertexId device_vertex(DeviceId id) const { return VertexId(id.value()); }
  VertexId host_vertex(NodeId id) const;

  // Fewest hops; among those the highest bottleneck bandwidth; then, walking back from the
  // destination, each vertex is entered over the lowest-numbered link that keeps that bottleneck.
  Route route(DeviceId from, DeviceId to) const;
  // From a device to its node's host (swapping).
  Route host_route(DeviceId device) const;
  bool same_node(DeviceId a, DeviceId b) const { return device(a).node == device(b).node; }

 private:
  struct RouteEntry {
    std::uint32_t first = 0;  // into hops_
    std::uint32_t count = 0;
    BytesPerSecond bottleneck;
    Seconds latency;
  };
  Cluster() = default;
  Route view(RouteEntry const& e) const;
  void compute_routes();

  ClusterParts parts_;
  std::vector<std::vector<DeviceId>> node_devices_;
  std::vector<Hop> hops_;
  std::vector<RouteEntry> routes_;       // [from * num_devices + to]
  std::vector<RouteEntry> host_routes_;  // [device]
};

}  // namespace cleave::cluster
