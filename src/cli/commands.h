// The `cleave` subcommands. Each takes its parsed options and returns the process exit code;
// errors are printed to stderr as "error[code]: ..." and give exit code 1.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/model_input.h"
#include "api/rebalance.h"
#include "api/run.h"
#include "ops/op_registry.h"

namespace cleave::cli {

struct OpCommand {
  std::string spec;                 // a built-in op name or a TDL statement
  std::vector<std::string> shapes;  // NAME=DIMS
  std::vector<std::string> dtypes;  // NAME=DTYPE
  std::vector<std::string> attrs;   // KEY=VALUE
  bool json = false;
};
int run_op(ops::OpRegistry const& registry, OpCommand const& cmd);

int run_ops(ops::OpRegistry const& registry, bool json);

struct CheckGraphCommand {
  std::string path;
  bool json = false;
};
int run_check_graph(ops::OpRegistry const& registry, CheckGraphCommand const& cmd);

int run_models(bool json);

struct InspectCommand {
  std::string model;  // zoo spec or graph file
  api::TrainingFlags training;
  bool json = false;
};
int run_inspect(ops::OpRegistry const& registry, InspectCommand const& cmd);

struct ExportGraphCommand {
  std::string model;
  std::string output;
  api::TrainingFlags training;
  bool forward_only = false;
};
int run_export_graph(ops::OpRegistry const& registry, ExportGraphCommand const& cmd);

struct ImportCommand {
  std::string model;   // an .onnx file
  std::string output;  // cleave.graph/1 of the forward graph (with its loss)
  api::TrainingFlags training;
  bool training_graph = false;  // write the training graph instead
};
int run_import(ops::OpRegistry const& registry, ImportCommand const& cmd);

struct ClustersCommand {
  std::string show;         // --show SPEC: print one cluster
  std::string export_spec;  // --export SPEC: write it as cleave.cluster/1 ...
  std::string output;       // ... to -o FILE
  bool json = false;
};
// Without --show or --export: the presets with their keys, defaults and sources.
int run_clusters(ClustersCommand const& cmd);

// How `plan` and `compare` search: the algorithm options as set (--option KEY=VALUE, repeatable)
// and the budget (search_context.h).
struct SearchFlags {
  std::vector<std::string> options;
  std::optional<double> budget_seconds;
  std::optional<std::int64_t> budget_iterations;
};

struct PlanCommand {
  std::string model;
  std::string cluster;
  std::string algo = "data-parallel";
  std::string output;   // empty: do not write the plan
  std::string profile;  // a cleave.profile/1 table; empty: the roofline's defaults
  std::string measure;  // --measure FILE (cli/measure.h); empty: none
  api::TrainingFlags training;
  SearchFlags search;
  std::uint64_t seed = 0;
  bool json = false;
  // Swaps on every device the plan overflows (api/add_swaps.h); -o writes the plan with them.
  bool swap = false;
};
int run_plan(ops::OpRegistry const& registry, PlanCommand const& cmd);

struct SimulateCommand {
  std::string plan;     // a cleave.plan/2 file; its model and cluster are rebuilt from it
  std::string trace;    // empty: no trace
  std::string profile;  // a cleave.profile/1 table; empty: the roofline's defaults
  std::string measure;  // --measure FILE (cli/measure.h); empty: none
  api::TrainingFlags training;
  bool json = false;
  bool swap = false;  // as PlanCommand's, reported only (nothing is written)
};
int run_simulate(ops::OpRegistry const& registry, SimulateCommand const& cmd);

struct CompareCommand {
  std::string model;
  std::string cluster;
  std::vector<std::string> algos;  // empty: every algorithm
  std::string profile;             // a cleave.profile/1 table; empty: the roofline's defaults
  std::string measure;             // --measure FILE (cli/measure.h); empty: none
  std::string list_pieces;         // --list-pieces FILE (cli/measure.h); empty: none
  api::TrainingFlags training;
  SearchFlags search;  // an option applies to every compared algorithm that declares it
  std::string html;    // empty: no HTML report; else the plans side by side (docs/report.md)
  bool json = false;
  bool swap = false;  // as PlanCommand's, on every compared plan
};
int run_compare(ops::OpRegistry const& registry, CompareCommand const& cmd);

struct ReportCommand {
  std::string plan;     // a cleave.plan/2 file; its model and cluster are rebuilt from it
  std::string run;      // empty: none; else a run's Chrome trace (cleave run --trace)
  std::string output;   // the HTML file
  std::string profile;  // a cleave.profile/1 table; empty: the roofline's defaults
  api::TrainingFlags training;
};
// One self-contained HTML page of the plan (docs/report.md).
int run_report(ops::OpRegistry const& registry, ReportCommand const& cmd);

struct RunCommand {
  std::string plan;            // a cleave.plan/2 file; its model and cluster are rebuilt from it
  int steps = 1;               // training steps
  std::uint64_t seed = 0;      // of the synthetic data
  bool check = false;          // compare with the unpartitioned graph on one device
  bool deterministic = false;  // kernels chosen by fixed rules (api::RunRequest::deterministic)
  double tolerance = 1e-4;     // of the check's max relative error (runtime/check.h)
  std::string trace;           // empty: no trace; else the last step's measured Chrome trace
  std::string fail_op;         // fault injection (tests): the compute tasks of this op fail
  int threads = 0;             // OpenMP threads per device; 0: max(1, cores / devices)
  std::string profile;         // cleave.profile/1 table for the prediction shown beside the run
  // The scheduling assistant (api/rebalance.h): partition again on measured times mid-run.
  bool rebalance = false;
  api::RebalanceOptions rebalance_options;
  std::string save_plan;  // empty: none; else the plan the run ended on
  api::TrainingFlags training;
  bool json = false;
  // How the workers exchange data: "in-process" (threads of this process) or "mpi" (one process
  // per rank, started by mpirun; docs/runtime.md "Over MPI").
  std::string backend = "in-process";
  int devices_per_rank = 1;    // mpi: device d runs on rank d / devices_per_rank
  double comm_timeout_s = 60;  // mpi: the longest wait for a peer before the job ends
  // mpi fault injection (tests): this rank kills itself (SIGKILL) at its first communication in
  // the last step, or runs with its devices' capacities half their predicted peaks; -1: none.
  int kill_rank = -1;
  int oom_rank = -1;
};
int run_run(ops::OpRegistry const& registry, RunCommand const& cmd);
// `cleave run --backend mpi`, on every rank (cmd_run_mpi.cc; built where MPI is found).
int run_run_mpi(ops::OpRegistry const& registry, RunCommand const& cmd);
// What run_run does with the command, and once the steps ran (on rank 0 over MPI): the trace,
// the report (text or cleave.run/1) and the check's verdict as the exit code.
api::RunRequest run_request(RunCommand const& cmd);
int finish_run(api::PlanInput const& input, RunCommand const& cmd, api::RunRequest const& request,
               api::RunOutcome const& out);

struct CalibrateCommand {
  std::string cluster = "cpu:devices=2";  // the cpu preset: how many cores act as devices
  std::string output = "cleave-profile.json";
  std::vector<std::string> plans;  // workload; empty: data-parallel plans of built-in models
  int steps = 3;                   // measured steps per plan (after one warm-up step)
  api::TrainingFlags training;
  bool json = false;
  // "mpi": under mpirun, a rank per device; the transfers fitted are MPI messages.
  std::string backend = "in-process";
};
int run_calibrate(ops::OpRegistry const& registry, CalibrateCommand const& cmd);
int run_calibrate_mpi(ops::OpRegistry const& registry, CalibrateCommand const& cmd);

// Prints the error to stderr and returns 1.
int report(Error const& error);

}  // namespace cleave::cli
