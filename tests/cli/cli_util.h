// What the tests of the `cleave` program share: running it as a real process with its streams
// captured, and a scratch directory per test process.
#pragma once

#include <filesystem>
#include <string>

namespace cleave::cli_test {

struct Outcome {
  int code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

std::filesystem::path scratch();
std::string slurp(std::filesystem::path const& p);
// Runs a shell command line and captures both streams.
Outcome run_command(std::string const& command);
// Runs `cleave ARGS` (ARGS already shell-quoted) and captures both streams.
Outcome cleave(std::string const& args);
// Writes `text` to a file of the scratch directory and returns its path.
std::string write(std::string const& name, std::string const& text);

}  // namespace cleave::cli_test
