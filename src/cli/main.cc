// cleave: the command-line program. A thin shell over the library: it parses options, calls one
// command and turns errors into a message and a non-zero exit code.
#include <CLI/CLI.hpp>

#include "cli/commands.h"

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

  CLI11_PARSE(app, argc, argv);

  auto registry = ops::OpRegistry::with_builtins();
  for (auto const& file : semantics_files) {
    auto st = registry->load_semantics_file(file);
    if (!st) return cli::report(st.error());
  }
  if (*op) return cli::run_op(*registry, op_cmd);
  if (*ops_list) return cli::run_ops(*registry, ops_json);
  return cli::run_check_graph(*registry, check_cmd);
}
