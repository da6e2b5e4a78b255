// `mpirun -np N cleave run PLAN --backend mpi` as a user runs it (issue 19): every algorithm's
// plans of two zoo models on 2 and 4 ranks pass the check; a wrong rank count is an error before
// any work; a rank killed by SIGKILL and a rank out of memory each end the job within 1 s with
// an error naming the rank; the merged trace is a Chrome trace with a process per rank.
#include <cstdio>
#include <filesystem>
#include <map>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <set>

#include "runtime_mpi/mpi_util.h"
#include "search/search.h"

namespace cleave {
namespace {

using cli_test::scratch;
using cli_test::slurp;
using namespace mpi_test;

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
