// Swaps for any plan that overflows a device: SwapAdvisor's swap planner
// (search/swapadvisor/swap_planner.h: Belady's rule, copies back as early as memory allows) run on
// each over-capacity device's compute pieces in the order the simulator ran them (or the plan's
// order), asked to take the device's shortfall off the blocks it may move at the peak. The memory
// explanation's swap fix (report/memory_fixes.h) and `--swap` (api/add_swaps.h) both call it.
// Here because the planner is a search's and the report includes none (docs/architecture.md).
#pragma once

#include <array>

#include "report/memory_fixes.h"
#include "sim/memory_use.h"

namespace cleave::api {

// A plan and its evaluation: what the swap planner is run on.
using SwapInput = report::EvaluatedPlan;

// One over-capacity device's swaps, and the bytes at its peak (before them) a swap may and may
// not move.
struct DeviceSwaps {
  int device = 0;
  std::int64_t over_bytes = 0;     // its peak less its capacity
  std::int64_t movable_bytes = 0;  // live at the peak, of blocks a swap may move
  // Per sim::MemoryRole, live at the peak, of blocks no swap may move: read by another device, a
  // reduction or a swap, a partial result, or already swapped.
  std::array<std::int64_t, sim::memory_role_count> unmovable{};
  std::int64_t room = 0;  // what the planner holds the movable blocks to at every piece
  std::vector<plan::Swap> swaps;
  std::int64_t swapped_bytes = 0;
  std::string why_not;  // without swaps
};

struct DeviceSwapPlan {
  plan::Plan plan;                   // every device's order fixed, every device's swaps added
  bool simulated_order = true;       // the order is the simulator's (the plan had none)
  std::vector<DeviceSwaps> devices;  // per device the evaluation reports over capacity
};

// The plan with every device's order fixed (its own, or the simulated one) and, per device over
// capacity, the planner's swaps. Only blocks the device alone reads are swapped (plan.h's rule
// for swaps): the output of one of its pieces, or a block it holds before the step (a weight,
// optimizer state), that only its own pieces read. A device the swaps leave over asks the
// planner for less room by what it is still over, a few rounds. `use`: the memory of the
// evaluation (sim::memory_use).
DeviceSwapPlan plan_device_swaps(SwapInput const& input, sim::MemoryUse const& use);

// plan_device_swaps for the memory explanation: per device, what was swapped or why nothing was.
Expected<report::PlanChange> swap_fix(report::FixContext const& ctx, sim::MemoryUse const& use);

}  // namespace cleave::api
