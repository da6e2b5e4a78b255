#include "cluster/cluster.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <set>

#include "support/assert.h"

namespace cleave::cluster {
namespace {

constexpr std::array<std::string_view, 4> switch_kind_names = {"nvswitch", "pcie_switch", "nic",
                                                               "network_switch"};
constexpr std::array<std::string_view, 6> link_kind_names = {"nvlink",     "pcie",     "nvswitch",
                                                             "infiniband", "ethernet", "host"};

bool positive(double v) {
  return std::isfinite(v) && v > 0;
}

std::string quoted(std::string const& name) {
  return "'" + name + "'";
}

Error invalid(std::string message) {
  return Error(ErrorCode::invalid_argument, std::move(message));
}

}  // namespace

std::optional<FlopsPerSecond> Device::peak_for(ir::DType dtype) const {
  auto it = peak.find(dtype);
  if (it == peak.end()) return std::nullopt;
  return it->second;
}

bool copies_on_compute(Device const& device) {
  return device.kind == "cpu-core";
}

std::string_view switch_kind_name(SwitchKind kind) {
  return switch_kind_names[static_cast<std::size_t>(kind)];
}

std::optional<SwitchKind> parse_switch_kind(std::string_view name) {
  for (std::size_t k = 0; k < switch_kind_names.size(); ++k)
    if (switch_kind_names[k] == name) return static_cast<SwitchKind>(k);
  return std::nullopt;
}

std::string_view link_kind_name(LinkKind kind) {
  return link_kind_names[static_cast<std::size_t>(kind)];
}

std::optional<LinkKind> parse_link_kind(std::string_view name) {
  for (std::size_t k = 0; k < link_kind_names.size(); ++k)
    if (link_kind_names[k] == name) return static_cast<LinkKind>(k);
  return std::nullopt;
}

Device const& Cluster::device(DeviceId id) const {
  CLEAVE_ASSERT(id.value() < parts_.devices.size(), "device id out of range");
  return parts_.devices[id.value()];
}

Node const& Cluster::node(NodeId id) const {
  CLEAVE_ASSERT(id.value() < parts_.nodes.size(), "node id out of range");
  return parts_.nodes[id.value()];
}

Link const& Cluster::link(LinkId id) const {
  CLEAVE_ASSERT(id.value() < parts_.links.size(), "link id out of range");
  return parts_.links[id.value()];
}

std::vector<DeviceId> const& Cluster::devices_of(NodeId id) const {
  CLEAVE_ASSERT(id.value() < node_devices_.size(), "node id out of range");
  return node_devices_[id.value()];
}

std::size_t Cluster::num_vertices() const {
  return parts_.devices.size() + parts_.nodes.size() + parts_.switches.size();
}

Vertex Cluster::vertex(VertexId id) const {
  std::size_t v = id.value();
  CLEAVE_ASSERT(v < num_vertices(), "vertex id out of range");
  std::size_t d = parts_.devices.size(), n = parts_.nodes.size();
  if (v < d) return {VertexKind::device, static_cast<std::uint32_t>(v)};
  if (v < d + n) return {VertexKind::host, static_cast<std::uint32_t>(v - d)};
  return {VertexKind::switch_, static_cast<std::uint32_t>(v - d - n)};
}

std::string Cluster::vertex_name(VertexId id) const {
  Vertex v = vertex(id);
  switch (v.kind) {
  case VertexKind::device:
    return parts_.devices[v.index].name;
  case VertexKind::host:
    return parts_.nodes[v.index].name + "/host";
  case VertexKind::switch_:
    break;
  }
  return parts_.switches[v.index].name;
}

VertexId Cluster::host_vertex(NodeId id) const {
  CLEAVE_ASSERT(id.value() < parts_.nodes.size(), "node id out of range");
  return VertexId(static_cast<VertexId::value_type>(parts_.devices.size() + id.value()));
}

Route Cluster::view(RouteEntry const& e) const {
  return {std::span<Hop const>(hops_.data() + e.first, e.count), e.bottleneck, e.latency};
}

Route Cluster::route(DeviceId from, DeviceId to) const {
  std::size_t n = num_devices();
  CLEAVE_ASSERT(from.value() < n && to.value() < n, "device id out of range");
  return view(routes_[std::size_t{from.value()} * n + to.value()]);
}

Route Cluster::host_route(DeviceId device) const {
  CLEAVE_ASSERT(device.value() < num_devices(), "device id out of range");
  return view(host_routes_[device.value()]);
}

Expected<Cluster> Cluster::create(ClusterParts parts_in) {
  Cluster c;
  c.parts_ = std::move(parts_in);
  ClusterParts const& parts = c.parts_;
  auto const& devices = parts.devices;
  auto const& nodes = parts.nodes;
  auto const& switches = parts.switches;
  if (devices.empty())
    return invalid("cluster '" + parts.name + "' has no devices; give it at least one");
  if (devices.size() > max_devices)
    return Error(ErrorCode::unsupported,
                 "cluster '" + parts.name + "' has " + std::to_string(devices.size()) +
                     " devices; cleave handles at most " + std::to_string(max_devices));
  std::size_t num_vertices = devices.size() + nodes.size() + switches.size();
  // Names: unique among vertices (devices, hosts, switches), and among nodes.
  std::set<std::string, std::less<>> vertex_names, node_names;
  auto add_name = [&](std::set<std::string, std::less<>>& set, std::string const& name,
                      std::string const& what) -> Status {
    if (name.empty()) return invalid(what + " has an empty name");
    if (!set.insert(name).second)
      return invalid("the name " + quoted(name) + " is used twice (again by " + what +
                     "); names of devices, hosts and switches must be unique");
    return Status::ok();
  };
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    std::string what = "node " + std::to_string(i) + " (" + quoted(nodes[i].name) + ")";
    CLEAVE_CHECK_OK(add_name(node_names, nodes[i].name, what));
    CLEAVE_CHECK_OK(add_name(vertex_names, nodes[i].name + "/host", "the host of " + what));
    if (nodes[i].host_memory.value() <= 0)
      return invalid(what + " has host memory " + std::to_string(nodes[i].host_memory.value()) +
                     " bytes; give it host_memory_bytes > 0");
  }
  for (std::size_t i = 0; i < devices.size(); ++i) {
    Device const& d = devices[i];
    std::string what = "device " + std::to_string(i) + " (" + quoted(d.name) + ")";
    CLEAVE_CHECK_OK(add_name(vertex_names, d.name, what));
    if (d.kind.empty()) return invalid(what + " has an empty kind; name its hardware");
    if (!d.node.valid() || d.node.value() >= nodes.size())
      return invalid(what + " is in node " + std::to_string(d.node.value()) + " but there are " +
                     std::to_string(nodes.size()) + " nodes");
    if (d.memory.value() <= 0)
      return invalid(what + " has " + (d.memory.value() == 0 ? "zero" : "negative") +
                     " memory; give it memory_bytes > 0");
    if (!positive(d.memory_bandwidth.value()))
      return invalid(what + " has memory bandwidth " + std::to_string(d.memory_bandwidth.value()) +
                     " B/s; it must be > 0");
    if (d.peak.empty())
      return invalid(what + " has no peak FLOP/s; give a peak for at least one of fp32, fp16, "
                            "bf16");
    for (auto const& [dtype, rate] : d.peak) {
      std::string dt(ir::dtype_name(dtype));
      if (!ir::is_floating(dtype))
        return invalid(what + " has a peak for " + dt + "; peaks are for fp32, fp16 or bf16");
      if (!positive(rate.value()))
        return invalid(what + " has peak " + std::to_string(rate.value()) + " FLOP/s for " + dt +
                       "; it must be > 0 (leave out a dtype the device lacks)");
    }
  }
  for (std::size_t i = 0; i < switches.size(); ++i) {
    Switch const& s = switches[i];
    std::string what = "switch " + std::to_string(i) + " (" + quoted(s.name) + ")";
    CLEAVE_CHECK_OK(add_name(vertex_names, s.name, what));
    if (s.node.valid() && s.node.value() >= nodes.size())
      return invalid(what + " is in node " + std::to_string(s.node.value()) + " but there are " +
                     std::to_string(nodes.size()) + " nodes");
  }
  auto const& links = parts.links;
  auto link_what = [&](std::size_t i) {
    Link const& l = links[i];
    std::string out = "link " + std::to_string(i) + " (" + std::string(link_kind_name(l.kind));
    if (l.a.value() < num_vertices && l.b.value() < num_vertices)
      out += " " + c.vertex_name(l.a) + " - " + c.vertex_name(l.b);
    return out + ")";
  };
  std::vector<bool> has_host_link(devices.size(), false);
  for (std::size_t i = 0; i < links.size(); ++i) {
    Link const& l = links[i];
    if (!l.a.valid() || !l.b.valid() || l.a.value() >= num_vertices || l.b.value() >= num_vertices)
      return invalid(link_what(i) + " has an endpoint out of range; vertex ids go from 0 to " +
                     std::to_string(num_vertices - 1));
    if (l.a == l.b) return invalid(link_what(i) + " connects a vertex to itself");
    if (!positive(l.bandwidth.value()))
      return invalid(link_what(i) + " has bandwidth " + std::to_string(l.bandwidth.value()) +
                     " B/s; it must be > 0");
    if (!std::isfinite(l.latency.value()) || l.latency.value() < 0)
      return invalid(link_what(i) + " has latency " + std::to_string(l.latency.value()) +
                     " s; it must be >= 0");
    if (l.kind != LinkKind::host) continue;
    Vertex a = c.vertex(l.a), b = c.vertex(l.b);
    if (a.kind == VertexKind::host) std::swap(a, b);
    if (a.kind != VertexKind::device || b.kind != VertexKind::host ||
        devices[a.index].node.value() != b.index)
      return invalid(link_what(i) + " is a host link but does not join a device to the host of "
                                    "its node");
    has_host_link[a.index] = true;
  }
  for (std::size_t i = 0; i < devices.size(); ++i)
    if (!has_host_link[i])
      return invalid("device " + std::to_string(i) + " (" + quoted(devices[i].name) +
                     ") has no host link; add a link of kind host to " +
                     nodes[devices[i].node.value()].name + "/host (swapping needs one)");
  c.node_devices_.resize(nodes.size());
  for (std::size_t i = 0; i < devices.size(); ++i)
    c.node_devices_[devices[i].node.value()].emplace_back(static_cast<DeviceId::value_type>(i));
  c.compute_routes();
  for (std::size_t i = 1; i < devices.size(); ++i)
    if (c.routes_[i].count == 0)
      return invalid("the topology is disconnected: device 0 (" + quoted(devices[0].name) +
                     ") cannot reach device " + std::to_string(i) + " (" + quoted(devices[i].name) +
                     "); add links that join them");
  return c;
}

