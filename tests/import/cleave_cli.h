// Runs the `cleave` program (CLEAVE_BINARY) from a test and captures what it prints, for the
// tests of real models exported by PyTorch (import_models_test.cc, import_coverage_test.cc).
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/wait.h>

namespace cli_test {

struct Outcome {
  int code = -1;
  std::string out, err;
  double seconds = 0;
};

inline std::string slurp(std::filesystem::path const& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), {}};
}

inline Outcome cleave(std::string const& args) {
  auto dir =
      std::filesystem::temp_directory_path() / ("cleave_import_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string cmd = std::string(CLEAVE_BINARY) + " " + args + " >" + (dir / "out").string() +
                    " 2>" + (dir / "err").string();
  auto start = std::chrono::steady_clock::now();
  int status = std::system(cmd.c_str());
  Outcome r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(dir / "out");
  r.err = slurp(dir / "err");
  return r;
}

}  // namespace cli_test
