// `cleave run PLAN`: real training steps of a saved plan on the in-process runtime (one worker
// thread per device of the plan's cluster, memory capped per device), on deterministic synthetic
// data; the measured step time, its breakdown per device, peak memory against the simulator's
// prediction, an optional measured trace and an optional check against the unpartitioned graph
// (docs/runtime.md). `--backend mpi` runs it over MPI instead (cmd_run_mpi.cc).
#include "cli/commands.h"
#include "cli/run_common.h"
#include "runtime/comm_backend.h"

namespace cleave::cli {

int run_run(ops::OpRegistry const& registry, RunCommand const& cmd) {
  if (cmd.backend == "mpi") {
#ifdef CLEAVE_HAVE_MPI
    return run_run_mpi(registry, cmd);
#else
    return report(Error(ErrorCode::unsupported,
                        "this cleave was built without MPI (CMake found none): install Open MPI "
                        "(scripts/install-deps.sh) and rebuild, or use --backend in-process"));
#endif
  }
  if (cmd.backend != "in-process")
    return report(Error(ErrorCode::invalid_argument,
                        "--backend must be in-process or mpi, not '" + cmd.backend + "'"));
  auto setup = prepare_run(registry, cmd);
  if (!setup) return report(setup.error());
  auto executor = runtime::Executor::create(setup->input.model.training, std::move(setup->program),
                                            registry, setup->devices);
  if (!executor) return report(executor.error());
  auto kernels = runtime::KernelRegistry::with_builtins();
  auto config = training_config(cmd, setup->input.model.training, *kernels);
  runtime::InProcessBackend backend;
  config.exec.backend = &backend;
  auto run = runtime::run_training(*executor, config);
  if (!run) return report(run.error().with_context("running plan '" + cmd.plan + "'"));
  RunOutcome out{std::move(*run), setup->prediction, {}, "in-process", {}};
  return finish_run(registry, cmd, *setup, executor->program(), config, out);
}

}  // namespace cleave::cli
