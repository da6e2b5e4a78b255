// cleave: the command-line program. A thin shell over the library (src/api and the modules under
// it): it parses options, calls one command and turns errors into a message and a non-zero exit
// code.
#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "import/opaque_op.h"
#include "search/search.h"

namespace {

using namespace cleave;

// Every command's options, as CLI11 fills them.
struct Options {
  std::vector<std::string> semantics_files;
  cli::OpCommand op;
  bool ops_json = false;
  cli::CheckGraphCommand check_graph;
  bool models_json = false;
  cli::ClustersCommand clusters;
  cli::InspectCommand inspect;
  cli::ExportGraphCommand export_graph;
  cli::ImportCommand import;
  cli::PlanCommand plan;
  cli::SimulateCommand simulate;
  cli::CompareCommand compare;
  cli::ReportCommand report;
  cli::RunCommand run;
  cli::CalibrateCommand calibrate;
};

std::string const profile_help =
    "a cleave.profile/1 table of measured piece times and per-device calibrations that "
    "override the roofline (docs/formats.md)";
std::string const measure_help =
    "time each piece FILE (cleave.profile/1) lacks with this machine's CPU kernels as plans are "
    "priced, and add it to FILE for later runs (cpu clusters; FlexFlow's measure-once)";
std::string const model_help =
    "a zoo model NAME[:key=value,...] (`cleave models`), a cleave.graph/1 file (.json) or an "
    "ONNX model (.onnx)";
std::string const cluster_help =
    "a preset NAME[:key=value,...] (`cleave clusters`) or a cleave.cluster/1 file (.json)";

void add_training(CLI::App* cmd, api::TrainingFlags& flags) {
  flags.progress = stderr;  // large imports show progress there when it is a terminal
  cmd->add_option("--optimizer", flags.optimizer, "sgd (with momentum 0.9, default) or adam");
  cmd->add_option("--lr", flags.learning_rate, "learning rate (sgd 0.01, adam 0.001)");
  cmd->add_option("--loss", flags.loss,
                  "the scalar tensor to minimise (default: loss; for .onnx models, an ONNX "
                  "tensor name, else cross-entropy of the last output)");
  cmd->add_option("--precision", flags.precision,
                  "fp32 (default), tf32, amp-fp16 or amp-bf16 (docs/precision.md); for a zoo "
                  "model the same as its precision key");
  cmd->add_flag("--allow-opaque", flags.allow_opaque,
                ".onnx models: import ops cleave has no mapping for as opaque ops "
                "(splittable on the batch only) instead of failing");
}

void add_search(CLI::App* cmd, cli::SearchFlags& flags) {
  cmd->add_option("--option", flags.options,
                  "KEY=VALUE: an algorithm's option (repeatable; the algorithms' options below)");
  cmd->add_option("--budget-seconds", flags.budget_seconds,
                  "stop a search after this many seconds with the best plan so far")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--budget-iterations", flags.budget_iterations,
                  "stop a search after this many iterations (each algorithm's, below)")
      ->check(CLI::PositiveNumber);
  cmd->footer("algorithms:\n" + search::algorithms_help());
}

// op, ops, check-graph.
void add_op_commands(CLI::App& app, Options& o) {
  auto* op = app.add_subcommand(
      "op", "show an op's iteration space, which dims split, and what each half of a 2-way split "
            "reads, writes and reduces");
  op->add_option("spec", o.op.spec,
                 "a built-in or custom op name (`cleave ops`), or a TDL statement such as "
                 "\"Y[i,j] = sum(k) A[i,k] * B[k,j]\"")
      ->required();
  op->add_option("--shape", o.op.shapes,
                 "NAME=DIMS, e.g. A=64x32 (built-in ops without any "
                 "--shape use example shapes)");
  op->add_option("--dtype", o.op.dtypes, "NAME=DTYPE (fp32 default; fp16, bf16, int32, int64)");
  op->add_option("--attr", o.op.attrs, "KEY=VALUE, e.g. stride=2,2 or alpha=0.5");
  op->add_flag("--json", o.op.json, "print cleave.op-report/1 JSON");

  auto* ops_list = app.add_subcommand("ops", "list the op types with their attributes");
  ops_list->add_flag("--json", o.ops_json, "print JSON");

  auto* check = app.add_subcommand("check-graph", "load a cleave.graph/1 file and verify it");
  check->add_option("file", o.check_graph.path, "graph JSON file")->required();
  check->add_flag("--json", o.check_graph.json, "print JSON");
}