// One breadth-first search per source device gives hop counts; then, vertices in order of hop
// count, each takes the best predecessor link: highest bottleneck, then lowest link id. Routes are
// recorded for every destination device and for the source's host.
void Cluster::compute_routes() {
  std::size_t nv = num_vertices(), nd = num_devices();
  auto const& links = parts_.links;
  struct Adjacent {
    LinkId link;
    std::uint32_t other;
    Direction direction;  // of travel from this vertex to `other`
  };
  std::vector<std::vector<Adjacent>> adjacent(nv);
  for (std::size_t i = 0; i < links.size(); ++i) {
    LinkId id(static_cast<LinkId::value_type>(i));
    adjacent[links[i].a.value()].push_back({id, links[i].b.value(), Direction::a_to_b});
    adjacent[links[i].b.value()].push_back({id, links[i].a.value(), Direction::b_to_a});
  }
  constexpr double inf = std::numeric_limits<double>::infinity();
  constexpr std::uint32_t unreached = std::numeric_limits<std::uint32_t>::max();
  std::vector<std::uint32_t> dist(nv), order;
  std::vector<double> bottleneck(nv);
  std::vector<Hop> into(nv);  // the hop by which the best route enters each vertex
  std::vector<Hop> path;
  routes_.assign(nd * nd, {});
  host_routes_.assign(nd, {});

  auto record = [&](std::uint32_t source, std::uint32_t target) {
    RouteEntry e;
    e.first = static_cast<std::uint32_t>(hops_.size());
    e.bottleneck = BytesPerSecond(bottleneck[target]);
    if (dist[target] == unreached) return RouteEntry{e.first, 0, BytesPerSecond(0), Seconds(0)};
    path.clear();
    for (std::uint32_t v = target; v != source;) {
      Hop h = into[v];
      path.push_back(h);
      Link const& l = links[h.link.value()];
      v = h.direction == Direction::a_to_b ? l.a.value() : l.b.value();
    }
    double latency = 0;
    for (auto it = path.rbegin(); it != path.rend(); ++it) {
      hops_.push_back(*it);
      latency += links[it->link.value()].latency.value();
    }
    e.count = static_cast<std::uint32_t>(path.size());
    e.latency = Seconds(latency);
    return e;
  };

  for (std::uint32_t s = 0; s < nd; ++s) {
    std::fill(dist.begin(), dist.end(), unreached);
    order.clear();
    dist[s] = 0;
    bottleneck[s] = inf;
    order.push_back(s);
    for (std::size_t head = 0; head < order.size(); ++head) {
      std::uint32_t u = order[head];
      for (Adjacent const& a : adjacent[u]) {
        if (dist[a.other] != unreached) continue;
        dist[a.other] = dist[u] + 1;
        order.push_back(a.other);
      }
    }
    for (std::size_t k = 1; k < order.size(); ++k) {
      std::uint32_t v = order[k];
      double best = -1;
      for (Adjacent const& a : adjacent[v]) {
        if (dist[a.other] + 1 != dist[v]) continue;
        double cand = std::min(bottleneck[a.other], links[a.link.value()].bandwidth.value());
        // Adjacency lists are in link-id order, so strict '>' keeps the lowest id on ties.
        if (cand > best) {
          best = cand;
          // Travel is from a.other to v: the opposite of the direction stored at v.
          into[v] = {a.link,
                     a.direction == Direction::a_to_b ? Direction::b_to_a : Direction::a_to_b};
        }
      }
      bottleneck[v] = best;
    }
    for (std::uint32_t t = 0; t < nd; ++t)
      routes_[std::size_t{s} * nd + t] = record(s, t);
    host_routes_[s] = record(s, host_vertex(parts_.devices[s].node).value());
  }
}

}  // namespace cleave::cluster
