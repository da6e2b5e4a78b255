// The critical-path baseline ParDNN is measured against (m-ETF, pardnn.h): a list schedule that
// chooses each unit's device as it goes.
#include <queue>

#include "search/pardnn/memory_step.h"
#include "search/pardnn/pardnn.h"

namespace cleave::search::pardnn {
namespace {

// Per unit, its compute time on each device.
double seconds_on(OpGraph const& graph, std::size_t unit, int d) {
  double s = 0;
  for (auto const& piece : graph.units[unit].pieces)
    s += graph.pieces[piece.op][piece.piece].seconds[static_cast<std::size_t>(d)];
  return s;
}

// Units by bottom level, each to the device where it finishes earliest (its inputs' transfers
// priced per link) among those where what the units hold stays within 90% of memory (as if
// all were live at once: UnitDag::holds); where none has room, the device with the most.
std::vector<int> earliest_finish(SearchContext const& ctx, OpGraph const& graph, UnitDag const& dag,
                                 Links const& links) {
  std::size_t const n = dag.size();
  int const k = links.devices();
  auto lv = levels(dag, links, std::vector<int>(n, -1));
  auto later = [&](std::uint32_t a, std::uint32_t b) {
    return lv.bottom[a] != lv.bottom[b] ? lv.bottom[a] < lv.bottom[b] : a > b;
  };
  std::priority_queue<std::uint32_t, std::vector<std::uint32_t>, decltype(later)> ready(later);
  std::vector<std::size_t> waiting(n);
  for (std::uint32_t u = 0; u < n; ++u)
    if ((waiting[u] = dag.pred_begin[u + 1] - dag.pred_begin[u]) == 0) ready.push(u);
  std::vector<double> memory, held(static_cast<std::size_t>(k), 0.0),
      free_at(static_cast<std::size_t>(k), 0.0), finish(n, 0.0);
  for (auto const& d : ctx.cluster().devices())
    memory.push_back(0.9 * static_cast<double>(d.memory.value()));
  std::vector<int> device(n, -1);
  while (!ready.empty()) {
    std::uint32_t u = ready.top();
    ready.pop();
    int best = -1;
    double best_end = 0;
    for (int d = 0; d < k; ++d) {
      auto i = static_cast<std::size_t>(d);
      if (held[i] + static_cast<double>(dag.holds[u]) > memory[i]) continue;
      double start = free_at[i];
      for (std::size_t e = dag.pred_begin[u]; e < dag.pred_begin[u + 1]; ++e) {
        auto const& p = dag.preds[e];
        start = std::max(start, finish[p.to] + links.seconds(p.bytes, device[p.to], d));
      }
      double end = start + seconds_on(graph, u, d);
      if (best < 0 || end < best_end) best = d, best_end = end;
    }
    if (best < 0) {
      best = 0;
      for (int d = 1; d < k; ++d)
        if (memory[static_cast<std::size_t>(d)] - held[static_cast<std::size_t>(d)] >
            memory[static_cast<std::size_t>(best)] - held[static_cast<std::size_t>(best)])
          best = d;
      best_end = free_at[static_cast<std::size_t>(best)] + seconds_on(graph, u, best);
    }
    auto b = static_cast<std::size_t>(best);
    device[u] = best;
    finish[u] = free_at[b] = best_end;
    held[b] += static_cast<double>(dag.holds[u]);
    for (std::size_t e = dag.succ_begin[u]; e < dag.succ_begin[u + 1]; ++e)
      if (--waiting[dag.succs[e].to] == 0) ready.push(dag.succs[e].to);
  }
  return device;
}

}  // namespace

Expected<plan::Plan> critical_path(SearchContext const& ctx) {
  CLEAVE_TRY(OpGraph graph, build_op_graph(ctx, {}));
  CLEAVE_CHECK_OK(units_fit_some_device(ctx, graph));
  UnitDag dag = build_unit_dag(ctx, graph);
  Links links(ctx.cost);
  auto device = earliest_finish(ctx, graph, dag, links);
  CLEAVE_TRY(Repaired repaired, fit_memory(ctx, graph, links, std::move(device)));
  repaired.plan.provenance.config = "units=" + std::to_string(dag.size()) + " cut_bytes=" +
                                    std::to_string(cut_bytes(graph, repaired.device)) +
                                    " memory_moves=" + std::to_string(repaired.moves);
  return std::move(repaired.plan);
}

}  // namespace cleave::search::pardnn