// models, clusters, inspect, export-graph, import.
void add_model_commands(CLI::App& app, Options& o) {
  auto* models_list = app.add_subcommand("models", "list the model zoo with keys and defaults");
  models_list->add_flag("--json", o.models_json, "print JSON");

  auto* clusters = app.add_subcommand(
      "clusters", "list the cluster presets with keys, defaults and sources; show or export one");
  auto* show_opt =
      clusters->add_option("--show", o.clusters.show,
                           "print one cluster: devices, nodes, links, routes; " + cluster_help);
  auto* export_opt =
      clusters->add_option("--export", o.clusters.export_spec,
                           "write one cluster as cleave.cluster/1 JSON (with -o); " + cluster_help);
  auto* output_opt = clusters->add_option("-o,--output", o.clusters.output, "output file");
  export_opt->excludes(show_opt)->needs(output_opt);
  output_opt->needs(export_opt);
  clusters->add_flag("--json", o.clusters.json, "print JSON");

  auto* inspect = app.add_subcommand(
      "inspect", "op counts, parameters, training state, saved activations and FLOPs of a model's "
                 "training step");
  inspect->add_option("model", o.inspect.model, model_help)->required();
  inspect->add_flag("--json", o.inspect.json, "print cleave.inspect/1 JSON");
  add_training(inspect, o.inspect.training);

  auto* export_graph = app.add_subcommand("export-graph", "write a model's training graph");
  export_graph->add_option("model", o.export_graph.model, model_help)->required();
  export_graph->add_option("-o,--output", o.export_graph.output, "output file (cleave.graph/1)")
      ->required();
  export_graph->add_flag("--forward-only", o.export_graph.forward_only,
                         "write the forward graph instead");
  add_training(export_graph, o.export_graph.training);

  auto* import = app.add_subcommand(
      "import", "import an ONNX model (opsets 13-17) as a cleave graph (docs/import.md)");
  import->add_option("model", o.import.model, "an .onnx file")->required();
  import->add_option("-o,--output", o.import.output, "output file (cleave.graph/1)")->required();
  import->add_flag("--training", o.import.training_graph,
                   "write the training graph (autodiff + optimizer) instead of the forward graph");
  add_training(import, o.import.training);
}

// plan, simulate, compare, report.
void add_plan_commands(CLI::App& app, Options& o) {
  constexpr char const* swap_help =
      "add swaps on every device a plan overflows and say what they cost; still over: an error "
      "(docs/search_swapadvisor.md)";
  auto* plan = app.add_subcommand("plan", "make a plan for a model on a cluster and evaluate it");
  plan->add_option("model", o.plan.model, model_help)->required();
  plan->add_option("--cluster", o.plan.cluster,
                   "a preset NAME[:key=value,...] (`cleave clusters`) or a cleave.cluster/1 file")
      ->required();
  plan->add_option("--algo", o.plan.algo, "an algorithm (below; default data-parallel)");
  plan->add_option("-o,--output", o.plan.output, "write the plan (cleave.plan/2)");
  plan->add_option("--seed", o.plan.seed, "seed of randomised algorithms");
  plan->add_flag("--json", o.plan.json, "print cleave.compare/1 JSON");
  plan->add_flag("--swap", o.plan.swap, swap_help);
  plan->add_option("--profile", o.plan.profile, profile_help);
  plan->add_option("--measure", o.plan.measure, measure_help);
  add_training(plan, o.plan.training);
  add_search(plan, o.plan.search);

  auto* simulate = app.add_subcommand(
      "simulate", "evaluate a saved plan (its model and cluster are rebuilt from it): step time, "
                  "breakdown, memory, and the devices it overflows with what is live there");
  simulate->add_option("plan", o.simulate.plan, "a cleave.plan/2 file")->required();
  simulate->add_option("--trace", o.simulate.trace,
                       "write the simulated timeline (Chrome trace: Perfetto, chrome://tracing)");
  simulate->add_flag("--json", o.simulate.json, "print cleave.compare/1 JSON");
  simulate->add_flag("--swap", o.simulate.swap, swap_help);
  simulate->add_option("--profile", o.simulate.profile, profile_help);
  simulate->add_option("--measure", o.simulate.measure, measure_help);
  add_training(simulate, o.simulate.training);

  auto* compare = app.add_subcommand(
      "compare", "every algorithm's plan for a model on a cluster, side by side");
  compare->add_option("model", o.compare.model, model_help)->required();
  compare->add_option("--cluster", o.compare.cluster, "a preset or a cleave.cluster/1 file")
      ->required();
  compare->add_option("--algos", o.compare.algos, "algorithms, comma separated (default: all)")
      ->delimiter(',');
  compare->add_flag("--json", o.compare.json, "print cleave.compare/1 JSON");
  compare->add_flag("--swap", o.compare.swap, swap_help);
  compare->add_option("--html", o.compare.html,
                      "also write the plans side by side as one self-contained HTML page "
                      "(docs/report.md)");
  compare->add_option("--profile", o.compare.profile, profile_help);
  compare->add_option("--measure", o.compare.measure, measure_help);
  compare->add_option("--list-pieces", o.compare.list_pieces,
                      "write the distinct compute pieces the plans price, keyed as "
                      "cleave.profile/1 keys them, with their regions and roofline times "
                      "(cleave.pieces/1), for bench/gpu_pieces_torch.py to time");
  add_training(compare, o.compare.training);
  add_search(compare, o.compare.search);

  auto* report = app.add_subcommand(
      "report", "write a saved plan as one self-contained HTML page: timeline and memory per "
                "device, what overflows and what would fix it, communication per link, the plan "
                "per op (docs/report.md)");
  report->add_option("plan", o.report.plan, "a cleave.plan/2 file")->required();
  report->add_option("--run", o.report.run,
                     "a measured Chrome trace of the plan (cleave run PLAN --trace RUN.json), "
                     "drawn beside the simulated timeline");
  report->add_option("-o,--output", o.report.output, "the HTML file to write")->required();
  report->add_option("--profile", o.report.profile, profile_help);
  add_training(report, o.report.training);
}

