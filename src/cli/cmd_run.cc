// `cleave run PLAN`: real training steps of a saved plan on the in-process runtime (one worker
// thread per device of the plan's cluster, memory capped per device), on deterministic synthetic
// data; the measured step time, its breakdown per device, peak memory against the simulator's
// prediction, an optional measured trace and an optional check against the unpartitioned graph
// (docs/runtime.md).
#include <algorithm>
#include <cstdio>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "api/evaluate.h"
#include "api/plan_input.h"
#include "api/rebalance.h"
#include "cli/commands.h"
#include "plan/plan_json.h"
#include "report/plan_report.h"
#include "runtime/check.h"
#include "runtime/comm_backend.h"
#include "runtime/kernels/kernel.h"
#include "support/file_io.h"
#include "support/format_bytes.h"

namespace cleave::cli {
namespace {

// "1.25 ms", "830 us", "2.50 s".
std::string format_seconds(double s) {
  if (s >= 1) return fmt::format("{:.2f} s", s);
  if (s >= 1e-3) return fmt::format("{:.2f} ms", s * 1e3);
  return fmt::format("{:.0f} us", s * 1e6);
}

struct RunOutcome {
  runtime::TrainingRun run;    // with --rebalance: the steps of both plans, the last plan's values
  sim::Prediction prediction;  // of the plan the run ended on
  lower::Program program;      // of the plan the run ended on
  std::optional<runtime::CheckReport> check;    // of the last step
  std::optional<api::RebalancedRun> rebalance;  // its runs moved into `run`
};

// What the scheduling assistant saw, did, and what the steps took before and after.
std::string rebalance_text(api::RebalancedRun const& r, std::vector<std::string> const& names) {
  std::string text = fmt::format("rebalance  {}\n", r.decision);
  if (r.predicted_before_s && r.predicted_after_s)
    text +=
        fmt::format("           predicted with the measured times: {} -> {} a step\n",
                    format_seconds(*r.predicted_before_s), format_seconds(*r.predicted_after_s));
  for (auto const* phase : {&r.before, &r.after}) {
    int last = phase->last_step;
    text += fmt::format(
        "{:<10} steps {}-{} ({}{}): step time {} (median of steps {}-{}), "
        "imbalance {:.3f}",
        phase == &r.before ? "before" : "after", phase->first_step, last,
        phase->plan.provenance.algorithm, phase == &r.after && r.switched ? ", new plan" : "",
        format_seconds(phase->step_s), phase->first_step + 1, last, phase->imbalance);
    if (phase->check && phase == &r.before)
      text += fmt::format(", check {:.3g} {}", phase->check->max_relative_error,
                          phase->check->passed ? "passed" : "FAILED");
    text += "\n           compute:";
    for (std::size_t d = 0; d < phase->device_compute_s.size(); ++d)
      text += fmt::format(" {} {}", names[d], format_seconds(phase->device_compute_s[d]));
    text += "\n";
  }
  return text + "\n";
}

nlohmann::json rebalance_json(api::RebalancedRun const& r) {
  auto phase = [](api::PlanPhase const& p) {
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

std::string to_text(api::PlanInput const& in, RunCommand const& cmd, RunOutcome const& out) {
  auto const& last = out.run.steps.back();
  double mean = 0;
  for (auto const& s : out.run.steps)
    mean += s.step_s / static_cast<double>(out.run.steps.size());
  std::string text =
      fmt::format("model      {}\ncluster    {}\nplan       {} ({})\n", in.model.label,
                  in.plan.cluster, cmd.plan, in.plan.provenance.algorithm);
  text += fmt::format("steps      {} (synthetic data, seed {})\n", out.run.steps.size(), cmd.seed);
  if (out.rebalance) {
    std::vector<std::string> names;
    for (auto const& d : in.cluster.devices())
      names.push_back(d.name);
    text += rebalance_text(*out.rebalance, names);
  }
  text +=
      fmt::format("step time  {} (last step; mean {}; simulated {})\n", format_seconds(last.step_s),
                  format_seconds(mean), format_seconds(out.prediction.step_time_s));
  auto loss = out.run.last.find(cmd.training.loss);
  if (loss != out.run.last.end() && loss->second.size() == 1)
    text += fmt::format("loss       {:.6g}\n", loss->second[0]);
  text += fmt::format("\n{:<10} {:>10} {:>10} {:>10} {:>12} {:>12} {:>12} {:>8} {:>8}\n", "device",
                      "compute", "comm", "idle", "peak mem", "sim peak", "capacity", "kernels",
                      "interp");
  for (std::size_t d = 0; d < last.devices.size(); ++d) {
    auto const& s = last.devices[d];
    text += fmt::format("{:<10} {:>10} {:>10} {:>10} {:>12} {:>12} {:>12} {:>8} {:>8}\n",
                        in.cluster.devices()[d].name, format_seconds(s.compute_s),
                        format_seconds(s.comm_s), format_seconds(s.idle_s), format_bytes(s.peak),
                        format_bytes(Bytes(out.prediction.peak_memory_bytes[d])),
                        format_bytes(s.capacity), s.kernel_tasks, s.interpreted_tasks);
  }
  if (out.check) {
    auto const& c = *out.check;
    text += fmt::format("\ncheck      max relative error {:.3g} ({}) {} tolerance {:.3g}: {}\n",
                        c.max_relative_error, c.worst, c.passed ? "<=" : ">", c.tolerance,
                        c.passed ? "passed" : "FAILED");
  }
  if (!cmd.trace.empty()) text += fmt::format("\nwrote {}\n", cmd.trace);
  return text;
}

std::string to_json(api::PlanInput const& in, RunCommand const& cmd, RunOutcome const& out) {
  auto const& last = out.run.steps.back();
  auto steps = nlohmann::json::array();
  for (auto const& s : out.run.steps)
    steps.push_back(s.step_s);
  auto devices = nlohmann::json::array();
  for (std::size_t d = 0; d < last.devices.size(); ++d) {
    auto const& s = last.devices[d];
    devices.push_back({{"name", in.cluster.devices()[d].name},
                       {"compute_s", s.compute_s},
                       {"comm_s", s.comm_s},
                       {"idle_s", s.idle_s},
                       {"peak_memory_bytes", s.peak.value()},
                       {"predicted_peak_memory_bytes", out.prediction.peak_memory_bytes[d]},
                       {"memory_capacity_bytes", s.capacity.value()},
                       {"kernel_tasks", s.kernel_tasks},
                       {"interpreted_tasks", s.interpreted_tasks}});
  }
  nlohmann::json j{
      {"format", "cleave.run/1"},   {"model", in.model.label},
      {"cluster", in.plan.cluster}, {"algorithm", in.plan.provenance.algorithm},
      {"seed", cmd.seed},           {"step_time_s", last.step_s},
      {"step_times_s", steps},      {"predicted_step_time_s", out.prediction.step_time_s},
      {"devices", devices}};
  auto loss = out.run.last.find(cmd.training.loss);
  if (loss != out.run.last.end() && loss->second.size() == 1) j["loss"] = loss->second[0];
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

runtime::TrainingConfig training_config(RunCommand const& cmd, ir::Graph const& graph,
                                        runtime::KernelRegistry const& kernels,
                                        runtime::CommBackend& backend) {
  runtime::TrainingConfig config;
  config.steps = cmd.steps;
  config.seed = cmd.seed;
  config.exec.kernels = &kernels;
  config.exec.backend = &backend;
  config.exec.fail_op = cmd.fail_op;
  if (cmd.check) config.exec.capture = runtime::checked_tensors(graph, cmd.training.loss);
  return config;
}

// The plan's steps on one executor, and the check of the last one.
Expected<RunOutcome> run_plan(api::PlanInput const& in, cost::CostModel const& cost,
                              ops::OpRegistry const& registry, RunCommand const& cmd,
                              runtime::TrainingConfig const& config) {
  auto evaluation = api::evaluate(in.model, in.plan, cost, registry);
  if (!evaluation) return evaluation.error().with_context("in plan file '" + cmd.plan + "'");
  RunOutcome out;
  out.prediction = std::move(evaluation->prediction);
  out.program = evaluation->program;
  std::vector<runtime::DeviceInfo> devices;
  for (auto const& d : in.cluster.devices())
    devices.push_back({d.name, d.memory});
  CLEAVE_TRY(runtime::Executor executor,
             runtime::Executor::create(in.model.training, std::move(evaluation->program), registry,
                                       devices));
  auto run = runtime::run_training(executor, config);
  if (!run) return run.error().with_context("running plan '" + cmd.plan + "'");
  out.run = std::move(*run);
  if (cmd.check) {
    auto check = runtime::check_against_reference(in.model.training, registry, out.run, config,
                                                  cmd.training.loss, cmd.tolerance);
    if (!check) return check.error().with_context("checking against the reference");
    out.check = std::move(*check);
  }
  return out;
}

// --rebalance: the scheduling assistant's run (api/rebalance.h), its two plans' steps as one run.
Expected<RunOutcome> run_rebalanced(api::PlanInput const& in, cost::CostModel const& cost,
                                    ops::OpRegistry const& registry, RunCommand const& cmd,
                                    runtime::TrainingConfig const& config) {
  std::optional<double> tolerance;
  if (cmd.check) tolerance = cmd.tolerance;
  api::RebalanceRequest request{in.model,  in.plan,          cost,
                                registry,  config,           cmd.rebalance_options,
                                tolerance, cmd.training.loss};
  auto rebalanced = api::run_rebalanced(request);
  if (!rebalanced) return rebalanced.error().with_context("running plan '" + cmd.plan + "'");
  RunOutcome out;
  auto& after = rebalanced->after;
  out.run.steps = std::move(rebalanced->before.run.steps);
  for (auto& step : after.run.steps)
    out.run.steps.push_back(std::move(step));
  after.run.steps.clear();
  out.run.last = std::move(after.run.last);
  out.run.last_sources = std::move(after.run.last_sources);
  out.prediction = after.prediction;
  out.program = after.program;
  out.check = after.check;
  out.rebalance = std::move(*rebalanced);
  return out;
}

}  // namespace

int run_run(ops::OpRegistry const& registry, RunCommand const& cmd) {
  auto input = api::load_plan_input(cmd.plan, registry, cmd.training);
  if (!input) return report(input.error());
  auto const& model = input->model;
  if (!cmd.fail_op.empty()) {
    auto const& ops = model.training.ops();
    bool known = std::any_of(ops.begin(), ops.end(),
                             [&](ir::Op const& op) { return op.name == cmd.fail_op; });
    if (!known)
      return report(Error(ErrorCode::not_found,
                          "--fail-op: the model has no op named '" + cmd.fail_op + "'"));
  }
  if (cmd.rebalance) {
    auto st = api::check_rebalance(input->plan, input->cluster, cmd.steps, cmd.rebalance_options);
    if (!st) return report(std::move(st).error().with_context("in plan file '" + cmd.plan + "'"));
  }
  auto cost = api::load_cost_model(input->cluster, cmd.profile);
  if (!cost) return report(cost.error());
  auto kernels = runtime::KernelRegistry::with_builtins();
  runtime::InProcessBackend backend;
  auto config = training_config(cmd, model.training, *kernels, backend);
  auto out = cmd.rebalance ? run_rebalanced(*input, *cost, registry, cmd, config)
                           : run_plan(*input, *cost, registry, cmd, config);
  if (!out) return report(out.error());
  if (!cmd.trace.empty()) {
    auto timeline = report::measured_timeline(model.training, out->program,
                                              out->run.steps.back().spans, "in-process backend");
    auto st =
        write_file_atomic(cmd.trace, report::chrome_trace(model.training, out->program, timeline));
    if (!st) return report(st.error());
  }
  if (!cmd.save_plan.empty()) {
    auto st =
        plan::save_plan(out->rebalance ? out->rebalance->after.plan : input->plan, cmd.save_plan);
    if (!st) return report(st.error());
  }
  std::string text = cmd.json ? to_json(*input, cmd, *out) : to_text(*input, cmd, *out);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::vector<runtime::CheckReport const*> checks;
  if (out->rebalance && out->rebalance->before.check)
    checks.push_back(&*out->rebalance->before.check);
  if (out->check) checks.push_back(&*out->check);
  for (auto const* check : checks) {
    if (check->passed) continue;
    return report(Error(ErrorCode::execution_failed,
                        fmt::format("the partitioned run differs from the unpartitioned graph: "
                                    "max relative error {:.3g} in tensor '{}' exceeds the "
                                    "tolerance {:.3g}",
                                    check->max_relative_error, check->worst, check->tolerance)));
  }
  return 0;
}

}  // namespace cleave::cli
