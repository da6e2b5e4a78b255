// Linear clustering, the other baseline ParDNN is measured against (pardnn.h): Kim and Browne's
// clusters (slicing.h), merged onto the devices by load, then the memory step of pardnn.
#include "search/pardnn/memory_step.h"
#include "search/pardnn/pardnn.h"
#include "search/pardnn/slicing.h"

namespace cleave::search::pardnn {
namespace {

// Kim and Browne assume as many processors as clusters; with K devices the clusters are merged:
// heaviest path first, each to the device with the least compute so far among those where what
// the units hold stays within 90% of memory (as if all were live at once: UnitDag::holds); where
// none has room, the device with the most.
std::vector<int> merge_by_load(SearchContext const& ctx, UnitDag const& dag,
                               Slicing const& slicing) {
  std::size_t const k = ctx.cluster().num_devices();
  auto const clusters = static_cast<std::size_t>(slicing.clusters);
  std::vector<double> seconds(clusters, 0.0), holds(clusters, 0.0);
  for (std::size_t u = 0; u < dag.size(); ++u) {
    auto c = static_cast<std::size_t>(slicing.cluster[u]);
    seconds[c] += dag.seconds[u];
    holds[c] += static_cast<double>(dag.holds[u]);
  }
  std::vector<double> memory, load(k, 0.0), held(k, 0.0);
  for (auto const& d : ctx.cluster().devices())
    memory.push_back(0.9 * static_cast<double>(d.memory.value()));
  std::vector<int> device_of(clusters, 0);
  for (std::size_t c = 0; c < clusters; ++c) {
    std::size_t best = k, roomiest = 0;
    for (std::size_t d = 0; d < k; ++d) {
      if (held[d] + holds[c] <= memory[d] && (best == k || load[d] < load[best])) best = d;
      if (memory[d] - held[d] > memory[roomiest] - held[roomiest]) roomiest = d;
    }
    if (best == k) best = roomiest;
    device_of[c] = static_cast<int>(best);
    load[best] += seconds[c];
    held[best] += holds[c];
  }
  std::vector<int> device(dag.size());
  for (std::size_t u = 0; u < dag.size(); ++u)
    device[u] = device_of[static_cast<std::size_t>(slicing.cluster[u])];
  return device;
}

}  // namespace

Expected<plan::Plan> linear_clustering(SearchContext const& ctx) {
  CLEAVE_TRY(OpGraph graph, build_op_graph(ctx, {}));
  CLEAVE_CHECK_OK(units_fit_some_device(ctx, graph));
  UnitDag dag = build_unit_dag(ctx, graph);
  Links links(ctx.cost);
  Slicing slicing = linear_clusters(dag, links);
  auto device = merge_by_load(ctx, dag, slicing);
  CLEAVE_TRY(Repaired repaired, fit_memory(ctx, graph, links, std::move(device)));
  repaired.plan.provenance.config =
      "units=" + std::to_string(dag.size()) + " clusters=" + std::to_string(slicing.clusters) +
      " cut_bytes=" + std::to_string(cut_bytes(graph, repaired.device)) +
      " memory_moves=" + std::to_string(repaired.moves);
  return std::move(repaired.plan);
}

}  // namespace cleave::search::pardnn