// run, calibrate.
void add_run_commands(CLI::App& app, Options& o) {
  auto* run = app.add_subcommand(
      "run", "run training steps of a saved plan on this machine's CPU, one worker per device "
             "(its model and cluster are rebuilt from it)");
  run->add_option("plan", o.run.plan, "a cleave.plan/2 file")->required();
  run->add_option("--steps", o.run.steps, "training steps (default 1)")->check(CLI::PositiveNumber);
  run->add_option("--seed", o.run.seed, "seed of the synthetic data (default 0)");
  run->add_flag("--check", o.run.check,
                "also run the unpartitioned graph on one device and compare loss, gradients and "
                "updated weights; exit non-zero beyond the tolerance (kernels chosen as under "
                "--deterministic)");
  run->add_flag("--deterministic", o.run.deterministic,
                "choose among a kernel's implementations by fixed rules, not by timing them, so "
                "that a run's numbers repeat exactly (may be slower)");
  run->add_option("--tolerance", o.run.tolerance,
                  "largest max relative error the check accepts (default 1e-4)")
      ->check(CLI::NonNegativeNumber);
  run->add_option("--trace", o.run.trace,
                  "write the last step's measured timeline (Chrome trace: Perfetto, "
                  "chrome://tracing)");
  run->add_option("--threads", o.run.threads,
                  "OpenMP threads per device (default: cores / devices, at least 1)")
      ->check(CLI::PositiveNumber);
  run->add_option("--fail-op", o.run.fail_op, "testing: make the compute tasks of this op fail")
      ->group("");
  run->add_option("--profile", o.run.profile,
                  "a cleave.profile/1 table (cleave calibrate) for the simulated step time shown "
                  "beside the measured one");
  auto* rebalance = run->add_flag(
      "--rebalance", o.run.rebalance,
      "measure the first steps; past the imbalance threshold, partition again with the measured "
      "times (the plan's algorithm: mincut, mincut-split) and switch plans between steps");
  run->add_option("--rebalance-threshold", o.run.rebalance_options.threshold,
                  "busiest device's measured compute time over the mean that triggers it "
                  "(default 1.1)")
      ->needs(rebalance);
  run->add_option("--rebalance-steps", o.run.rebalance_options.measure_steps,
                  "steps measured after the first (warm-up) step (default 3)")
      ->needs(rebalance);
  run->add_option("--save-plan", o.run.save_plan,
                  "write the plan the run ended on (with --rebalance: the new plan if it "
                  "switched)");
  run->add_flag("--json", o.run.json, "print cleave.run/1 JSON");
  run->add_option("--backend", o.run.backend,
                  "how devices exchange data: in-process (default; threads of this process) or "
                  "mpi (one process per rank: mpirun -np N cleave run PLAN --backend mpi)");
  run->add_option("--devices-per-rank", o.run.devices_per_rank,
                  "mpi: devices each rank runs (default 1); ranks x this = the plan's devices")
      ->check(CLI::PositiveNumber);
  run->add_option("--comm-timeout", o.run.comm_timeout_s,
                  "mpi: seconds a rank waits for a peer before ending the job (default 60)")
      ->check(CLI::PositiveNumber);
  run->add_option("--kill-rank", o.run.kill_rank,
                  "testing: this rank kills itself (SIGKILL) in the last step")
      ->group("");
  run->add_option("--oom-rank", o.run.oom_rank,
                  "testing: this rank's devices get half their predicted peak memory")
      ->group("");
  add_training(run, o.run.training);

  auto* calibrate = app.add_subcommand(
      "calibrate", "measure this machine's CPU cores as devices (kernels, copies, real steps) and "
                   "write a cleave.profile/1 table for --profile");
  calibrate->add_option("--cluster", o.calibrate.cluster,
                        "the cpu preset to calibrate, cpu:devices=N (default cpu:devices=2)");
  calibrate->add_option("-o,--output", o.calibrate.output,
                        "profile file to write (default cleave-profile.json)");
  calibrate->add_option("--plan", o.calibrate.plans,
                        "plans (cleave.plan/2) whose pieces to measure; repeatable (default: "
                        "data-parallel plans of small mlp, gpt and resnet models)");
  calibrate
      ->add_option("--steps", o.calibrate.steps,
                   "measured steps per plan after a warm-up step (default 3)")
      ->check(CLI::PositiveNumber);
  calibrate->add_flag("--json", o.calibrate.json, "print cleave.calibration/1 JSON");
  calibrate->add_option("--backend", o.calibrate.backend,
                        "how the measured steps' devices exchange data: in-process (default) or "
                        "mpi (under mpirun, a rank per device: MPI's transfer costs)");
  add_training(calibrate, o.calibrate.training);
}

