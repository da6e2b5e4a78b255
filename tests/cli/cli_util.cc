#include "cli_util.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sys/wait.h>

namespace cleave::cli_test {

std::filesystem::path scratch() {
  auto dir =
      std::filesystem::temp_directory_path() / ("cleave_cli_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

std::string slurp(std::filesystem::path const& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), {}};
}

Outcome run_command(std::string const& command) {
  auto dir = scratch();
  std::string cmd = command + " >" + (dir / "out").string() + " 2>" + (dir / "err").string();
  int status = std::system(cmd.c_str());
  Outcome r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(dir / "out");
  r.err = slurp(dir / "err");
  return r;
}

Outcome cleave(std::string const& args) {
  return run_command(std::string(CLEAVE_BINARY) + " " + args);
}

std::string write(std::string const& name, std::string const& text) {
  auto path = scratch() / name;
  std::ofstream(path) << text;
  return path.string();
}

}  // namespace cleave::cli_test
