// One plan's evaluation (STYLE.md #6): the plan is checked against the graph and the cluster,
// lowered, priced by the cost model and simulated; the result says how fast a step is, where each
// device's time goes, what each device holds over the step and at its peak, and which devices the
// plan overflows. Commands, reports and searches that price a whole plan call this one function.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "plan/plan.h"
#include "sim/memory_use.h"
#include "sim/predict.h"

namespace cleave::sim {

struct EvaluationContext {
  ir::Graph const& graph;  // the training graph the plan is for
  ops::OpRegistry const& registry;
  plan::Plan const& plan;
  cost::CostModel const& cost;  // on the cluster the plan is for (cost.cluster())
  std::int64_t samples_per_step = 1;
  std::size_t largest_blocks = 5;  // the live blocks listed per device at its peak
  // Per device unless the program is to be run (the runtime executes explicit transfers); the
  // predictions are the same either way (lower::CollectiveForm).
  lower::CollectiveForm collectives = lower::CollectiveForm::per_device;
};

// A device whose memory the step overflows: its peak passes its capacity, or a block it holds
// finds no free object in the device's pool (plan.h; then `over_bytes` is that block's size
// and both times when it was to be allocated).
struct Violation {
  int device = 0;
  std::int64_t over_bytes = 0;     // its peak less its capacity
  double first_over_s = 0;         // when it first holds more than its capacity
  double peak_s = 0;               // when it holds the most
  std::vector<LiveBlock> largest;  // the largest blocks live at the peak, largest first
};

struct DeviceEvaluation {
  std::string name;
  DeviceTime time;
  DeviceMemory memory;
  // How well the shape of the device's pool (the plan's) fit the step's blocks, up to the first
  // block that found no object if one did; none where the device has no pool.
  std::optional<memory::Fragmentation> pool;
};

struct Evaluation {
  lower::Program program;  // the lowered plan (what a trace shows and, lowered with explicit
                           // transfers, the runtime executes)
  Prediction prediction;   // step time, samples/s, traffic, peaks: the figures reports read
  std::vector<DeviceEvaluation> devices;
  std::vector<Violation> violations;  // one per device over capacity, in device order
};

// Errors: the plan does not fit the graph (plan::validate's errors) or the cluster (its number of
// devices).
Expected<Evaluation> evaluate(EvaluationContext const& ctx);

}  // namespace cleave::sim