// Runs the one subcommand given.
int dispatch(CLI::App const& app, ops::OpRegistry const& registry, Options const& o) {
  if (app.got_subcommand("op")) return cli::run_op(registry, o.op);
  if (app.got_subcommand("ops")) return cli::run_ops(registry, o.ops_json);
  if (app.got_subcommand("models")) return cli::run_models(o.models_json);
  if (app.got_subcommand("clusters")) return cli::run_clusters(o.clusters);
  if (app.got_subcommand("inspect")) return cli::run_inspect(registry, o.inspect);
  if (app.got_subcommand("export-graph")) return cli::run_export_graph(registry, o.export_graph);
  if (app.got_subcommand("import")) return cli::run_import(registry, o.import);
  if (app.got_subcommand("plan")) return cli::run_plan(registry, o.plan);
  if (app.got_subcommand("simulate")) return cli::run_simulate(registry, o.simulate);
  if (app.got_subcommand("compare")) return cli::run_compare(registry, o.compare);
  if (app.got_subcommand("report")) return cli::run_report(registry, o.report);
  if (app.got_subcommand("run")) return cli::run_run(registry, o.run);
  if (app.got_subcommand("calibrate")) return cli::run_calibrate(registry, o.calibrate);
  return cli::run_check_graph(registry, o.check_graph);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"cleave: split, place, order and swap the training of networks too large for one "
               "accelerator"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "cleave 0.1.0");
  Options o;
  app.add_option("--op-semantics", o.semantics_files,
                 "file of custom ops, one per line: NAME(IN1, ...): TDL statement")
      ->check(CLI::ExistingFile);
  add_op_commands(app, o);
  add_model_commands(app, o);
  add_plan_commands(app, o);
  add_run_commands(app, o);
  CLI11_PARSE(app, argc, argv);

  auto registry = ops::OpRegistry::with_builtins();
  importer::add_import_ops(*registry);
  for (auto const& file : o.semantics_files) {
    auto st = registry->load_semantics_file(file);
    if (!st) return cli::report(st.error());
  }
  return dispatch(app, *registry, o);
}
