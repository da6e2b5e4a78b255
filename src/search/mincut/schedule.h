// Each device's pieces in the order a list schedule runs them (plan.h's per-device orders, which
// the simulator and the runtime follow): pieces are taken, whenever their inputs are done, by
// bottom level, the longest path (compute on the pieces' devices, transfers between devices)
// from the piece to the end of the step: the critical path first.
#pragma once

#include <vector>

#include "search/mincut/op_graph.h"

namespace cleave::search::mincut {

std::vector<std::vector<plan::PieceRef>> list_schedule(SearchContext const& ctx,
                                                       OpGraph const& graph,
                                                       std::vector<int> const& device_of_unit);

}  // namespace cleave::search::mincut
