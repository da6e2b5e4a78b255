// `cleave run PLAN`: real training steps of a saved plan on the in-process runtime (one worker
// thread per device of the plan's cluster, memory capped per device), on deterministic synthetic
// data; the measured step time, its breakdown per device, peak memory against the simulator's
// prediction, an optional measured trace and an optional check against the unpartitioned graph
// (docs/runtime.md). `--backend mpi` runs it over MPI instead (cmd_run_mpi.cc).
#include <cstdio>
#include <fmt/format.h>

#include "api/run.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "plan/plan_json.h"
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

std::string to_text(api::PlanInput const& in, RunCommand const& cmd, api::RunRequest const& request,
                    api::RunOutcome const& out) {
  auto const& last = out.run.steps.back();
  double mean = 0;
  for (auto const& s : out.run.steps)
    mean += s.step_s / static_cast<double>(out.run.steps.size());
  std::string text =
      fmt::format("model      {}\ncluster    {}\nplan       {} ({})\n", in.model.label,
                  in.plan.cluster, cmd.plan, in.plan.provenance.algorithm);
  text += fmt::format("backend    {}\n", request.backend_name);
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

}  // namespace

int finish_run(api::PlanInput const& input, RunCommand const& cmd, api::RunRequest const& request,
               api::RunOutcome const& out) {
  if (!cmd.trace.empty()) {
    auto st = write_file_atomic(
        cmd.trace, report::chrome_trace(input.model.training, out.program, out.timeline));
    if (!st) return report(st.error());
  }
  if (!cmd.save_plan.empty()) {
    auto st =
        plan::save_plan(out.rebalance ? out.rebalance->after.plan : input.plan, cmd.save_plan);
    if (!st) return report(st.error());
  }
  std::string text = cmd.json ? api::run_to_json(input, request, out, cmd.training.loss)
                              : to_text(input, cmd, request, out);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::vector<runtime::CheckReport const*> checks;
  if (out.rebalance && out.rebalance->before.check) checks.push_back(&*out.rebalance->before.check);
  if (out.check) checks.push_back(&*out.check);
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

api::RunRequest run_request(RunCommand const& cmd) {
  api::RunRequest request;
  request.steps = cmd.steps;
  request.seed = cmd.seed;
  request.check = cmd.check;
  request.deterministic = cmd.deterministic;
  request.tolerance = cmd.tolerance;
  request.fail_op = cmd.fail_op;
  request.threads_per_device = cmd.threads;
  request.profile = cmd.profile;
  request.progress = stderr;
  if (cmd.rebalance) request.rebalance = cmd.rebalance_options;
  return request;
}

int run_run(ops::OpRegistry const& registry, RunCommand const& cmd) {
  if (auto st = check_backend(cmd.backend); !st) return report(st.error());
  if (cmd.backend == "mpi" && cmd.rebalance)
    return report(
        Error(ErrorCode::unsupported, "--rebalance runs in one process: leave out --backend mpi"));
#ifdef CLEAVE_HAVE_MPI
  if (cmd.backend == "mpi") return run_run_mpi(registry, cmd);
#endif
  auto input = api::load_plan_input(cmd.plan, registry, cmd.training);
  if (!input) return report(input.error());
  auto request = run_request(cmd);
  auto out = api::run_plan(*input, request, registry, cmd.training.loss);
  if (!out) return report(out.error().with_context("in plan file '" + cmd.plan + "'"));
  return finish_run(*input, cmd, request, *out);
}

}  // namespace cleave::cli
