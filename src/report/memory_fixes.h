// What would fix a device the plan overflows, with the bytes each fix saves there: each fix cleave
// can make to the plan is made and the changed plan evaluated again (sim::evaluate), so a figure
// is a prediction, not a guess. Fixes cleave cannot express in a plan are listed as not computed,
// with why (docs/report.md).
#pragma once

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
};

struct DeviceFixes {
  int device = 0;
  std::vector<MemoryFix> fixes;
};

struct FixContext {
  ir::Graph const& graph;
  ops::OpRegistry const& registry;
  plan::Plan const& plan;
  cost::CostModel const& cost;
  std::int64_t samples_per_step = 1;
  sim::Evaluation const& evaluation;  // of `plan`
};

// Per device the evaluation reports over capacity (its violations, in order).
std::vector<DeviceFixes> memory_fixes(FixContext const& ctx);

}  // namespace cleave::report
