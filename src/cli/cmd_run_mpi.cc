// `mpirun -np N cleave run PLAN --backend mpi`: every rank loads the plan, lowers the same
// program and runs its devices' workers (runtime/mpi); after each step the ranks share what the
// next step and the report need (runtime/mpi/step_sharing.h); rank 0 runs the check, writes the
// trace (a process per rank) and prints. A rank that fails prints its error, naming itself, and
// ends the whole job (MPI_Abort); docs/runtime.md "Over MPI".
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <fmt/format.h>

#include "api/evaluate.h"
#include "api/run.h"
#include "cli/commands.h"
#include "runtime/mpi/mpi_backend.h"
#include "runtime/mpi/step_sharing.h"

namespace cleave::cli {
namespace {

namespace mpi = runtime::mpi;

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// --kill-rank: the rank dies by SIGKILL at its first communication once armed (the last step),
// as a crashed or killed process would; it first says when, so a test can time the job's end.
class KillingBackend final : public runtime::CommBackend {
 public:
  KillingBackend(runtime::CommBackend& inner, int rank) : inner_(inner), rank_(rank) {}
  void arm() { armed_ = true; }

  Status send(runtime::Message const& m, runtime::Payload p) override {
    maybe_die();
    return inner_.send(m, std::move(p));
  }
  Status receive(runtime::Message const& m, std::span<float> out) override {
    maybe_die();
    return inner_.receive(m, out);
  }
  Status all_reduce(runtime::CollectiveCall const& c, std::span<float> data) override {
    maybe_die();
    return inner_.all_reduce(c, data);
  }
  Status all_gather(runtime::CollectiveCall const& c, std::span<float const> mine,
                    std::span<float> out) override {
    maybe_die();
    return inner_.all_gather(c, mine, out);
  }
  Status reduce_scatter(runtime::CollectiveCall const& c, std::span<float const> in,
                        std::span<float> out) override {
    maybe_die();
    return inner_.reduce_scatter(c, in, out);
  }
  void abort() override { inner_.abort(); }
  Expected<bool> arrived(runtime::Message const& m) override { return inner_.arrived(m); }
  Expected<bool> joined(runtime::CollectiveCall const& c) override { return inner_.joined(c); }

