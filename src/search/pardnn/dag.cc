#include "search/pardnn/dag.h"

#include <algorithm>
#include <tuple>

#include "support/assert.h"

namespace cleave::search::pardnn {
namespace {

cluster::DeviceId device_id(int d) {
  return cluster::DeviceId(static_cast<cluster::DeviceId::value_type>(d));
}

// Rows of `arcs` grouped by their first unit: begin offsets and the (second unit, bytes) arcs.
void rows(std::vector<std::tuple<std::uint32_t, std::uint32_t, std::int64_t>> const& arcs,
          std::size_t units, std::vector<std::size_t>& begin, std::vector<Arc>& out) {
  begin.assign(units + 1, 0);
  for (auto const& [from, to, bytes] : arcs)
    ++begin[from + 1];
  for (std::size_t u = 0; u < units; ++u)
    begin[u + 1] += begin[u];
  out.resize(arcs.size());
  std::vector<std::size_t> next(begin.begin(), begin.end() - 1);
  for (auto const& [from, to, bytes] : arcs)
    out[next[from]++] = {to, bytes};
}

}  // namespace

Links::Links(cost::CostModel const& cost)
    : devices_(static_cast<int>(cost.cluster().num_devices())) {
  // Alpha-beta is exact for the cost model's transfers: two sizes give both terms.
  constexpr std::int64_t probe = std::int64_t{1} << 30;
  auto n = static_cast<std::size_t>(devices_);
  latency_.assign(n * n, 0.0);
  per_byte_.assign(n * n, 0.0);
  for (int a = 0; a < devices_; ++a)
    for (int b = 0; b < devices_; ++b) {
      if (a == b) continue;
      auto i = static_cast<std::size_t>(a * devices_ + b);
      latency_[i] = cost.transfer(Bytes(0), device_id(a), device_id(b)).value();
      per_byte_[i] =
          (cost.transfer(Bytes(probe), device_id(a), device_id(b)).value() - latency_[i]) /
          static_cast<double>(probe);
      mean_latency_ += latency_[i];
      mean_per_byte_ += per_byte_[i];
    }
  if (devices_ > 1) {
    double pairs = static_cast<double>(devices_) * (devices_ - 1);
    mean_latency_ /= pairs;
    mean_per_byte_ /= pairs;
  }
}

UnitDag build_unit_dag(SearchContext const& ctx, OpGraph const& graph) {
  auto const& g = ctx.graph;
  UnitDag dag;
  std::size_t const n = graph.units.size();
  dag.seconds.resize(n);
  dag.holds.resize(n);
  for (std::size_t u = 0; u < n; ++u) {
    dag.seconds[u] = graph.units[u].seconds;
    dag.holds[u] = graph.units[u].bytes + graph.source_reads[u];
  }
  std::vector<std::tuple<std::uint32_t, std::uint32_t, std::int64_t>> arcs;
  for (auto const& op : g.ops()) {
    CLEAVE_ASSERT(graph.unit_of[op.id.value()].size() == 1, "ParDNN places whole ops");
    auto v = static_cast<std::uint32_t>(graph.unit_of[op.id.value()][0]);
    for (std::size_t i = 0; i < op.inputs.size(); ++i) {
      ir::OpId from = g.producer(op.inputs[i]);
      if (!from.valid()) continue;
      auto u = static_cast<std::uint32_t>(graph.unit_of[from.value()][0]);
      if (u != v) arcs.emplace_back(u, v, graph.pieces[op.id.value()][0].input_bytes[i]);
    }
  }
  std::sort(arcs.begin(), arcs.end());
  std::size_t kept = 0;  // parallel arcs summed
  for (std::size_t i = 0; i < arcs.size(); ++i) {
    if (kept > 0 && std::get<0>(arcs[kept - 1]) == std::get<0>(arcs[i]) &&
        std::get<1>(arcs[kept - 1]) == std::get<1>(arcs[i]))
      std::get<2>(arcs[kept - 1]) += std::get<2>(arcs[i]);
    else
      arcs[kept++] = arcs[i];
  }
  arcs.resize(kept);
  rows(arcs, n, dag.succ_begin, dag.succs);
  for (auto& [from, to, bytes] : arcs)
    std::swap(from, to);
  std::sort(arcs.begin(), arcs.end());
  rows(arcs, n, dag.pred_begin, dag.preds);

  std::vector<std::size_t> waiting(n);
  for (std::size_t u = 0; u < n; ++u)
    waiting[u] = dag.pred_begin[u + 1] - dag.pred_begin[u];
  for (std::size_t u = 0; u < n; ++u)
    if (waiting[u] == 0) dag.topo.push_back(static_cast<std::uint32_t>(u));
  for (std::size_t i = 0; i < dag.topo.size(); ++i) {
    std::uint32_t u = dag.topo[i];
    for (std::size_t e = dag.succ_begin[u]; e < dag.succ_begin[u + 1]; ++e)
      if (--waiting[dag.succs[e].to] == 0) dag.topo.push_back(dag.succs[e].to);
  }
  // A weight's updates read gradients and write only next step's values: no unit reads them, so
  // merging them keeps the graph acyclic.
  CLEAVE_ASSERT(dag.topo.size() == n, "the unit graph is acyclic");
  return dag;
}

Levels levels(UnitDag const& dag, Links const& links, std::vector<int> const& cluster,
              std::vector<std::uint32_t> const* unclustered) {
  std::size_t const n = dag.size();
  Levels out;
  out.top.assign(n, 0.0);
  out.bottom.assign(n, 0.0);
  auto comm = [&](std::uint32_t a, std::uint32_t b, std::int64_t bytes) {
    return cluster[a] >= 0 && cluster[a] == cluster[b] ? 0.0 : links.mean_seconds(bytes);
  };
  // Without `unclustered`, every unit and edge; with it, only the units left and their edges.
  auto const& order = unclustered ? *unclustered : dag.topo;
  auto gone = [&](std::uint32_t u) { return unclustered && cluster[u] >= 0; };
  for (std::uint32_t u : order)
    for (std::size_t e = dag.pred_begin[u]; e < dag.pred_begin[u + 1]; ++e) {
      auto const& p = dag.preds[e];
      if (gone(p.to)) continue;
      out.top[u] = std::max(out.top[u], out.top[p.to] + dag.seconds[p.to] + comm(p.to, u, p.bytes));
    }
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    std::uint32_t u = *it;
    double after = 0;
    for (std::size_t e = dag.succ_begin[u]; e < dag.succ_begin[u + 1]; ++e) {
      auto const& s = dag.succs[e];
      if (!gone(s.to)) after = std::max(after, comm(u, s.to, s.bytes) + out.bottom[s.to]);
    }
    out.bottom[u] = dag.seconds[u] + after;
  }
  return out;
}

}  // namespace cleave::search::pardnn
