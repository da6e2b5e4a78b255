// The `cleave` subcommands. Each takes its parsed options and returns the process exit code;
// errors are printed to stderr as "error[code]: ..." and give exit code 1.
#pragma once

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

// Prints the error to stderr and returns 1.
int report(Error const& error);

}  // namespace cleave::cli
