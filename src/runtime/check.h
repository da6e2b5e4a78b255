// Training runs of several steps and the check that a partitioned run computes what the
// unpartitioned graph computes (`cleave run --check`, docs/runtime.md).
//
// The check runs the same synthetic steps with the same runtime on one device with the undivided
// plan (every op one piece) and compares, after the last step, the loss, every gradient an update
// reads and every updated weight and optimizer state. Per tensor:
//
//   relative error = max_i |a_i - r_i| / max(max_i |r_i|, 1e-3)
//
// with a the partitioned value and r the reference (a NaN difference counts as infinite). The
// floor keeps quantities that are mathematically zero but computed as fp32 rounding noise (the
// gradient of attention's key bias: softmax ignores a shift of every score in a row) from
// dividing noise by noise; below it the comparison is absolute. The run passes when the largest
// relative error is at most the tolerance (1e-4 for fp32 by default: partitioning reorders float
// sums, so results agree to rounding, not bit for bit).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "runtime/executor.h"

namespace cleave::runtime {

struct TrainingConfig {
  int steps = 1;
  std::uint64_t seed = 0;  // of the synthetic data
  ExecOptions exec;
  std::function<void(int done)> on_step = {};  // after each step (a progress display); may be empty
};

struct TrainingRun {
  std::vector<StepResult> steps;
  Values last;          // the last step's values
  Values last_sources;  // what the last step started from: inputs, weights, optimizer state
};

// Runs `config.steps` steps from the synthetic sources of `config.seed`; each step starts from
// the weights and optimizer state the previous one updated.
Expected<TrainingRun> run_training(Executor const& executor, TrainingConfig const& config);

// The same from `sources` (every source tensor's whole value by name): a run that goes on from
// where another stopped, on another executor (plan) too, since the state is held whole by name,
// not by placement (`cleave run --rebalance` switches plans between steps so).
Expected<TrainingRun> run_training_from(Executor const& executor, TrainingConfig const& config,
                                        Values sources);

// What the step after one that started from `sources` starts from: the weights and optimizer
// state it updated (`step_values`, the step's values) replace theirs; inputs stay.
void advance_state(ir::Graph const& graph, Values& sources, Values const& step_values);

// The sources of the step after the run's last one.
Values next_sources(ir::Graph const& graph, TrainingRun const& run);

constexpr double default_tolerance = 1e-4;
constexpr double relative_error_floor = 1e-3;

struct TensorError {
  std::string tensor;
  double max_abs_error = 0;
  double max_abs_reference = 0;
  double relative_error = 0;
};

struct CheckReport {
  std::vector<TensorError> tensors;  // every compared tensor, in graph order
  double max_relative_error = 0;
  std::string worst;  // the tensor with the largest relative error
  double tolerance = default_tolerance;
  bool passed = true;
};

// The tensors the check compares: the loss, the gradients updates read, the updated states.
std::vector<ir::TensorId> checked_tensors(ir::Graph const& graph, std::string const& loss);

// Compares `got` with `reference` on `tensors`; a tensor missing from either is an error.
Expected<CheckReport> compare(ir::Graph const& graph, std::vector<ir::TensorId> const& tensors,
                              Values const& got, Values const& reference, double tolerance);

// The reference: the graph's single-device undivided plan lowered and run on one device with
// unbounded memory for the partitioned run's last step, from the state that step started from
// (run.last_sources); then compare(). Starting from the same state keeps rounding differences
// of earlier steps from compounding: training on synthetic data is chaotic (the loss collapses
// within a few steps), and in ResNet-18 rounding differences of the first two steps became a 60%
// difference in a batch norm's gradient at step three, whichever plan ran, and even between two
// runs of the single-device reference (oneDNN picks conv kernels by timing them). A plan that
// computes wrongly still differs in its last step. config.exec.capture is set to the checked
// tensors. `run` is the partitioned run (with its capture set by this function's rules: call
// run_training with capture = checked_tensors).
Expected<CheckReport> check_against_reference(ir::Graph const& graph,
                                              ops::OpRegistry const& registry,
                                              TrainingRun const& run, TrainingConfig config,
                                              std::string const& loss, double tolerance);

}  // namespace cleave::runtime
