// `mpirun -np N cleave run PLAN --backend mpi` as a user runs it (issue 19): every algorithm's
// plans of two zoo models on 2 and 4 ranks pass the check; a wrong rank count is an error before
// any work; a rank killed by SIGKILL and a rank out of memory each end the job within 1 s with
// an error naming the rank; the merged trace is a Chrome trace with a process per rank.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "cli/cli_util.h"
#include "search/search.h"

namespace cleave {
namespace {

using cli_test::scratch;
using cli_test::slurp;

// A command's outcome and when it ended.
struct Outcome : cli_test::Outcome {
  std::int64_t ended_us = 0;  // system clock, when mpirun had exited
};

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Runs a command line, capturing both streams. mpirun refuses root and more ranks than cores
// unless told; Open MPI waits odls_base_sigkill_timeout seconds (1 by default) between asking
// the ranks left to stop and killing them, so a failed job's mpirun lingers that long after every
// rank has ended: 0 ends it once they have (docs/runtime.md "Over MPI").
Outcome shell(std::string const& command) {
  Outcome r{cli_test::run_command(
      "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
      "OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_odls_base_sigkill_timeout=0 " +
      command)};
  r.ended_us = now_us();
  return r;
}

Outcome mpirun(int ranks, std::string const& args) {
  return shell(std::string(CLEAVE_MPIRUN) + " -np " + std::to_string(ranks) + " " + CLEAVE_BINARY +
               " run " + args);
}

// A plan file of `model` on cpu:devices=N by `algo` (its name tells them apart).
std::string plan_file(std::string const& model, int devices, std::string const& algo) {
  auto path = scratch() / (algo + "_" + std::to_string(devices) + "_" +
                           model.substr(0, model.find(':')) + ".json");
  auto r = shell(std::string(CLEAVE_BINARY) + " plan '" + model +
                 "' --cluster cpu:devices=" + std::to_string(devices) + " --algo " + algo +
                 " --budget-iterations 300 -o " + path.string());
  EXPECT_EQ(r.code, 0) << r.err;
  return path.string();
}

constexpr char const* mlp = "mlp:layers=2,hidden=8,input=6,classes=3,batch=8";
constexpr char const* gpt = "gpt:layers=1,hidden=8,heads=2,seq=4,vocab=7,batch=2";

// "rank 1 kills itself (SIGKILL) at T us", "rank 1 ends the job at T us": T.
std::int64_t fault_time_us(std::string const& err) {
  std::smatch m;
  EXPECT_TRUE(std::regex_search(err, m, std::regex(R"(rank \d+ [a-z ()A-Z]+ at (\d+) us)"))) << err;
  return m.empty() ? 0 : std::stoll(m[1]);
}

struct MatrixCase {
  int ranks;
  std::string algo;
};

class EveryAlgorithm : public ::testing::TestWithParam<MatrixCase> {};

TEST_P(EveryAlgorithm, PlansOfTwoModelsPassTheCheckOverMpi) {
  auto [ranks, algo] = GetParam();
  for (char const* model : {mlp, gpt}) {
    auto plan = plan_file(model, ranks, algo);
    auto r = mpirun(ranks, plan + " --backend mpi --steps 2 --check --json");
    ASSERT_EQ(r.code, 0) << model << "\n" << r.err;
    auto j = nlohmann::json::parse(r.out);  // rank 0 alone prints
    EXPECT_TRUE(j["check"]["passed"].get<bool>()) << model;
    EXPECT_EQ(j["devices"].size(), static_cast<std::size_t>(ranks));
    EXPECT_EQ(j["step_times_s"].size(), 2u);
    EXPECT_GT(j["devices"][0]["kernel_tasks"].get<int>(), 0);
    EXPECT_NE(j["backend"].get<std::string>().find(std::to_string(ranks) + " ranks"),
              std::string::npos);
    // Every rank's statistics reached rank 0; the one-device plans (single, and SwapAdvisor's on
    // the first device) leave every device but the first idle.
    bool one_device =
        algo == "single" || algo == "ideal" || algo == "swapadvisor" || algo == "lru-swap";
    for (auto const& d : j["devices"]) {
      if (one_device) continue;
      EXPECT_GT(d["kernel_tasks"].get<int>() + d["interpreted_tasks"].get<int>(), 0)
          << model << " " << d["name"];
    }
  }
}

std::vector<MatrixCase> matrix() {
  std::vector<MatrixCase> out;
  for (int ranks : {2, 4})
    for (auto const& algo : search::algorithms())
      out.push_back({ranks, algo});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Mpi, EveryAlgorithm, ::testing::ValuesIn(matrix()), [](auto const& info) {
  std::string name = info.param.algo + "_np" + std::to_string(info.param.ranks);
  for (char& c : name)
    if (c == '-') c = '_';
  return name;
});

// Two devices per rank: a collective's members on one rank exchange point to point (its
// group has no communicator of distinct ranks); the trace has a process per rank, each with
// both its devices' threads.
TEST(Mpi, SeveralDevicesPerRankPassTheCheck) {
  for (char const* algo : {"data-parallel", "tofu"})
    for (char const* model : {mlp, gpt}) {
      auto plan = plan_file(model, 4, algo);
      auto trace = (scratch() / "trace2.json").string();
      auto r = mpirun(2, plan + " --backend mpi --devices-per-rank 2 --steps 2 --check --json " +
                             "--trace " + trace);
      ASSERT_EQ(r.code, 0) << algo << " " << model << "\n" << r.err;
      auto j = nlohmann::json::parse(r.out);
      EXPECT_TRUE(j["check"]["passed"].get<bool>()) << algo << " " << model;
      EXPECT_EQ(j["backend"], "mpi (2 ranks, 2 devices per rank)");
      std::set<std::pair<int, int>> threads;  // (process, thread) with events
      auto events = nlohmann::json::parse(slurp(trace))["traceEvents"];
      for (auto const& e : events)
        if (e["ph"] == "X") threads.insert({e["pid"].get<int>(), e["tid"].get<int>() / 4});
      // Rank r's process shows devices 2r and 2r + 1 (4 threads per device).
      std::set<std::pair<int, int>> expected{{0, 0}, {0, 1}, {1, 2}, {1, 3}};
      EXPECT_EQ(threads, expected) << algo << " " << model;
    }
}

TEST(Mpi, ARankCountThatDoesNotMatchThePlanIsAnErrorBeforeAnyWork) {
  auto plan = plan_file(mlp, 2, "tofu");
  auto r = mpirun(3, plan + " --backend mpi --steps 100000");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("the plan has 2 devices but the job's 3 ranks with 1 device(s) each run "
                       "3: start it with mpirun -np 2"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out, "");
  auto odd = mpirun(1, plan + " --backend mpi --devices-per-rank 3");
  EXPECT_NE(odd.code, 0);
  EXPECT_NE(odd.err.find("choose a --devices-per-rank that divides 2"), std::string::npos)
      << odd.err;
}

TEST(Mpi, AKilledRankEndsTheJobWithinASecondNamingTheRank) {
  auto plan = plan_file(mlp, 2, "tofu");
  auto r = mpirun(2, plan + " --backend mpi --steps 3 --kill-rank 1");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("process rank 1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("signal 9"), std::string::npos) << r.err;
  auto ended_s = static_cast<double>(r.ended_us - fault_time_us(r.err)) * 1e-6;
  std::printf("killed rank: the job ended %.3f s after the kill\n", ended_s);
  EXPECT_LT(ended_s, 1.0);
}

TEST(Mpi, ARankOutOfMemoryEndsTheJobWithinASecondNamingRankDeviceAndCause) {
  auto plan = plan_file(mlp, 2, "tofu");
  auto r = mpirun(2, plan + " --backend mpi --steps 3 --oom-rank 1");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("error[out_of_memory]: device cpu1 is out of memory"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("rank 1 of 2 on host"), std::string::npos) << r.err;
  auto ended_s = static_cast<double>(r.ended_us - fault_time_us(r.err)) * 1e-6;
  std::printf("out of memory: the job ended %.3f s after the failing rank's error\n", ended_s);
  EXPECT_LT(ended_s, 1.0);
}

TEST(Mpi, TheMergedTraceHasAProcessPerRank) {
  auto plan = plan_file(gpt, 4, "tofu");
  auto trace = (scratch() / "trace.json").string();
  auto r = mpirun(4, plan + " --backend mpi --trace " + trace);
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(slurp(trace));
  std::map<int, std::string> processes;
  std::map<int, int> spans;  // per process: its complete events
  for (auto const& e : j["traceEvents"]) {
    int pid = e["pid"];
    if (e["ph"] == "M" && e["name"] == "process_name") processes[pid] = e["args"]["name"];
    if (e["ph"] == "X") {
      ++spans[pid];
      EXPECT_GE(e["ts"].get<double>(), 0);
      EXPECT_GE(e["dur"].get<double>(), 0);
    }
  }
  ASSERT_EQ(processes.size(), 4u);
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_EQ(processes[rank], "rank " + std::to_string(rank));
    EXPECT_GT(spans[rank], 0) << "rank " << rank << " has no events";
  }
}

// calibrate --backend mpi fits MPI's transfers: a profile and a spec with a link and a latency.
TEST(Mpi, CalibrateMeasuresTransfersOverMpi) {
  auto plan = plan_file("mlp:layers=2,hidden=256,input=256,classes=8,batch=32", 2, "tofu");
  auto profile = (scratch() / "mpi-profile.json").string();
  auto r = shell(std::string(CLEAVE_MPIRUN) + " -np 2 " + CLEAVE_BINARY +
                 " calibrate --backend mpi --cluster cpu:devices=2 --steps 1 --plan " + plan +
                 " -o " + profile + " --json");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);  // rank 0 alone prints
  EXPECT_EQ(j["backend"], "mpi");
  EXPECT_GT(j["copy_bandwidth_bytes_per_s"].get<double>(), 0);
  EXPECT_GT(j["hop_latency_s"].get<double>(), 0);
  EXPECT_GT(j["entries"].get<int>(), 0);
  auto table = nlohmann::json::parse(slurp(profile));
  EXPECT_NE(table["source"].get<std::string>().find("mpi backend"), std::string::npos);
  // A job that does not match the cluster is an error before anything is measured.
  auto wrong = shell(std::string(CLEAVE_MPIRUN) + " -np 3 " + CLEAVE_BINARY +
                     " calibrate --backend mpi --cluster cpu:devices=2 --plan " + plan);
  EXPECT_NE(wrong.code, 0);
  EXPECT_NE(wrong.err.find("start it with mpirun -np 2"), std::string::npos) << wrong.err;
}

}  // namespace
}  // namespace cleave
