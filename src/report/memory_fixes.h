// What would fix a device the plan overflows, with the bytes each fix saves there: each fix cleave
// can make to the plan is made and the changed plan evaluated again (sim::evaluate), so a figure
// is a prediction, not a guess. Recomputation, which a plan cannot express, is an estimate from
// the simulated memory and the cost model, marked as such; a fix without figures says why
// (docs/report.md).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "sim/evaluate.h"

namespace cleave::report {

struct MemoryFix {
  std::string name;       // "per-pass fetch", "another split of conv1", "swap", "recomputation"
  std::string change;     // what was changed in the plan, or why the fix was not computed
  bool computed = false;  // the changed plan was evaluated; the figures below are its
  std::int64_t saved_bytes = 0;  // the device's peak before less after (negative: it grows)
  std::int64_t peak_bytes = 0;   // the device's peak after
  bool device_fits = false;      // the device within its capacity after
  double step_time_s = 0;        // of the changed plan
  // The figures are an estimate, not an evaluation of a changed plan (recomputation).
  bool estimate = false;
};

struct DeviceFixes {
  int device = 0;
  std::vector<MemoryFix> fixes;
};

// A change to the plan made above this module (the swap planner is a search's, api/swap_fix.h):
// the changed plan and, per device over capacity, what was changed there or why nothing was.
struct PlanChange {
  plan::Plan plan;
  std::map<int, std::string> changed;
  std::map<int, std::string> unchanged;
};

// A plan and its evaluation, with what evaluated it.
struct EvaluatedPlan {
  ir::Graph const& graph;
  ops::OpRegistry const& registry;
  plan::Plan const& plan;
  cost::CostModel const& cost;
  std::int64_t samples_per_step = 1;
  sim::Evaluation const& evaluation;  // of `plan`
};

struct FixContext : EvaluatedPlan {
  // Swaps for the devices over capacity, given the memory of `evaluation` (required); an error
  // says why there are none.
  std::function<Expected<PlanChange>(sim::MemoryUse const&)> swap;
};

// Per device the evaluation reports over capacity (its violations, in order).
std::vector<DeviceFixes> memory_fixes(FixContext const& ctx);

// The blocks live on a device at its peak (the first time it holds the most), as indices into
// use.blocks: what a fix may move or drop.
std::vector<std::uint32_t> live_at_peak(sim::MemoryUse const& use, int device);

}  // namespace cleave::report
