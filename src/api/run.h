// Real training steps of a saved plan on this machine's CPU (what `cleave run` and Python's run()
// do): the plan's program executed by one worker per device with memory capped per device, on
// synthetic data, with the simulator's prediction beside it, the last step's measured timeline and
// an optional check against the unpartitioned graph (docs/runtime.md).
#pragma once

#include <cstdio>
#include <optional>
#include <string>

#include "api/plan_input.h"
#include "api/rebalance.h"
#include "report/plan_report.h"
#include "runtime/check.h"

namespace cleave::runtime {
class CommBackend;
}

namespace cleave::api {

struct RunRequest {
  int steps = 1;
  std::uint64_t seed = 0;  // of the synthetic data
  bool check = false;      // compare with the unpartitioned graph on one device
  // Kernels chosen by fixed rules, never by timing, so that the run's numbers repeat exactly
  // (runtime::KernelChoice); a check always runs so.
  bool deterministic = false;
  double tolerance = runtime::default_tolerance;
  std::string fail_op;                      // fault injection (tests): this op's tasks fail
  int threads_per_device = 0;               // OpenMP threads per worker; 0: max(1, cores / devices)
  std::string profile;                      // cleave.profile/1 table for the prediction
  runtime::CommBackend* backend = nullptr;  // null: the in-process backend
  std::string backend_name = "in-process backend";  // how the measured collectives ran
  std::FILE* progress = nullptr;  // a line "running: step 3 of 10" here when it is a terminal
  // Set: the scheduling assistant (rebalance.h) may switch plans mid-run; check_rebalance first.
  std::optional<RebalanceOptions> rebalance;
};

struct RunOutcome {
  runtime::TrainingRun run;    // with rebalancing: the steps of both plans, the last plan's values
  sim::Prediction prediction;  // of the plan the run ended on
  report::Timeline timeline;   // the last step's, measured
  lower::Program program;      // what ran last
  std::optional<runtime::CheckReport> check;  // of the last step
  std::optional<RebalancedRun> rebalance;     // its runs moved into `run`
};

// The kernels' choice for a request: deterministic under `check` or `deterministic`.
runtime::KernelChoice kernel_choice(RunRequest const& request);

// Errors: the plan does not evaluate, an unknown fail_op, a failed step, a failed reference run.
// A check that does not pass is not an error here (RunOutcome::check says so).
Expected<RunOutcome> run_plan(PlanInput const& input, RunRequest const& request,
                              ops::OpRegistry const& registry, std::string const& loss);

// "cleave.run/1": model, cluster, algorithm, seed, step times, the prediction, per device the
// measured time and peak memory beside the predicted peak, the loss, the check and what the
// scheduling assistant did.
std::string run_to_json(PlanInput const& input, RunRequest const& request,
                        RunOutcome const& outcome, std::string const& loss);

}  // namespace cleave::api
