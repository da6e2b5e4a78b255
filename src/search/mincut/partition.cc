#include "search/mincut/partition.h"

#include <metis.h>

#include <algorithm>
#include <chrono>
#include <cmath>

namespace cleave::search::mincut {
namespace {

// METIS's integer weights: each constraint's total scaled to this, so that sums stay far below
// idx_t's 2^31 and rounding keeps three significant digits of a unit of 1e-4 of the total.
constexpr double weight_scale = 1e7;

// A part to cut the subgraph into: its share of the time and of the memory.
struct Target {
  double speed = 0;
  double memory = 0;
};

// The units of `members` cut into targets.size() parts, part index per member.
Expected<std::vector<int>> cut(OpGraph const& graph, std::vector<std::size_t> const& members,
                               std::vector<Target> const& targets,
                               PartitionSettings const& settings, std::uint64_t seed) {
  std::vector<int> part(members.size(), 0);
  if (targets.size() == 1 || members.empty()) return part;
  if (members.size() <= targets.size()) {  // too few for METIS: one each
    for (std::size_t i = 0; i < members.size(); ++i)
      part[i] = static_cast<int>(i);
    return part;
  }
  std::vector<idx_t> local(graph.units.size(), -1);
  for (std::size_t i = 0; i < members.size(); ++i)
    local[members[i]] = static_cast<idx_t>(i);
  double seconds = 0, bytes = 0, edge_bytes = 0;
  for (std::size_t u : members) {
    seconds += graph.units[u].seconds;
    bytes += static_cast<double>(graph.units[u].bytes);
    for (auto [v, w] : graph.edges[u])
      if (local[v] >= 0) edge_bytes += static_cast<double>(w);
  }
  idx_t ncon = 2;
  std::vector<idx_t> xadj{0}, adjncy, vwgt, adjwgt;
  auto scaled = [](double value, double total) {
    return total > 0 ? static_cast<idx_t>(std::llround(value / total * weight_scale)) : idx_t{1};
  };
  for (std::size_t u : members) {
    vwgt.push_back(scaled(graph.units[u].seconds, seconds));
    vwgt.push_back(scaled(static_cast<double>(graph.units[u].bytes), bytes));
    for (auto [v, w] : graph.edges[u]) {
      if (local[v] < 0) continue;
      adjncy.push_back(local[v]);
      adjwgt.push_back(std::max<idx_t>(1, scaled(static_cast<double>(w), edge_bytes)));
    }
    xadj.push_back(static_cast<idx_t>(adjncy.size()));
  }
  double speed_sum = 0, memory_sum = 0;
  for (auto const& t : targets) {
    speed_sum += t.speed;
    memory_sum += t.memory;
  }
  std::vector<real_t> tpwgts;
  for (auto const& t : targets) {
    tpwgts.push_back(static_cast<real_t>(t.speed / speed_sum));
    tpwgts.push_back(static_cast<real_t>(t.memory / memory_sum));
  }
  // Memory is balanced only as far as the devices' capacity asks: a part may hold up to its
  // devices' capacity. Balancing memory the graph does not need spreads weights away from the
  // ops that read them (a weight's update unit holds three copies of it).
  double capacity_over_demand = bytes > 0 ? memory_sum / bytes : 1.0;
  std::vector<real_t> ubvec{
      static_cast<real_t>(settings.time_tolerance),
      static_cast<real_t>(std::max(settings.memory_tolerance, capacity_over_demand))};
  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_SEED] = static_cast<idx_t>(seed & 0x7fffffff);
  options[METIS_OPTION_NUMBERING] = 0;
  idx_t n = static_cast<idx_t>(members.size());
  idx_t nparts = static_cast<idx_t>(targets.size());
  idx_t objval = 0;
  std::vector<idx_t> result(members.size());
  auto run = settings.recursive ? METIS_PartGraphRecursive : METIS_PartGraphKway;
  int status = run(&n, &ncon, xadj.data(), adjncy.data(), vwgt.data(), nullptr, adjwgt.data(),
                   &nparts, tpwgts.data(), ubvec.data(), options, &objval, result.data());
  if (status != METIS_OK)
    return Error(ErrorCode::execution_failed,
                 "METIS failed to partition " + std::to_string(members.size()) + " units into " +
                     std::to_string(targets.size()) + " parts (status " + std::to_string(status) +
                     (status == METIS_ERROR_MEMORY ? ": out of memory)" : ")"));
  for (std::size_t i = 0; i < members.size(); ++i)
    part[i] = static_cast<int>(result[i]);
  return part;
}

}  // namespace

Expected<Partition> partition(SearchContext const& ctx, OpGraph const& graph,
                              std::vector<double> const& speeds,
                              PartitionSettings const& settings) {
  auto const& cluster = ctx.cluster();
  auto t0 = std::chrono::steady_clock::now();
  Partition out;
  out.device.assign(graph.units.size(), 0);
  std::vector<std::vector<cluster::DeviceId>> groups;  // devices per node that has any
  for (std::size_t n = 0; n < cluster.nodes().size(); ++n) {
    auto const& devices = cluster.devices_of(cluster::NodeId(static_cast<std::uint32_t>(n)));
    if (!devices.empty()) groups.push_back(devices);
  }
  auto target_of = [&](cluster::DeviceId d) {
    return Target{speeds[d.value()], static_cast<double>(cluster.device(d).memory.value())};
  };
  std::vector<Target> node_targets;
  for (auto const& devices : groups) {
    Target t;
    for (auto d : devices) {
      t.speed += target_of(d).speed;
      t.memory += target_of(d).memory;
    }
    node_targets.push_back(t);
  }
  std::vector<std::size_t> all(graph.units.size());
  for (std::size_t u = 0; u < all.size(); ++u)
    all[u] = u;
  CLEAVE_TRY(auto node_of, cut(graph, all, node_targets, settings, ctx.seed));
  for (std::size_t n = 0; n < groups.size(); ++n) {
    std::vector<std::size_t> members;
    for (std::size_t u = 0; u < all.size(); ++u)
      if (node_of[u] == static_cast<int>(n)) members.push_back(u);
    std::vector<Target> targets;
    for (auto d : groups[n])
      targets.push_back(target_of(d));
    CLEAVE_TRY(auto part, cut(graph, members, targets, settings, ctx.seed + n + 1));
    for (std::size_t i = 0; i < members.size(); ++i)
      out.device[members[i]] =
          static_cast<int>(groups[n][static_cast<std::size_t>(part[i])].value());
  }
  out.metis_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (std::size_t u = 0; u < graph.units.size(); ++u)
    for (auto [v, w] : graph.edges[u])
      if (u < v && out.device[u] != out.device[v]) out.cut_bytes += w;
  return out;
}

}  // namespace cleave::search::mincut
