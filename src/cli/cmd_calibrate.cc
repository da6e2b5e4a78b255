// `cleave calibrate`: measures this machine's CPU cores as cleave devices (runtime/calibrate.h)
// and writes a cleave.profile/1 table: the machine's rates become the calibrated `cpu` cluster
// spec to plan with, and the runtime's measured steps of a workload (the given plans, or
// data-parallel plans of built-in models) give exact entries per piece and per-op-type
// efficiencies.
#include <ctime>
#include <fmt/format.h>
#include <functional>
#include <nlohmann/json.hpp>

#include "api/plan_input.h"
#include "autodiff/training_graph.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/measure.h"
#include "cluster/presets.h"
#include "lower/program.h"
#include "runtime/calibrate.h"
#include "search/search.h"
#include "support/file_io.h"
#ifdef CLEAVE_HAVE_MPI
#include "runtime/mpi/mpi_backend.h"
#include "runtime/mpi/step_sharing.h"
#endif

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

// What every backend does before the steps: the cluster checked, the plans given read, the
// machine's rates measured (by `measure`), the calibrated spec, the default plans where none was
// given, and the calibrated devices.
struct Calibration {
  std::vector<Workload> work;
  runtime::MachineRates rates;
  std::string spec;
  std::vector<runtime::DeviceInfo> devices;
};

Expected<Calibration> prepare(ops::OpRegistry const& registry, CalibrateCommand const& cmd,
                              std::function<Expected<runtime::MachineRates>()> const& measure) {
  CLEAVE_TRY(auto cluster, cluster::load_cluster(cmd.cluster));
  CLEAVE_CHECK_OK(require_cpu_cluster(cluster, cmd.cluster, "calibrate measures"));
  Calibration c;
  CLEAVE_TRY(c.work, given_plans(registry, cmd, cluster));
  CLEAVE_TRY(c.rates, measure());
  c.spec = runtime::calibrated_cluster_spec(c.rates, static_cast<int>(cluster.num_devices()));
  CLEAVE_TRY(auto calibrated, cluster::load_cluster(c.spec));
  if (cmd.plans.empty()) {
    CLEAVE_TRY(c.work, default_plans(registry, cmd, c.spec, calibrated));
  }
  for (auto const& d : calibrated.devices())
    c.devices.push_back({d.name, d.memory});
  return c;
}

