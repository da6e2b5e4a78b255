// The swap fix of the memory explanation (report/memory_fixes.h): SwapAdvisor's swap planner
// (search/swapadvisor/swap_planner.h: Belady's rule, copies back as early as memory allows) run on
// each over-capacity device's compute pieces in the order the simulator ran them (or the plan's
// order), asked to take the device's shortfall off the blocks it may move at the peak. Here
// because the planner is a search's and the report includes none (docs/architecture.md).
#pragma once

#include "report/memory_fixes.h"

namespace cleave::api {

// The plan with every device's order fixed (its own, or the simulated one) and, per device over
// capacity, the planner's swaps; per device, what was swapped or why nothing was. Only blocks the
// device alone reads are swapped (plan.h's rule for swaps): the output of one of its pieces that
// only its own pieces read. `use`: the memory of ctx.evaluation (sim::memory_use).
Expected<report::PlanChange> swap_fix(report::FixContext const& ctx, sim::MemoryUse const& use);

}  // namespace cleave::api