 private:
  void maybe_die() {
    if (!armed_) return;
    std::fprintf(stderr, "rank %d kills itself (SIGKILL) at %lld us\n", rank_,
                 static_cast<long long>(now_us()));
    std::raise(SIGKILL);
  }
  runtime::CommBackend& inner_;
  int rank_;
  std::atomic<bool> armed_{false};
};

// A failure on one rank once the steps run: printed with the rank, then the whole job ends.
[[noreturn]] void end_job(mpi::Session const& session, Error error, RunCommand const& cmd) {
  report(std::move(error).with_context(session.where()));
  if (cmd.oom_rank == session.rank() || cmd.kill_rank >= 0)
    std::fprintf(stderr, "rank %d ends the job at %lld us\n", session.rank(),
                 static_cast<long long>(now_us()));
  session.abort_job(1);
}

// The plan evaluated (the program every rank lowers alike, and the prediction); --fail-op's op
// checked.
Expected<sim::Evaluation> evaluate_plan(api::PlanInput const& input, RunCommand const& cmd,
                                        ops::OpRegistry const& registry) {
  auto const& ops = input.model.training.ops();
  if (!cmd.fail_op.empty() && std::none_of(ops.begin(), ops.end(), [&](ir::Op const& op) {
        return op.name == cmd.fail_op;
      }))
    return Error(ErrorCode::not_found,
                 "--fail-op: the model has no op named '" + cmd.fail_op + "'");
  CLEAVE_TRY(auto cost, api::load_cost_model(input.cluster, cmd.profile));
  return api::evaluate(input.model, input.plan, cost, registry,
                       lower::CollectiveForm::explicit_transfers);
}

}  // namespace

int run_run_mpi(ops::OpRegistry const& registry, RunCommand const& cmd) {
  auto session = mpi::Session::start();
  if (!session) return report(session.error());
  int rank = session->rank();
  auto print = [](Error const& e) { report(e); };
  // Errors before the steps are mostly the same on every rank (each loads the same plan): printed
  // once, and every rank leaves if any fails.
  auto input = api::load_plan_input(cmd.plan, registry, cmd.training);
  auto evaluation =
      input ? evaluate_plan(*input, cmd, registry) : Expected<sim::Evaluation>(input.error());
  if (input && !evaluation) evaluation.error().with_context("in plan file '" + cmd.plan + "'");
  Status st = evaluation ? mpi::check_job(evaluation->program.num_devices, session->size(),
                                          cmd.devices_per_rank)
                         : Status(evaluation.error());
  if (!session->agree(st, print)) return 1;
  auto const& graph = input->model.training;
  auto const& prediction = evaluation->prediction;
  std::vector<runtime::DeviceInfo> devices;
  for (auto const& d : input->cluster.devices())
    devices.push_back({d.name, d.memory});
  auto mine = mpi::devices_of_rank(rank, cmd.devices_per_rank);
  if (cmd.oom_rank == rank)
    for (int d : mine)
      devices[static_cast<std::size_t>(d)].capacity =
          Bytes(prediction.peak_memory_bytes[static_cast<std::size_t>(d)] / 2);
  auto timeout = std::chrono::milliseconds(static_cast<std::int64_t>(cmd.comm_timeout_s * 1e3));
  auto backend =
      mpi::Backend::create({*session, evaluation->program, cmd.devices_per_rank, timeout});
  auto executor = backend ? runtime::Executor::create(graph, evaluation->program, registry, devices)
                          : Expected<runtime::Executor>(backend.error());
  if (!session->agree(executor ? Status::ok() : Status(executor.error()), print)) return 1;
  auto request = run_request(cmd);
  request.backend_name = fmt::format("mpi ({} ranks, {} device{} per rank)", session->size(),
                                     cmd.devices_per_rank, cmd.devices_per_rank == 1 ? "" : "s");
  auto kernels = runtime::KernelRegistry::with_builtins(api::kernel_choice(request));
  runtime::TrainingConfig config;
  config.steps = cmd.steps;
  config.seed = cmd.seed;
  config.exec.kernels = kernels.get();
  config.exec.fail_op = cmd.fail_op;
  config.exec.threads_per_device = cmd.threads;
  if (cmd.check) config.exec.capture = runtime::checked_tensors(graph, cmd.training.loss);
  KillingBackend killing(**backend, rank);
  config.exec.backend = &killing;
  config.exec.devices = mine;
  mpi::StepSharing sharing{*session, **backend, graph,
                           mpi::shared_tensors(graph, cmd.training.loss, config.exec.capture)};
  int steps_done = 0;
  config.complete_step = [&](runtime::StepResult& step) -> Status {
    CLEAVE_CHECK_OK(mpi::complete_step(sharing, step));
    if (++steps_done + 1 == cmd.steps && cmd.kill_rank == rank) killing.arm();
    return Status::ok();
  };
  if (cmd.steps == 1 && cmd.kill_rank == rank) killing.arm();
  MPI_Barrier(MPI_COMM_WORLD);  // the first step's ranks start together
  auto run = runtime::run_training(*executor, config);
  if (!run) end_job(*session, run.error().with_context("running plan '" + cmd.plan + "'"), cmd);
  if (rank != 0) return 0;
  api::RunOutcome out;
  out.run = std::move(*run);
  out.prediction = prediction;
  out.program = executor->program();
  if (cmd.check) {
    config.exec.backend = nullptr;  // the reference, run here, brings its own
    auto check = runtime::check_against_reference(graph, registry, out.run, config,
                                                  cmd.training.loss, cmd.tolerance);
    if (!check) return report(check.error().with_context("checking against the reference"));
    out.check = std::move(*check);
  }
  out.timeline = report::measured_timeline(graph, out.program, out.run.steps.back().spans,
                                           request.backend_name);
  for (int d = 0; d < out.program.num_devices; ++d)
    out.timeline.rank_of_device.push_back(d / cmd.devices_per_rank);
  return finish_run(*input, cmd, request, out);
}

}  // namespace cleave::cli
