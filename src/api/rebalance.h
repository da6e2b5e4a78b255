// The run-time scheduling assistant (issue 17 item 2; ../shared/PAPERS.md §5, whose "hardware
// scheduling assistants" fine-tune the distribution of work while training runs; docs/runtime.md
// "Rebalancing"): a plan runs its first steps while the runtime measures every piece; when the
// devices' measured compute times are more unbalanced than a threshold, the plan's algorithm
// partitions again with a cost model whose profile holds the measured times, and the run goes on
// with the new plan from the state the old one left (the state is held whole by tensor name, so
// weights and optimizer state carry over whatever the placement).
//
// It lives in api because it joins the runtime (measuring, running) and search (partitioning),
// which never include each other (DESIGN.md); `cleave run --rebalance` and the Python module call
// run_rebalanced.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/model_input.h"
#include "cost/cost_model.h"
#include "plan/plan.h"
#include "runtime/check.h"
#include "sim/predict.h"

namespace cleave::api {

struct RebalanceOptions {
  // Steps of the first plan whose piece times are measured, after its one warm-up step.
  int measure_steps = 3;
  // The busiest device's measured compute time over the devices' mean above which the plan is
  // partitioned again (1: perfectly balanced).
  double threshold = 1.10;
};

// The algorithms whose plans follow the op times they are given, which rebalancing re-runs.
std::vector<std::string> const& rebalancing_algorithms();

// Whether `plan` on `cluster` can be rebalanced over a run of `steps` steps with `options`: its
// algorithm is one of rebalancing_algorithms(), the cluster has one device kind (the runtime runs
// every device on this machine's cores, so one kind's measurements are all it learns), the
// threshold is at least 1 and finite, and the run has a warm-up step, the measured steps and at
// least a warm-up and a measured step after the switch. Errors say what to change.
Status check_rebalance(plan::Plan const& plan, cluster::Cluster const& cluster, int steps,
                       RebalanceOptions const& options);

struct RebalanceRequest {
  ModelInput const& model;
  plan::Plan const& plan;
  cost::CostModel const& cost;  // what the plan was made with; measured times override its profile
  ops::OpRegistry const& registry;
  // The whole run: its steps, the synthetic data's seed, the kernels and the backend.
  runtime::TrainingConfig training;
  RebalanceOptions options;
  // Set: each plan's last step is checked against the unpartitioned graph (runtime/check.h).
  std::optional<double> check_tolerance;
  std::string loss = "loss";
};

// Consecutive steps on one plan.
struct PlanPhase {
  plan::Plan plan;
  lower::Program program;
  sim::Prediction prediction;  // by the cost model the plan was chosen with
  runtime::TrainingRun run;
  int first_step = 1;  // of the whole run, from 1; its first step is a warm-up, not counted
  int last_step = 1;
  double step_s = 0;                     // median of the counted steps
  std::vector<double> device_compute_s;  // per device, mean over the counted steps
  double imbalance = 1;                  // the largest of device_compute_s over their mean
  std::optional<runtime::CheckReport> check;
};

struct RebalancedRun {
  PlanPhase before;  // the given plan's warm-up and measured steps
  PlanPhase after;   // the rest: on the new plan if switched, else on the given one
  bool switched = false;
  std::string decision;  // one line: the measured imbalance against the threshold, what was done
  double threshold = 0;
  // Both plans priced with the measured profile (after: the re-partitioned plan, switched or not);
  // absent where the imbalance stayed under the threshold.
  std::optional<double> predicted_before_s;
  std::optional<double> predicted_after_s;
  cost::ProfileTable measured;  // the given profile with the measured pieces' times
};

Expected<RebalancedRun> run_rebalanced(RebalanceRequest const& request);

}  // namespace cleave::api
