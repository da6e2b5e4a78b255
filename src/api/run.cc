#include "api/run.h"

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "api/evaluate.h"
#include "runtime/comm_backend.h"
#include "runtime/kernels/kernel.h"
#include "support/progress_line.h"

namespace cleave::api {

namespace {

Status check_fail_op(ir::Graph const& graph, std::string const& fail_op) {
  if (fail_op.empty()) return {};
  auto const& ops = graph.ops();
  bool known =
      std::any_of(ops.begin(), ops.end(), [&](ir::Op const& op) { return op.name == fail_op; });
  if (!known)
    return Error(ErrorCode::not_found, "--fail-op: the model has no op named '" + fail_op + "'");
  return {};
}

}  // namespace

Expected<RunOutcome> run_plan(PlanInput const& input, RunRequest const& request,
                              ops::OpRegistry const& registry, std::string const& loss) {
  auto const& [p, model, cluster] = input;
  CLEAVE_CHECK_OK(check_fail_op(model.training, request.fail_op));
  CLEAVE_TRY(cost::CostModel cost, load_cost_model(cluster, request.profile));
  CLEAVE_TRY(sim::Evaluation evaluation, evaluate(model, p, cost, registry));
  RunOutcome out;
  out.prediction = std::move(evaluation.prediction);
  std::vector<runtime::DeviceInfo> devices;
  for (auto const& d : cluster.devices())
    devices.push_back(
        {d.name, d.memory, p.pools.empty() ? memory::Pool{} : p.pools[devices.size()]});
  CLEAVE_TRY(
      runtime::Executor executor,
      runtime::Executor::create(model.training, std::move(evaluation.program), registry, devices));
  auto kernels = runtime::KernelRegistry::with_builtins();
  runtime::TrainingConfig config;
  config.steps = request.steps;
  config.seed = request.seed;
  config.exec.kernels = kernels.get();
  runtime::InProcessBackend in_process;
  config.exec.backend = request.backend ? request.backend : &in_process;
  config.exec.fail_op = request.fail_op;
  if (request.check) config.exec.capture = runtime::checked_tensors(model.training, loss);
  if (auto line = request.progress ? ProgressLine::on_terminal(request.progress) : nullptr) {
    auto start = std::chrono::steady_clock::now();
    config.on_step = [line, start, steps = request.steps](int done) {
      if (done == steps) return line->clear();
      Seconds elapsed(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      line->show(elapsed, "running: step " + std::to_string(done) + " of " + std::to_string(steps) +
                              " done");
    };
  }
  auto run = runtime::run_training(executor, config);
  if (!run) return std::move(run).error().with_context("running the plan");
  out.run = std::move(*run);
  if (request.check) {
    auto check = runtime::check_against_reference(model.training, registry, out.run, config, loss,
                                                  request.tolerance);
    if (!check) return std::move(check).error().with_context("checking against the reference");
    out.check = std::move(*check);
  }
  out.program = executor.program();
  out.timeline = report::measured_timeline(model.training, out.program, out.run.steps.back().spans,
                                           request.backend_name);
  return out;
}

std::string run_to_json(PlanInput const& input, RunRequest const& request, RunOutcome const& out,
                        std::string const& loss) {
  auto const& last = out.run.steps.back();
  auto steps = nlohmann::json::array();
  for (auto const& s : out.run.steps)
    steps.push_back(s.step_s);
  auto devices = nlohmann::json::array();
  for (std::size_t d = 0; d < last.devices.size(); ++d) {
    auto const& s = last.devices[d];
    devices.push_back({{"name", input.cluster.devices()[d].name},
                       {"compute_s", s.compute_s},
                       {"comm_s", s.comm_s},
                       {"idle_s", s.idle_s},
                       {"peak_memory_bytes", s.peak.value()},
                       {"predicted_peak_memory_bytes", out.prediction.peak_memory_bytes[d]},
                       {"memory_capacity_bytes", s.capacity.value()},
                       {"kernel_tasks", s.kernel_tasks},
                       {"interpreted_tasks", s.interpreted_tasks}});
  }
  nlohmann::json j{{"format", "cleave.run/1"},
                   {"model", input.model.label},
                   {"cluster", input.plan.cluster},
                   {"algorithm", input.plan.provenance.algorithm},
                   {"seed", request.seed},
                   {"step_time_s", last.step_s},
                   {"step_times_s", steps},
                   {"predicted_step_time_s", out.prediction.step_time_s},
                   {"devices", devices}};
  auto value = out.run.last.find(loss);
  if (value != out.run.last.end() && value->second.size() == 1) j["loss"] = value->second[0];
  if (out.check) {
    auto tensors = nlohmann::json::array();
    for (auto const& t : out.check->tensors)
      tensors.push_back({{"tensor", t.tensor},
                         {"max_abs_error", t.max_abs_error},
                         {"max_abs_reference", t.max_abs_reference},
                         {"relative_error", t.relative_error}});
    j["check"] = {{"tolerance", out.check->tolerance},
                  {"max_relative_error", out.check->max_relative_error},
                  {"worst", out.check->worst},
                  {"passed", out.check->passed},
                  {"tensors", tensors}};
  }
  return j.dump(2) + "\n";
}

}  // namespace cleave::api
