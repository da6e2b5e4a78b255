// The `cleave` subcommands. Each takes its parsed options and returns the process exit code;
// errors are printed to stderr as "error[code]: ..." and give exit code 1.
#pragma once

#include <optional>
#include <string>
#include <vector>

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

// How a forward graph becomes a training graph (autodiff).
struct TrainingFlags {
  std::string optimizer = "sgd";  // sgd (with momentum) or adam
  std::optional<double> learning_rate;
  std::string loss = "loss";
};

int run_models(bool json);

struct InspectCommand {
  std::string model;  // zoo spec or graph file
  TrainingFlags training;
  bool json = false;
};
int run_inspect(ops::OpRegistry const& registry, InspectCommand const& cmd);

struct ExportGraphCommand {
  std::string model;
  std::string output;
  TrainingFlags training;
  bool forward_only = false;
};
int run_export_graph(ops::OpRegistry const& registry, ExportGraphCommand const& cmd);

struct ClustersCommand {
  std::string show;         // --show SPEC: print one cluster
  std::string export_spec;  // --export SPEC: write it as cleave.cluster/1 ...
  std::string output;       // ... to -o FILE
  bool json = false;
};
// Without --show or --export: the presets with their keys, defaults and sources.
int run_clusters(ClustersCommand const& cmd);

// Prints the error to stderr and returns 1.
int report(Error const& error);

}  // namespace cleave::cli
