// `cleave calibrate`: measures this machine's CPU cores as cleave devices (runtime/calibrate.h)
// and writes a cleave.profile/1 table: the machine's rates become the calibrated `cpu` cluster
// spec to plan with, and the runtime's measured steps of a workload (the given plans, or
// data-parallel plans of built-in models) give exact entries per piece and per-op-type
// efficiencies.
#include <ctime>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "api/plan_input.h"
#include "autodiff/training_graph.h"
#include "cli/commands.h"
#include "cli/measure.h"
#include "cluster/presets.h"
#include "lower/program.h"
#include "runtime/calibrate.h"
#include "search/search.h"
#include "support/file_io.h"

namespace cleave::cli {
namespace {

// What calibrate runs when no plan is given: small members of three families (dense, attention,
// convolution), each step a fraction of a second on one core.
std::vector<std::string> const& default_workload() {
  static std::vector<std::string> const models = {
      "mlp:layers=4,hidden=512,input=512,classes=64,batch=64",
      "gpt:layers=2,hidden=256,heads=4,seq=64,batch=8,vocab=512",
      "resnet:depth=18,image=32,batch=4,classes=10",
  };
  return models;
}

struct Workload {
  std::string label;
  ir::Graph graph;
  plan::Plan plan;
};

// The plans given, checked against the cluster before anything is measured.
Expected<std::vector<Workload>> given_plans(ops::OpRegistry const& registry,
                                            CalibrateCommand const& cmd,
                                            cluster::Cluster const& cluster) {
  std::vector<Workload> out;
  for (auto const& path : cmd.plans) {
    CLEAVE_TRY(api::PlanInput in, api::load_plan_input(path, registry, cmd.training));
    if (in.plan.num_devices != static_cast<int>(cluster.num_devices()))
      return Error(ErrorCode::invalid_argument,
                   fmt::format("plan '{}' is for {} devices but --cluster {} has {}; plan for "
                               "the cluster being calibrated",
                               path, in.plan.num_devices, cmd.cluster, cluster.num_devices()));
    out.push_back({path, std::move(in.model.training), std::move(in.plan)});
  }
  return out;
}

// Without --plan: data-parallel plans of the default workload on the calibrated cluster.
Expected<std::vector<Workload>> default_plans(ops::OpRegistry const& registry,
                                              CalibrateCommand const& cmd, std::string const& spec,
                                              cluster::Cluster const& cluster) {
  std::vector<Workload> out;
  for (auto const& model : default_workload()) {
    CLEAVE_TRY(api::ModelInput in, api::load_model(model, registry, cmd.training));
    cost::CostModel cost(cluster);
    search::SearchContext ctx{in.training, registry, cost, spec, model, in.batch, 0};
    CLEAVE_TRY(plan::Plan p, search::make_plan("data-parallel", ctx));
    out.push_back({model, std::move(in.training), std::move(p)});
  }
  return out;
}

}  // namespace

int run_calibrate(ops::OpRegistry const& registry, CalibrateCommand const& cmd) {
  auto cluster = cluster::load_cluster(cmd.cluster);
  if (!cluster) return report(cluster.error());
  auto cpu = require_cpu_cluster(*cluster, cmd.cluster, "calibrate measures");
  if (!cpu) return report(cpu.error());
  auto work = given_plans(registry, cmd, *cluster);
  if (!work) return report(work.error());
  runtime::CalibrateOptions options;
  options.devices = static_cast<int>(cluster->num_devices());
  auto kernels = runtime::KernelRegistry::with_builtins();
  auto rates = runtime::measure_machine(*kernels, registry, options);
  if (!rates) return report(rates.error());
  std::string spec = runtime::calibrated_cluster_spec(*rates, options.devices);
  auto calibrated = cluster::load_cluster(spec);
  if (!calibrated) return report(calibrated.error());

  if (cmd.plans.empty()) {
    work = default_plans(registry, cmd, spec, *calibrated);
    if (!work) return report(work.error());
  }
  std::vector<runtime::DeviceInfo> devices;
  for (auto const& d : calibrated->devices())
    devices.push_back({d.name, d.memory});
  std::vector<runtime::Executor> executors;
  std::vector<runtime::MeasuredSteps> measured;
  for (auto const& w : *work) {
    auto program = lower::lower(w.graph, w.plan, registry);
    if (!program) return report(program.error().with_context("lowering " + w.label));
    auto executor = runtime::Executor::create(w.graph, std::move(*program), registry, devices);
    if (!executor) return report(executor.error());
    executors.push_back(std::move(*executor));
    runtime::InProcessBackend backend;
    auto m = runtime::measure_steps(executors.back(), *kernels, backend, cmd.steps);
    if (!m) return report(m.error().with_context("running " + w.label));
    measured.push_back(std::move(*m));
  }
  runtime::fit_transfers(*rates, measured);
  spec = runtime::calibrated_cluster_spec(*rates, options.devices);
  cost::ProfileTable table;
  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  table.source = fmt::format("cleave calibrate, {}, {} thread(s) per device, cluster {}", date,
                             rates->threads_per_device, spec);
  auto added = runtime::add_measurements(table, measured, *rates, "cpu-core");
  if (!added) return report(added.error());
  auto written = write_file_atomic(cmd.output, cost::profile_to_json(table));
  if (!written) return report(written.error());

  auto const* calibration = table.calibration("cpu-core");
  if (cmd.json) {
    nlohmann::json j = {{"format", "cleave.calibration/1"},
                        {"cluster", spec},
                        {"profile", cmd.output},
                        {"peak_flops_per_s", rates->peak.value()},
                        {"memory_bandwidth_bytes_per_s", rates->memory_bandwidth.value()},
                        {"copy_bandwidth_bytes_per_s", rates->copy_bandwidth.value()},
                        {"hop_latency_s", rates->hop_latency.value()},
                        {"launch_s", rates->launch.value()},
                        {"threads_per_device", rates->threads_per_device},
                        {"entries", table.entries().size()},
                        {"efficiency", calibration->efficiency}};
    std::string text = j.dump(2) + "\n";
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  }
  std::string text = fmt::format(
      "measured on {} thread(s) per device:\n"
      "  peak (fp32 matmul)      {:.1f} GFLOP/s\n"
      "  memory bandwidth        {:.2f} GB/s (element-wise add, bytes read + written)\n"
      "  copy bandwidth          {:.2f} GB/s (the runtime's transfers between devices)\n"
      "  hop latency             {:.1f} us (a transfer crosses two hops)\n"
      "  kernel launch           {:.2f} us\n"
      "calibrated cluster: {}\n",
      rates->threads_per_device, rates->peak.value() / 1e9, rates->memory_bandwidth.value() / 1e9,
      rates->copy_bandwidth.value() / 1e9, rates->hop_latency.value() * 1e6,
      rates->launch.value() * 1e6, spec);
  text += fmt::format("measured {} step(s) of:\n", cmd.steps);
  for (std::size_t i = 0; i < work->size(); ++i) {
    auto const& s = measured[i].step_seconds;
    text +=
        fmt::format("  {:<60} {:.4f} s per step\n", (*work)[i].label, s.empty() ? 0.0 : s.back());
  }
  text += "efficiency by op type (of the measured peak):\n";
  for (auto const& [op, e] : calibration->efficiency)
    text += fmt::format("  {:<28} {:.3f}\n", op, e);
  text +=
      fmt::format("wrote {} ({} exact entries); plan with --cluster '{}' and pass --profile {}\n",
                  cmd.output, table.entries().size(), spec, cmd.output);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

}  // namespace cleave::cli
