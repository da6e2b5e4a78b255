#include "runtime_mpi/mpi_util.h"

#include <chrono>
#include <gtest/gtest.h>
#include <regex>

namespace cleave::mpi_test {
namespace {

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

// mpirun refuses root and more ranks than cores unless told; Open MPI waits
// odls_base_sigkill_timeout seconds (1 by default) between asking the ranks left to stop and
// killing them, so a failed job's mpirun lingers that long after every rank has ended: 0 ends it
// once they have (docs/runtime.md "Over MPI").
Outcome shell(std::string const& command) {
  Outcome r{cli_test::run_command(
      "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
      "OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_odls_base_sigkill_timeout=0 " +
      command)};
  r.ended_us = now_us();
  return r;
}

Outcome mpirun(int ranks, std::string const& args, std::string const& mpirun_args,
               std::string const& prefix) {
  return shell(prefix + " " + CLEAVE_MPIRUN + " " + mpirun_args + " -np " +
               std::to_string(ranks) + " " + CLEAVE_BINARY + " run " + args);
}

std::string plan_file(std::string const& model, int devices, std::string const& algo) {
  auto path = cli_test::scratch() / (algo + "_" + std::to_string(devices) + "_" +
                                     model.substr(0, model.find(':')) + ".json");
  auto r = shell(std::string(CLEAVE_BINARY) + " plan '" + model +
                 "' --cluster cpu:devices=" + std::to_string(devices) + " --algo " + algo +
                 " --budget-iterations 300 -o " + path.string());
  EXPECT_EQ(r.code, 0) << r.err;
  return path.string();
}

std::int64_t fault_time_us(std::string const& err) {
  std::smatch m;
  EXPECT_TRUE(std::regex_search(err, m, std::regex(R"(rank \d+ [a-z ()A-Z]+ at (\d+) us)"))) << err;
  return m.empty() ? 0 : std::stoll(m[1]);
}

}  // namespace cleave::mpi_test