// After the steps: the transfers fitted, the table written, the report printed.
int write_calibration(CalibrateCommand const& cmd, Calibration& c,
                      std::vector<runtime::MeasuredSteps> const& measured) {
  runtime::MachineRates& rates = c.rates;
  runtime::fit_transfers(rates, measured);
  std::string spec = runtime::calibrated_cluster_spec(rates, static_cast<int>(c.devices.size()));
  cost::ProfileTable table;
  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  table.source =
      fmt::format("cleave calibrate, {}, {} thread(s) per device, {} backend, cluster {}", date,
                  rates.threads_per_device, cmd.backend, spec);
  auto added = runtime::add_measurements(table, measured, rates, "cpu-core");
  if (!added) return report(added.error());
  auto written = write_file_atomic(cmd.output, cost::profile_to_json(table));
  if (!written) return report(written.error());
  auto const* calibration = table.calibration("cpu-core");
  if (cmd.json) {
    nlohmann::json j = {{"format", "cleave.calibration/1"},
                        {"cluster", spec},
                        {"backend", cmd.backend},
                        {"profile", cmd.output},
                        {"peak_flops_per_s", rates.peak.value()},
                        {"memory_bandwidth_bytes_per_s", rates.memory_bandwidth.value()},
                        {"copy_bandwidth_bytes_per_s", rates.copy_bandwidth.value()},
                        {"hop_latency_s", rates.hop_latency.value()},
                        {"launch_s", rates.launch.value()},
                        {"threads_per_device", rates.threads_per_device},
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
      rates.threads_per_device, rates.peak.value() / 1e9, rates.memory_bandwidth.value() / 1e9,
      rates.copy_bandwidth.value() / 1e9, rates.hop_latency.value() * 1e6,
      rates.launch.value() * 1e6, spec);
  text += fmt::format("measured {} step(s) of:\n", cmd.steps);
  for (std::size_t i = 0; i < c.work.size(); ++i) {
    auto const& s = measured[i].step_seconds;
    text +=
        fmt::format("  {:<60} {:.4f} s per step\n", c.work[i].label, s.empty() ? 0.0 : s.back());
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

}  // namespace

int run_calibrate(ops::OpRegistry const& registry, CalibrateCommand const& cmd) {
  if (auto st = check_backend(cmd.backend); !st) return report(st.error());
#ifdef CLEAVE_HAVE_MPI
  if (cmd.backend == "mpi") return run_calibrate_mpi(registry, cmd);
#endif
  auto kernels = runtime::KernelRegistry::with_builtins();
  runtime::CalibrateOptions options;
  auto c = prepare(registry, cmd, [&]() -> Expected<runtime::MachineRates> {
    CLEAVE_TRY(auto cluster, cluster::load_cluster(cmd.cluster));
    options.devices = static_cast<int>(cluster.num_devices());
    return runtime::measure_machine(*kernels, registry, options);
  });
  if (!c) return report(c.error());
  std::vector<runtime::Executor> executors;
  std::vector<runtime::MeasuredSteps> measured;
  for (auto const& w : c->work) {
    auto program = lower::lower(w.graph, w.plan, registry);
    if (!program) return report(program.error().with_context("lowering " + w.label));
    auto executor = runtime::Executor::create(w.graph, std::move(*program), registry, c->devices);
    if (!executor) return report(executor.error());
    executors.push_back(std::move(*executor));
    runtime::InProcessBackend backend;
    auto m = runtime::measure_steps(executors.back(), *kernels, backend, cmd.steps);
    if (!m) return report(m.error().with_context("running " + w.label));
    measured.push_back(std::move(*m));
  }
  return write_calibration(cmd, *c, measured);
}

#ifdef CLEAVE_HAVE_MPI
// Over MPI, a rank per device: rank 0 measures the machine's rates while the others wait, every
// rank runs its device of each workload plan, and rank 0 fits the transfers (MPI messages) and
// writes the table. Collectives are MPI's, but their members' spans are a device's whole part,
// so they are left out of the fit as in-process (runtime/calibrate.h); give --plan plans that
// move blocks point to point (tofu's, optcnn's) to measure MPI's transfers.
int run_calibrate_mpi(ops::OpRegistry const& registry, CalibrateCommand const& cmd) {
  namespace mpi = runtime::mpi;
  auto session = mpi::Session::start();
  if (!session) return report(session.error());
  // Errors are the same on every rank (rank 0 prints them); the job's size first, before anything
  // is measured.
  auto agreed = [&](Status const& st) {
    return session->agree(st, [](Error const& e) { report(e); });
  };
  auto cluster = cluster::load_cluster(cmd.cluster);
  if (!agreed(cluster ? mpi::check_job(static_cast<int>(cluster->num_devices()), session->size(), 1)
                      : Status(cluster.error())))
    return 1;
  auto kernels = runtime::KernelRegistry::with_builtins();
  auto c = prepare(registry, cmd, [&]() -> Expected<runtime::MachineRates> {
    runtime::CalibrateOptions options;
    options.devices = session->size();
    runtime::MachineRates rates;
    std::vector<double> shared(7, 0.0);
    if (session->rank() == 0) {
      CLEAVE_TRY(rates, runtime::measure_machine(*kernels, registry, options));
      shared = {rates.peak.value(),
                rates.memory_bandwidth.value(),
                rates.copy_bandwidth.value(),
                rates.hop_latency.value(),
                rates.launch.value(),
                static_cast<double>(rates.threads_per_device),
                1};
    }
    CLEAVE_CHECK_OK(session->broadcast(shared, 0));
    if (shared[6] == 0) return Error(ErrorCode::execution_failed, "rank 0 could not measure");
    return runtime::MachineRates{FlopsPerSecond(shared[0]), BytesPerSecond(shared[1]),
                                 BytesPerSecond(shared[2]), Seconds(shared[3]),
                                 Seconds(shared[4]),        static_cast<int>(shared[5])};
  });
  if (!agreed(c ? Status::ok() : Status(c.error()))) return 1;
  std::vector<runtime::Executor> executors;
  std::vector<std::unique_ptr<mpi::Backend>> backends;
  std::vector<runtime::MeasuredSteps> measured;
  for (auto const& w : c->work) {
    auto program = lower::lower(w.graph, w.plan, registry);
    auto backend = program ? mpi::Backend::create({*session, *program, 1})
                           : Expected<std::unique_ptr<mpi::Backend>>(program.error());
    if (!agreed(backend ? Status::ok() : Status(backend.error().with_context(w.label)))) return 1;
    backends.push_back(std::move(*backend));
    auto executor = runtime::Executor::create(w.graph, std::move(*program), registry, c->devices);
    if (!executor) return report(executor.error());
    executors.push_back(std::move(*executor));
    mpi::StepSharing sharing{*session, *backends.back(), w.graph,
                             mpi::shared_tensors(w.graph, "", {})};
    runtime::ProcessShare share{mpi::devices_of_rank(session->rank(), 1),
                                [&](runtime::StepResult& s) { return complete_step(sharing, s); }};
    auto m = runtime::measure_steps(executors.back(), *kernels, *backends.back(), cmd.steps, share);
    if (!m) {
      report(m.error().with_context("running " + w.label).with_context(session->where()));
      session->abort_job(1);
    }
    measured.push_back(std::move(*m));
  }
  if (session->rank() != 0) return 0;
  return write_calibration(cmd, *c, measured);
}
#endif

}  // namespace cleave::cli
