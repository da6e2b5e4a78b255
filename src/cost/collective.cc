#include "cost/collective.h"

#include <algorithm>
#include <map>

#include "support/assert.h"

namespace cleave::cost {
namespace {

struct Edge {
  cluster::DeviceId from;
  cluster::DeviceId to;
};

// The time of one step in which every edge moves `chunk` bytes at once, with the edges that cross
// the same link direction sharing its bandwidth (plus the route's latency if `with_latency`); adds
// each edge's route to `load` (channel -> bytes per step).
double step_time(cluster::Cluster const& c, CollectiveOptions const& options,
                 std::vector<Edge> const& edges, double chunk, bool with_latency,
                 std::map<std::size_t, double>& load) {
  std::map<std::size_t, int> sharing;
  for (auto e : edges)
    for (auto const& hop : c.route(e.from, e.to).hops)
      ++sharing[hop.channel()];
  double worst = 0;
  for (auto e : edges) {
    auto route = c.route(e.from, e.to);
    double seconds = with_latency ? route.latency.value() : 0.0;
    double slowest = 0;
    for (auto const& hop : route.hops) {
      auto const& link = c.link(hop.link);
      double bw = link.bandwidth.value() * options.efficiency(link.kind) / sharing[hop.channel()];
      slowest = std::max(slowest, chunk / bw);
      load[hop.channel()] += chunk;
    }
    worst = std::max(worst, seconds + slowest);
  }
  return worst;
}

std::vector<std::pair<std::size_t, Bytes>> to_bytes(std::map<std::size_t, double> const& load,
                                                    double times) {
  std::vector<std::pair<std::size_t, Bytes>> out;
  for (auto [channel, bytes] : load)
    out.push_back({channel, Bytes(static_cast<std::int64_t>(bytes * times + 0.5))});
  return out;
}

// The rings a collective runs on. Inside one node, one ring in the group's order. Across nodes,
// as NCCL does with one NIC per GPU, one ring per member of a node: ring r visits each node's
// members (in the group's order) rotated by r, so each ring leaves every node through another
// GPU, hence another NIC, and the rings together use every NIC (with one ring, a 16-GPU
// all-reduce over two DGX H100s would run at one NIC's speed). Nodes with unequal member counts
// get one ring.
std::vector<std::vector<cluster::DeviceId>> rings_of(cluster::Cluster const& c,
                                                    std::span<cluster::DeviceId const> group) {
  std::vector<std::vector<cluster::DeviceId>> nodes;
  std::map<std::uint32_t, std::size_t> index;
  for (auto d : group) {
    auto [it, added] = index.emplace(c.device(d).node.value(), nodes.size());
    if (added) nodes.emplace_back();
    nodes[it->second].push_back(d);
  }
  std::size_t m = nodes[0].size();
  bool even = std::all_of(nodes.begin(), nodes.end(), [&](auto const& v) { return v.size() == m; });
  if (nodes.size() == 1 || !even) return {{group.begin(), group.end()}};
  std::vector<std::vector<cluster::DeviceId>> rings(m);
  for (std::size_t r = 0; r < m; ++r)
    for (auto const& members : nodes)
      for (std::size_t j = 0; j < m; ++j)
        rings[r].push_back(members[(r + j) % m]);
  return rings;
}

CollectiveCost ring(cluster::Cluster const& c, CollectiveOptions const& options,
                    CollectiveKind kind, Bytes bytes, std::span<cluster::DeviceId const> group) {
  std::size_t n = group.size();
  auto rings = rings_of(c, group);
  std::vector<Edge> edges;
  for (auto const& r : rings)
    for (std::size_t i = 0; i < n; ++i)
      edges.push_back({r[i], r[(i + 1) % n]});
  std::map<std::size_t, double> load;
  // Each ring carries its share of the buffer, in n chunks.
  double chunk = static_cast<double>(bytes.value()) / static_cast<double>(n * rings.size());
  double step = step_time(c, options, edges, chunk, /*with_latency=*/true, load);
  double steps = static_cast<double>(n - 1) * (kind == CollectiveKind::all_reduce ? 2 : 1);
  return {Seconds(step * steps), CollectiveAlgorithm::ring, to_bytes(load, steps)};
}

// A binary tree over the group in heap order (member i's parent is member (i-1)/2); the buffer is
// pipelined up the tree and back down, so its time is two traversals of the deepest path's
// latency plus twice the bytes over the slowest edge.
CollectiveCost tree(cluster::Cluster const& c, CollectiveOptions const& options, Bytes bytes,
                    std::span<cluster::DeviceId const> group) {
  std::size_t n = group.size();
  std::vector<Edge> up, down;
  for (std::size_t i = 1; i < n; ++i) {
    up.push_back({group[i], group[(i - 1) / 2]});
    down.push_back({group[(i - 1) / 2], group[i]});
  }
  int depth = 0;
  while ((std::size_t{1} << depth) < n + 1)
    ++depth;
  --depth;  // levels below the root
  double size = static_cast<double>(bytes.value());
  std::map<std::size_t, double> load;
  double max_latency = 0;
  for (auto e : up)
    max_latency = std::max(max_latency, c.route(e.from, e.to).latency.value());
  double seconds = 2 * depth * max_latency +
                   step_time(c, options, up, size, /*with_latency=*/false, load) +
                   step_time(c, options, down, size, /*with_latency=*/false, load);
  return {Seconds(seconds), CollectiveAlgorithm::tree, to_bytes(load, 1)};
}

}  // namespace

std::string_view collective_kind_name(CollectiveKind kind) {
  switch (kind) {
  case CollectiveKind::all_gather:
    return "all-gather";
  case CollectiveKind::reduce_scatter:
    return "reduce-scatter";
  case CollectiveKind::all_reduce:
    return "all-reduce";
  }
  return "?";
}

std::string_view collective_algorithm_name(CollectiveAlgorithm algorithm) {
  return algorithm == CollectiveAlgorithm::ring ? "ring" : "tree";
}

double CollectiveOptions::efficiency(cluster::LinkKind kind) const {
  switch (kind) {
  case cluster::LinkKind::nvlink:
  case cluster::LinkKind::nvswitch:
    return nvlink_efficiency;
  case cluster::LinkKind::infiniband:
    return infiniband_efficiency;
  default:
    return other_efficiency;
  }
}

CollectiveCost collective_cost(cluster::Cluster const& cluster, CollectiveKind kind, Bytes bytes,
                               std::span<cluster::DeviceId const> group,
                               CollectiveOptions const& options) {
  CLEAVE_ASSERT(!group.empty(), "a collective needs a group");
  if (group.size() == 1 || bytes.value() == 0) return {};
  CollectiveCost best = ring(cluster, options, kind, bytes, group);
  if (kind == CollectiveKind::all_reduce) {
    CollectiveCost t = tree(cluster, options, bytes, group);
    if (t.time.value() < best.time.value()) best = std::move(t);
  }
  return best;
}

BytesPerSecond bus_bandwidth(CollectiveKind kind, Bytes bytes, std::size_t members, Seconds time) {
  if (time.value() <= 0 || members < 2) return BytesPerSecond(0);
  double n = static_cast<double>(members);
  double factor = (n - 1) / n * (kind == CollectiveKind::all_reduce ? 2 : 1);
  return BytesPerSecond(static_cast<double>(bytes.value()) / time.value() * factor);
}

}  // namespace cleave::cost
