#include "search/pardnn/memory_step.h"

#include "search/common/list_schedule.h"

namespace cleave::search::pardnn {

MoveCost transfer_cost(OpGraph const& graph, Links const& links) {
  return [&graph, &links](std::size_t unit, int to, std::vector<int> const& device) {
    int from = device[unit];
    double added = 0;
    for (auto [v, bytes] : graph.edges[unit])
      added += links.seconds(bytes, device[v], to) - links.seconds(bytes, device[v], from);
    return added;
  };
}

Expected<Repaired> fit_memory(SearchContext const& ctx, OpGraph const& graph, Links const& links,
                              std::vector<int> device) {
  RepairOptions options;
  // Each device's order memory-aware under what the repair lets it use, so that a device keeps
  // what its units need in a good order before units move off it.
  auto plan_of = [&](std::vector<int> const& d) -> Expected<plan::Plan> {
    return placement_plan(ctx, graph, d, usable_memory(ctx.cluster(), options.usable));
  };
  options = RepairOptions{transfer_cost(graph, links), 0.9, [&](std::vector<int> const& d) {
                            return memory_bound(graph, d, ctx.cluster().num_devices());
                          }};
  auto held_back = repair_memory(ctx, graph.units, device, plan_of, options);
  if (held_back || held_back.error().code() != ErrorCode::out_of_memory) return held_back;
  options.usable = 1.0;
  return repair_memory(ctx, graph.units, std::move(device), plan_of, options);
}

}  // namespace cleave::search::pardnn
