// What `cleave run` does whichever backend runs the steps (cmd_run.cc in one process,
// cmd_run_mpi.cc over MPI): the plan loaded and evaluated, the training configuration, and once
// the steps ran, the check, the trace and the report (text or cleave.run/1 JSON).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/plan_input.h"
#include "cli/commands.h"
#include "runtime/check.h"
#include "runtime/kernels/kernel.h"
#include "sim/evaluate.h"

namespace cleave::cli {

struct RunSetup {
  api::PlanInput input;
  sim::Prediction prediction;
  lower::Program program;
  std::vector<runtime::DeviceInfo> devices;  // the cluster's: names and capacities
};

// Loads the plan, checks --fail-op and evaluates the plan (the program and its prediction).
Expected<RunSetup> prepare_run(ops::OpRegistry const& registry, RunCommand const& cmd);

// Steps, seed, kernels, --fail-op and what --check captures; the backend is the caller's.
runtime::TrainingConfig training_config(RunCommand const& cmd, ir::Graph const& graph,
                                        runtime::KernelRegistry const& kernels);

struct RunOutcome {
  runtime::TrainingRun run;
  sim::Prediction prediction;
  std::optional<runtime::CheckReport> check;
  std::string backend = "in-process";  // how the steps ran, as the report names it
  std::vector<int> rank_of_device;     // over MPI: the trace's process per rank
};

// After the steps: --check (against the reference, run here), --trace, and the report on
// stdout; returns the exit code (1 with the error where anything failed, the check included).
int finish_run(ops::OpRegistry const& registry, RunCommand const& cmd, RunSetup const& setup,
               lower::Program const& program, runtime::TrainingConfig const& config,
               RunOutcome& out);

}  // namespace cleave::cli
