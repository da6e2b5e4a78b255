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

runtime::TrainingConfig training_config(RunRequest const& request, ir::Graph const& graph,
                                        runtime::KernelRegistry const& kernels,
                                        runtime::CommBackend& backend, std::string const& loss) {
  runtime::TrainingConfig config;
  config.steps = request.steps;
  config.seed = request.seed;
  config.exec.kernels = &kernels;
  config.exec.backend = &backend;
  config.exec.fail_op = request.fail_op;
  config.exec.threads_per_device = request.threads_per_device;
  if (request.check) config.exec.capture = runtime::checked_tensors(graph, loss);
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
  return config;
}

// The plan's steps on one executor, and the check of the last one.
Expected<RunOutcome> run_one_plan(PlanInput const& input, RunRequest const& request,
                                  cost::CostModel const& cost, ops::OpRegistry const& registry,
                                  runtime::TrainingConfig const& config, std::string const& loss) {
  auto const& [p, model, cluster] = input;
  CLEAVE_TRY(sim::Evaluation evaluation,
             evaluate(model, p, cost, registry, lower::CollectiveForm::explicit_transfers));
  RunOutcome out;
  out.prediction = std::move(evaluation.prediction);
  std::vector<runtime::DeviceInfo> devices;
  for (auto const& d : cluster.devices())
    devices.push_back(
        {d.name, d.memory, p.pools.empty() ? memory::Pool{} : p.pools[devices.size()]});
  CLEAVE_TRY(
      runtime::Executor executor,
      runtime::Executor::create(model.training, std::move(evaluation.program), registry, devices));
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
  return out;
}

// The scheduling assistant's run (rebalance.h), its two plans' steps as one run.
Expected<RunOutcome> run_rebalancing(PlanInput const& input, RunRequest const& request,
                                     cost::CostModel const& cost, ops::OpRegistry const& registry,
                                     runtime::TrainingConfig const& config,
                                     std::string const& loss) {
  std::optional<double> tolerance;
  if (request.check) tolerance = request.tolerance;
  RebalanceRequest rebalance{input.model, input.plan,         cost,      registry,
                             config,      *request.rebalance, tolerance, loss};
  CLEAVE_TRY(auto rebalanced, run_rebalanced(rebalance));
  RunOutcome out;
  auto& after = rebalanced.after;
  out.run.steps = std::move(rebalanced.before.run.steps);
  for (auto& step : after.run.steps)
    out.run.steps.push_back(std::move(step));
  after.run.steps.clear();
  out.run.last = std::move(after.run.last);
  out.run.last_sources = std::move(after.run.last_sources);
  out.prediction = after.prediction;
  out.program = after.program;
  out.check = after.check;
  out.rebalance = std::move(rebalanced);
  return out;
}

nlohmann::json rebalance_json(RebalancedRun const& r) {
  auto phase = [](PlanPhase const& p) {
    nlohmann::json j{{"first_step", p.first_step},
                     {"last_step", p.last_step},
                     {"algorithm", p.plan.provenance.algorithm},
                     {"step_time_s", p.step_s},
                     {"imbalance", p.imbalance},
                     {"device_compute_s", p.device_compute_s}};
    if (p.check) j["check_passed"] = p.check->passed;
    if (p.check) j["check_max_relative_error"] = p.check->max_relative_error;
    return j;
  };
  nlohmann::json j{{"threshold", r.threshold},
                   {"switched", r.switched},
                   {"decision", r.decision},
                   {"before", phase(r.before)},
                   {"after", phase(r.after)}};
  if (r.predicted_before_s) j["predicted_before_s"] = *r.predicted_before_s;
  if (r.predicted_after_s) j["predicted_after_s"] = *r.predicted_after_s;
  return j;
}

}  // namespace

runtime::KernelChoice kernel_choice(RunRequest const& request) {
  return request.check || request.deterministic ? runtime::KernelChoice::deterministic
                                                : runtime::KernelChoice::fastest;
}

Expected<RunOutcome> run_plan(PlanInput const& input, RunRequest const& request,
                              ops::OpRegistry const& registry, std::string const& loss) {
  auto const& model = input.model;
  CLEAVE_CHECK_OK(check_fail_op(model.training, request.fail_op));
  if (request.rebalance)
    CLEAVE_CHECK_OK(check_rebalance(input.plan, input.cluster, request.steps, *request.rebalance));
  CLEAVE_TRY(cost::CostModel cost, load_cost_model(input.cluster, request.profile));
  auto kernels = runtime::KernelRegistry::with_builtins(kernel_choice(request));
  runtime::InProcessBackend in_process;
  auto config = training_config(request, model.training, *kernels,
                                request.backend ? *request.backend : in_process, loss);
  CLEAVE_TRY(RunOutcome out, request.rebalance
                                 ? run_rebalancing(input, request, cost, registry, config, loss)
                                 : run_one_plan(input, request, cost, registry, config, loss));
  auto const& last = out.run.steps.back();
  out.timeline =
      report::measured_timeline(model.training, out.program, last.spans, request.backend_name);
  for (auto const& device : last.devices) {
    auto& points = out.timeline.memory.emplace_back();
    for (auto const& sample : device.memory)
      points.push_back({sample.time_s, sample.bytes});
  }
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
                   {"backend", request.backend_name},
                   {"seed", request.seed},
                   {"step_time_s", last.step_s},
                   {"step_times_s", steps},
                   {"predicted_step_time_s", out.prediction.step_time_s},
                   {"devices", devices}};
  auto value = out.run.last.find(loss);
  if (value != out.run.last.end() && value->second.size() == 1) j["loss"] = value->second[0];
  if (out.rebalance) j["rebalance"] = rebalance_json(*out.rebalance);
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
