// cleave: the command-line program. A thin shell over the library: it parses options, calls one
// command and turns errors into a message and a non-zero exit code.
#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "import/opaque_op.h"
#include "search/search.h"

int main(int argc, char** argv) {
  using namespace cleave;
  CLI::App app{"cleave: split, place, order and swap the training of networks too large for one "
               "accelerator"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "cleave 0.1.0");
  std::vector<std::string> semantics_files;
  app.add_option("--op-semantics", semantics_files,
                 "file of custom ops, one per line: NAME(IN1, ...): TDL statement")
      ->check(CLI::ExistingFile);

  cli::OpCommand op_cmd;
  auto* op = app.add_subcommand(
      "op", "show an op's iteration space, which dims split, and what each half of a 2-way split "
            "reads, writes and reduces");
  op->add_option("spec", op_cmd.spec,
                 "a built-in or custom op name (`cleave ops`), or a TDL statement such as "
                 "\"Y[i,j] = sum(k) A[i,k] * B[k,j]\"")
      ->required();
  op->add_option("--shape", op_cmd.shapes,
                 "NAME=DIMS, e.g. A=64x32 (built-in ops without any "
                 "--shape use example shapes)");
  op->add_option("--dtype", op_cmd.dtypes, "NAME=DTYPE (fp32 default; fp16, bf16, int32, int64)");
  op->add_option("--attr", op_cmd.attrs, "KEY=VALUE, e.g. stride=2,2 or alpha=0.5");
  op->add_flag("--json", op_cmd.json, "print cleave.op-report/1 JSON");

  bool ops_json = false;
  auto* ops_list = app.add_subcommand("ops", "list the op types with their attributes");
  ops_list->add_flag("--json", ops_json, "print JSON");

  cli::CheckGraphCommand check_cmd;
  auto* check = app.add_subcommand("check-graph", "load a cleave.graph/1 file and verify it");
  check->add_option("file", check_cmd.path, "graph JSON file")->required();
  check->add_flag("--json", check_cmd.json, "print JSON");

  auto add_training = [](CLI::App* cmd, cli::TrainingFlags& flags) {
    cmd->add_option("--optimizer", flags.optimizer, "sgd (with momentum 0.9, default) or adam");
    cmd->add_option("--lr", flags.learning_rate, "learning rate (sgd 0.01, adam 0.001)");
    cmd->add_option("--loss", flags.loss,
                    "the scalar tensor to minimise (default: loss; for .onnx models, an ONNX "
                    "tensor name, else cross-entropy of the last output)");
    cmd->add_flag("--allow-opaque", flags.allow_opaque,
                  ".onnx models: import ops cleave has no mapping for as opaque ops "
                  "(splittable on the batch only) instead of failing");
  };
  std::string const profile_help =
      "a cleave.profile/1 table of measured piece times and per-device calibrations that "
      "override the roofline (docs/formats.md)";
  std::string const model_help =
      "a zoo model NAME[:key=value,...] (`cleave models`), a cleave.graph/1 file (.json) or an "
      "ONNX model (.onnx)";

  auto add_search = [](CLI::App* cmd, cli::SearchFlags& flags) {
    cmd->add_option("--option", flags.options,
                    "KEY=VALUE: an algorithm's option (repeatable; the algorithms' options below)");
    cmd->add_option("--budget-seconds", flags.budget_seconds,
                    "stop a search after this many seconds with the best plan so far")
        ->check(CLI::PositiveNumber);
    cmd->add_option("--budget-iterations", flags.budget_iterations,
                    "stop a search after this many iterations (each algorithm's, below)")
        ->check(CLI::PositiveNumber);
    cmd->footer("algorithms:\n" + search::algorithms_help());
  };

  bool models_json = false;
  auto* models_list = app.add_subcommand("models", "list the model zoo with keys and defaults");
  models_list->add_flag("--json", models_json, "print JSON");

  cli::ClustersCommand clusters_cmd;
  std::string const cluster_help =
      "a preset NAME[:key=value,...] (`cleave clusters`) or a cleave.cluster/1 file (.json)";
  auto* clusters = app.add_subcommand(
      "clusters", "list the cluster presets with keys, defaults and sources; show or export one");
  auto* show_opt =
      clusters->add_option("--show", clusters_cmd.show,
                           "print one cluster: devices, nodes, links, routes; " + cluster_help);
  auto* export_opt =
      clusters->add_option("--export", clusters_cmd.export_spec,
                           "write one cluster as cleave.cluster/1 JSON (with -o); " + cluster_help);
  auto* output_opt = clusters->add_option("-o,--output", clusters_cmd.output, "output file");
  export_opt->excludes(show_opt)->needs(output_opt);
  output_opt->needs(export_opt);
  clusters->add_flag("--json", clusters_cmd.json, "print JSON");

  cli::InspectCommand inspect_cmd;
  auto* inspect = app.add_subcommand(
      "inspect", "op counts, parameters, training state, saved activations and FLOPs of a model's "
                 "training step");
  inspect->add_option("model", inspect_cmd.model, model_help)->required();
  inspect->add_flag("--json", inspect_cmd.json, "print cleave.inspect/1 JSON");
  add_training(inspect, inspect_cmd.training);

  cli::ExportGraphCommand export_cmd;
  auto* export_graph = app.add_subcommand("export-graph", "write a model's training graph");
  export_graph->add_option("model", export_cmd.model, model_help)->required();
  export_graph->add_option("-o,--output", export_cmd.output, "output file (cleave.graph/1)")
      ->required();
  export_graph->add_flag("--forward-only", export_cmd.forward_only,
                         "write the forward graph instead");
  add_training(export_graph, export_cmd.training);

  cli::ImportCommand import_cmd;
  auto* import = app.add_subcommand(
      "import", "import an ONNX model (opsets 13-17) as a cleave graph (docs/import.md)");
  import->add_option("model", import_cmd.model, "an .onnx file")->required();
  import->add_option("-o,--output", import_cmd.output, "output file (cleave.graph/1)")->required();
  import->add_flag("--training", import_cmd.training_graph,
                   "write the training graph (autodiff + optimizer) instead of the forward graph");
  add_training(import, import_cmd.training);

  cli::PlanCommand plan_cmd;
  auto* plan = app.add_subcommand("plan", "make a plan for a model on a cluster and predict it");
  plan->add_option("model", plan_cmd.model, model_help)->required();
  plan->add_option("--cluster", plan_cmd.cluster,
                   "a preset NAME[:key=value,...] (`cleave clusters`) or a cleave.cluster/1 file")
      ->required();
  plan->add_option("--algo", plan_cmd.algo, "an algorithm (below; default data-parallel)");
  plan->add_option("-o,--output", plan_cmd.output, "write the plan (cleave.plan/2)");
  plan->add_option("--seed", plan_cmd.seed, "seed of randomised algorithms");
  plan->add_flag("--json", plan_cmd.json, "print cleave.compare/1 JSON");
  plan->add_option("--profile", plan_cmd.profile, profile_help);
  add_training(plan, plan_cmd.training);
  add_search(plan, plan_cmd.search);

  cli::SimulateCommand simulate_cmd;
  auto* simulate = app.add_subcommand(
      "simulate", "predict a saved plan (its model and cluster are rebuilt from it)");
  simulate->add_option("plan", simulate_cmd.plan, "a cleave.plan/2 file")->required();
  simulate->add_option("--trace", simulate_cmd.trace,
                       "write the simulated timeline (Chrome trace: Perfetto, chrome://tracing)");
  simulate->add_flag("--json", simulate_cmd.json, "print cleave.compare/1 JSON");
  simulate->add_option("--profile", simulate_cmd.profile, profile_help);
  add_training(simulate, simulate_cmd.training);

  cli::CompareCommand compare_cmd;
  auto* compare = app.add_subcommand(
      "compare", "every algorithm's plan for a model on a cluster, side by side");
  compare->add_option("model", compare_cmd.model, model_help)->required();
  compare->add_option("--cluster", compare_cmd.cluster, "a preset or a cleave.cluster/1 file")
      ->required();
  compare->add_option("--algos", compare_cmd.algos, "algorithms, comma separated (default: all)")
      ->delimiter(',');
  compare->add_flag("--json", compare_cmd.json, "print cleave.compare/1 JSON");
  compare->add_option("--profile", compare_cmd.profile, profile_help);
  add_training(compare, compare_cmd.training);
  add_search(compare, compare_cmd.search);

  cli::RunCommand run_cmd;
  auto* run = app.add_subcommand(
      "run", "run training steps of a saved plan on this machine's CPU, one worker per device "
             "(its model and cluster are rebuilt from it)");
  run->add_option("plan", run_cmd.plan, "a cleave.plan/2 file")->required();
  run->add_option("--steps", run_cmd.steps, "training steps (default 1)")
      ->check(CLI::PositiveNumber);
  run->add_option("--seed", run_cmd.seed, "seed of the synthetic data (default 0)");
  run->add_flag("--check", run_cmd.check,
                "also run the unpartitioned graph on one device and compare loss, gradients and "
                "updated weights; exit non-zero beyond the tolerance");
  run->add_option("--tolerance", run_cmd.tolerance,
                  "largest max relative error the check accepts (default 1e-4)")
      ->check(CLI::NonNegativeNumber);
  run->add_option("--trace", run_cmd.trace,
                  "write the last step's measured timeline (Chrome trace: Perfetto, "
                  "chrome://tracing)");
  run->add_option("--fail-op", run_cmd.fail_op, "testing: make the compute tasks of this op fail")
      ->group("");
  run->add_option("--profile", run_cmd.profile,
                  "a cleave.profile/1 table (cleave calibrate) for the simulated step time shown "
                  "beside the measured one");
  run->add_flag("--json", run_cmd.json, "print cleave.run/1 JSON");
  add_training(run, run_cmd.training);

  cli::CalibrateCommand calibrate_cmd;
  auto* calibrate = app.add_subcommand(
      "calibrate", "measure this machine's CPU cores as devices (kernels, copies, real steps) and "
                   "write a cleave.profile/1 table for --profile");
  calibrate->add_option("--cluster", calibrate_cmd.cluster,
                        "the cpu preset to calibrate, cpu:devices=N (default cpu:devices=2)");
  calibrate->add_option("-o,--output", calibrate_cmd.output,
                        "profile file to write (default cleave-profile.json)");
  calibrate->add_option("--plan", calibrate_cmd.plans,
                        "plans (cleave.plan/2) whose pieces to measure; repeatable (default: "
                        "data-parallel plans of small mlp, gpt and resnet models)");
  calibrate->add_option("--steps", calibrate_cmd.steps,
                        "measured steps per plan after a warm-up step (default 3)")
      ->check(CLI::PositiveNumber);
  calibrate->add_flag("--json", calibrate_cmd.json, "print cleave.calibration/1 JSON");
  add_training(calibrate, calibrate_cmd.training);

  CLI11_PARSE(app, argc, argv);

  auto registry = ops::OpRegistry::with_builtins();
  importer::add_import_ops(*registry);
  for (auto const& file : semantics_files) {
    auto st = registry->load_semantics_file(file);
    if (!st) return cli::report(st.error());
  }
  if (*op) return cli::run_op(*registry, op_cmd);
  if (*ops_list) return cli::run_ops(*registry, ops_json);
  if (*models_list) return cli::run_models(models_json);
  if (*clusters) return cli::run_clusters(clusters_cmd);
  if (*inspect) return cli::run_inspect(*registry, inspect_cmd);
  if (*export_graph) return cli::run_export_graph(*registry, export_cmd);
  if (*import) return cli::run_import(*registry, import_cmd);
  if (*plan) return cli::run_plan(*registry, plan_cmd);
  if (*simulate) return cli::run_simulate(*registry, simulate_cmd);
  if (*compare) return cli::run_compare(*registry, compare_cmd);
  if (*run) return cli::run_run(*registry, run_cmd);
  if (*calibrate) return cli::run_calibrate(*registry, calibrate_cmd);
  return cli::run_check_graph(*registry, check_cmd);
}
