// Each device's pieces in the order a list schedule runs them (plan.h's per-device orders, which
// the simulator and the runtime follow): pieces are taken, whenever their inputs are done, by
// bottom level, the longest path (compute on the pieces' devices, transfers between devices)
// from the piece to the end of the step: the critical path first.
#pragma once

#include <vector>

#include "search/common/op_graph.h"

namespace cleave::search {

std::vector<std::vector<plan::PieceRef>> list_schedule(SearchContext const& ctx,
                                                       OpGraph const& graph,
                                                       std::vector<int> const& device_of_unit);

// The plan of a placement of the graph's units: every piece on its unit's device (fetched copies
// shared), the per-device orders by list_schedule, num_devices set.
plan::Plan placement_plan(SearchContext const& ctx, OpGraph const& graph,
                          std::vector<int> const& device_of_unit);

}  // namespace cleave::search
