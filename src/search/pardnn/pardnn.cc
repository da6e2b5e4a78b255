#include "search/pardnn/pardnn.h"

#include <algorithm>

#include "search/pardnn/mapping.h"
#include "search/pardnn/memory_step.h"

namespace cleave::search::pardnn {

Expected<plan::Plan> pardnn(SearchContext const& ctx) {
  CLEAVE_TRY(OpGraph graph, build_op_graph(ctx, {}));
  CLEAVE_CHECK_OK(units_fit_some_device(ctx, graph));
  UnitDag dag = build_unit_dag(ctx, graph);
  Links links(ctx.cost);
  Slicing slicing = slice(dag, links, links.devices());
  auto device = map_clusters(ctx, graph, dag, links, slicing);
  CLEAVE_TRY(Repaired repaired, fit_memory(ctx, graph, links, std::move(device)));
  // The longest path of compute (all units in one cluster: no transfer): no whole-op plan's
  // step, without pipelining, is shorter.
  auto alone = levels(dag, links, std::vector<int>(dag.size(), 0));
  double longest = *std::max_element(alone.bottom.begin(), alone.bottom.end());
  repaired.plan.provenance.config =
      "units=" + std::to_string(dag.size()) + " critical_path_s=" + std::to_string(longest) +
      " primary=" + std::to_string(slicing.primaries) +
      " secondary=" + std::to_string(slicing.clusters - slicing.primaries) +
      " cut_bytes=" + std::to_string(cut_bytes(graph, repaired.device)) +
      " memory_moves=" + std::to_string(repaired.moves);
  return std::move(repaired.plan);
}

}  // namespace cleave::search::pardnn
