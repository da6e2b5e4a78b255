// Delta simulation (DESIGN.md "Cost model and simulator", issue 4): after one op's configuration
// changes, re-lower only the parts the change touches (lower::Lowering), re-price only the tasks
// and collectives that are new, and re-run the event loop only from the point where the old run
// could first differ; the prediction is bit for bit what lower() + predict() of the changed plan
// give. docs/cost_model.md explains why the restart point is safe.
#pragma once

#include <memory>
#include <optional>
#include <utility>

#include "lower/lowering.h"
#include "sim/predict.h"

namespace cleave::sim {

class DeltaSimulator {
 public:
  // Lowers and simulates the plan in full once.
  static Expected<DeltaSimulator> create(ir::Graph const& graph, plan::Plan plan,
                                         ops::OpRegistry const& registry,
                                         cost::CostModel const& cost,
                                         std::int64_t samples_per_step);

  // Gives `op` a new configuration and returns the new prediction. On error (an invalid
  // configuration) nothing changes.
  Expected<Prediction> apply(ir::OpId op, plan::OpConfig config);

  // As apply(), but gives up once the new step time is sure to exceed `step_above`
  // (run_event_loop's stop_above: a lower bound from the part of the run done passes it), and
  // returns the prediction kept here rather than a copy: nullptr when it gave up, and then undo()
  // must come before anything else (the new prediction is not known). The bound is summed in
  // floating point, so a step within rounding of `step_above` may give up: callers leave a margin
  // (MCMC prices proposals so, `step_above` being its acceptance test's sure rejection, raised by
  // a relative 1e-9).
  Expected<Prediction const*> apply_unless_above(ir::OpId op, plan::OpConfig config,
                                                 double step_above);

  // Restores the state before the last apply() without simulating again: the lowering swaps its
  // replaced parts back and reassembles, the timings move back to their old tasks (those of the
  // changed tasks were kept aside), and the task index, run and prediction come back from the
  // copies apply() kept (after an apply that gave up, the run and prediction are still the old
  // ones). Once per apply(); undoing twice, or before any, is a bug.
  void undo();

  Prediction const& prediction() const { return prediction_; }
  lower::Program const& program() const { return lowering_.program(); }
  plan::Plan const& plan() const { return lowering_.plan(); }

  // What the last apply() redid.
  struct Work {
    std::size_t tasks = 0;           // tasks in the new program
    std::size_t tasks_priced = 0;    // tasks and collectives priced anew
    std::size_t nodes = 0;           // nodes the event loop took
    std::size_t nodes_replayed = 0;  // of which replayed from the old run's prefix
  };
  Work const& last_work() const { return work_; }

  DeltaSimulator(DeltaSimulator&&) noexcept;
  DeltaSimulator& operator=(DeltaSimulator&&) noexcept;
  ~DeltaSimulator();

 private:
  // The lists a step fills per task, kept from one apply() to the next for their allocations
  // (allocating and faulting in a few MB per step cost more than filling them).
  struct Scratch;

  DeltaSimulator(ir::Graph const& graph, lower::Lowering lowering, cost::CostModel const& cost,
                 std::int64_t samples_per_step);
  void simulate_all();
  // The steps of apply(), in order (delta.cc says what each does).
  void map_tasks();
  void update_index();
  std::vector<cost::CollectiveCost> reprice_collectives();
  double restart_time();
  TaskSpan old_span(NodeId v) const;
  bool surely_above(Checkpoint const* from, double step_above) const;
  bool rerun_from(double at, std::vector<cost::CollectiveCost> costs, double step_above);

  ir::Graph const* graph_;
  lower::Lowering lowering_;
  cost::CostModel const* cost_;
  std::int64_t samples_;
  std::vector<Resource> resources_;
  std::vector<cost::CollectiveCost> costs_;
  Timings timings_;
  TaskIndex index_;
  Run run_;  // the last run (its result moved into prediction_)
  Prediction prediction_;
  Work work_;
  std::unique_ptr<Scratch> scratch_;
  // The state before the last apply(), for undo().
  struct Kept {
    bool valid = false;
    bool gave_up = false;  // the last apply stopped its run: run_ and prediction_ are the old ones
    std::vector<cost::CollectiveCost> costs;
    // Per old task, the new task that kept its timing (map_tasks), and the old timings that none
    // kept, by old task; the old collectives' timings.
    std::vector<std::optional<lower::TaskId>> timing_kept_by;
    std::vector<std::pair<lower::TaskId, TaskTiming>> dropped_timings;
    std::vector<TaskTiming> collective_timings;
    TaskIndex index;
    Run run;
    Prediction prediction;
    Work work;
  };
  Kept kept_;
};

}  // namespace cleave::sim
