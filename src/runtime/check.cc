#include "runtime/check.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "lower/program.h"
#include "plan/plan.h"
#include "runtime/comm_backend.h"
#include "runtime/synthetic_data.h"

namespace cleave::runtime {

Expected<TrainingRun> run_training(Executor const& executor, TrainingConfig const& config) {
  return run_training_from(executor, config, synthetic_sources(executor.graph(), config.seed));
}

void advance_state(ir::Graph const& graph, Values& sources, Values const& step_values) {
  for (auto const& u : state_updates(graph)) {
    auto it = step_values.find(graph.tensor(u.next).name);
    if (it != step_values.end()) sources[graph.tensor(u.state).name] = it->second;
  }
}

Values next_sources(ir::Graph const& graph, TrainingRun const& run) {
  Values sources = run.last_sources;
  advance_state(graph, sources, run.last);
  return sources;
}

Expected<TrainingRun> run_training_from(Executor const& executor, TrainingConfig const& config,
                                        Values sources) {
  if (config.steps < 1)
    return Error(ErrorCode::invalid_argument,
                 "--steps must be at least 1, not " + std::to_string(config.steps));
  ir::Graph const& graph = executor.graph();
  TrainingRun run;
  for (int s = 0; s < config.steps; ++s) {
    auto step = executor.run_step(sources, config.exec);
    if (!step) return std::move(step).error().with_context("in step " + std::to_string(s + 1));
    if (s + 1 == config.steps) {  // what the check re-runs: the last step, from its sources
      run.last = std::move(step->values);
      run.last_sources = std::move(sources);
    } else {
      advance_state(graph, sources, step->values);
    }
    step->values.clear();
    run.steps.push_back(std::move(*step));
    if (config.on_step) config.on_step(s + 1);
  }
  return run;
}

std::vector<ir::TensorId> checked_tensors(ir::Graph const& graph, std::string const& loss) {
  std::vector<bool> checked(graph.num_tensors(), false);
  for (auto const& t : graph.tensors())
    if (t.name == loss) checked[t.id.value()] = true;
  for (auto const& u : state_updates(graph)) {
    checked[u.next.value()] = true;
    for (ir::TensorId in : graph.op(u.update).inputs)
      if (graph.producer(in).valid() && graph.tensor(in).role == ir::TensorRole::gradient)
        checked[in.value()] = true;
  }
  std::vector<ir::TensorId> out;
  for (auto const& t : graph.tensors())
    if (checked[t.id.value()]) out.push_back(t.id);
  return out;
}

Expected<CheckReport> compare(ir::Graph const& graph, std::vector<ir::TensorId> const& tensors,
                              Values const& got, Values const& reference, double tolerance) {
  CheckReport report;
  report.tolerance = tolerance;
  for (ir::TensorId id : tensors) {
    std::string const& name = graph.tensor(id).name;
    auto a = got.find(name), r = reference.find(name);
    if (a == got.end() || r == reference.end())
      return Error(ErrorCode::execution_failed,
                   "tensor '" + name + "' is missing from the " +
                       (a == got.end() ? "partitioned run" : "reference run") +
                       " at the end of the step");
    TensorError e{name};
    for (std::size_t i = 0; i < r->second.size(); ++i) {
      double diff = std::abs(static_cast<double>(a->second[i]) - r->second[i]);
      if (std::isnan(diff)) diff = std::numeric_limits<double>::infinity();
      e.max_abs_error = std::max(e.max_abs_error, diff);
      e.max_abs_reference = std::max(e.max_abs_reference, std::abs(double{r->second[i]}));
    }
    e.relative_error = e.max_abs_error / std::max(e.max_abs_reference, relative_error_floor);
    if (report.worst.empty() || e.relative_error > report.max_relative_error) {
      report.max_relative_error = e.relative_error;
      report.worst = name;
    }
    report.tensors.push_back(std::move(e));
  }
  report.passed = report.max_relative_error <= tolerance;
  return report;
}

Expected<CheckReport> check_against_reference(ir::Graph const& graph,
                                              ops::OpRegistry const& registry,
                                              TrainingRun const& run, TrainingConfig config,
                                              std::string const& loss, double tolerance) {
  plan::Plan single = plan::single_device_plan(graph, registry);
  CLEAVE_TRY(lower::Program program, lower::lower(graph, single, registry));
  std::vector<DeviceInfo> one{{"reference", Bytes(std::numeric_limits<std::int64_t>::max())}};
  CLEAVE_TRY(Executor reference, Executor::create(graph, std::move(program), registry, one));
  auto tensors = checked_tensors(graph, loss);
  config.exec.capture = tensors;
  config.exec.fail_op.clear();
  InProcessBackend one_device;  // never called: a one-device program moves nothing
  config.exec.backend = &one_device;
  CLEAVE_TRY(StepResult ref, reference.run_step(run.last_sources, config.exec));
  return compare(graph, tensors, run.last, ref.values, tolerance);
}

}  // namespace cleave::runtime
