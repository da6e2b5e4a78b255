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
#include "cli/commands.h"
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
  runtime::TrainingRun run;
  sim::Prediction prediction;
  std::optional<runtime::CheckReport> check;
};

std::string to_text(api::PlanInput const& in, RunCommand const& cmd, RunOutcome const& out) {
  auto const& last = out.run.steps.back();
  double mean = 0;
  for (auto const& s : out.run.steps)
    mean += s.step_s / static_cast<double>(out.run.steps.size());
  std::string text =
      fmt::format("model      {}\ncluster    {}\nplan       {} ({})\n", in.model.label,
                  in.plan.cluster, cmd.plan, in.plan.provenance.algorithm);
  text += fmt::format("steps      {} (synthetic data, seed {})\n", out.run.steps.size(), cmd.seed);
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

}  // namespace

int run_run(ops::OpRegistry const& registry, RunCommand const& cmd) {
  auto input = api::load_plan_input(cmd.plan, registry, cmd.training);
  if (!input) return report(input.error());
  auto const& [p, model, cluster] = *input;
  if (!cmd.fail_op.empty()) {
    auto const& ops = model.training.ops();
    bool known = std::any_of(ops.begin(), ops.end(),
                             [&](ir::Op const& op) { return op.name == cmd.fail_op; });
    if (!known)
      return report(Error(ErrorCode::not_found,
                          "--fail-op: the model has no op named '" + cmd.fail_op + "'"));
  }
  auto cost = api::load_cost_model(cluster, cmd.profile);
  if (!cost) return report(cost.error());
  auto evaluation = api::evaluate(model, p, *cost, registry);
  if (!evaluation)
    return report(evaluation.error().with_context("in plan file '" + cmd.plan + "'"));
  RunOutcome out;
  out.prediction = std::move(evaluation->prediction);
  std::vector<runtime::DeviceInfo> devices;
  for (auto const& d : cluster.devices())
    devices.push_back(
        {d.name, d.memory, p.pools.empty() ? memory::Pool{} : p.pools[devices.size()]});
  auto executor =
      runtime::Executor::create(model.training, std::move(evaluation->program), registry, devices);
  if (!executor) return report(executor.error());
  auto kernels = runtime::KernelRegistry::with_builtins();
  runtime::TrainingConfig config;
  config.steps = cmd.steps;
  config.seed = cmd.seed;
  config.exec.kernels = kernels.get();
  runtime::InProcessBackend backend;
  config.exec.backend = &backend;
  config.exec.fail_op = cmd.fail_op;
  if (cmd.check) config.exec.capture = runtime::checked_tensors(model.training, cmd.training.loss);
  auto run = runtime::run_training(*executor, config);
  if (!run) return report(run.error().with_context("running plan '" + cmd.plan + "'"));
  out.run = std::move(*run);
  if (cmd.check) {
    auto check = runtime::check_against_reference(model.training, registry, out.run, config,
                                                  cmd.training.loss, cmd.tolerance);
    if (!check) return report(check.error().with_context("checking against the reference"));
    out.check = std::move(*check);
  }
  if (!cmd.trace.empty()) {
    auto timeline = report::measured_timeline(model.training, executor->program(),
                                              out.run.steps.back().spans, "in-process backend");
    auto st = write_file_atomic(
        cmd.trace, report::chrome_trace(model.training, executor->program(), timeline));
    if (!st) return report(st.error());
  }
  std::string text = cmd.json ? to_json(*input, cmd, out) : to_text(*input, cmd, out);
  std::fwrite(text.data(), 1, text.size(), stdout);
  if (out.check && !out.check->passed)
    return report(
        Error(ErrorCode::execution_failed,
              fmt::format("the partitioned run differs from the unpartitioned graph: "
                          "max relative error {:.3g} in tensor '{}' exceeds the "
                          "tolerance {:.3g}",
                          out.check->max_relative_error, out.check->worst, out.check->tolerance)));
  return 0;
}

}  // namespace cleave::cli
