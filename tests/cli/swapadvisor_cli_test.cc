// SwapAdvisor runs for real (issue 18): a model whose step peaks at over 3x a CPU device's cap
// trains with `--algo swapadvisor`'s plan, passes `--check`, and the runtime's arena, which refuses
// what would pass the cap, measures a peak at or under it.
#include <algorithm>
#include <cstdio>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_util.h"

namespace cleave {
namespace {

using namespace cli_test;

TEST(Cli, SwapAdvisorTrainsAModelOverThreeTimesTheCap) {
  std::string model = "mlp:layers=24,hidden=64,input=64,classes=10,batch=4096";
  std::int64_t cap = 9 << 20;
  Outcome ideal = cleave("plan " + model + " --cluster cpu:devices=1 --algo ideal --json");
  ASSERT_EQ(ideal.code, 0) << ideal.err;
  std::int64_t peak_unlimited =
      nlohmann::json::parse(ideal.out)["plans"][0]["peak_memory_bytes"][0];
  EXPECT_GE(peak_unlimited, 3 * cap);

  std::string plan = (scratch() / "swapadvisor.json").string();
  Outcome planned = cleave("plan " + model + " --cluster cpu:devices=1,memory=9MiB --algo " +
                           "swapadvisor --seed 1 --json -o " + plan);
  ASSERT_EQ(planned.code, 0) << planned.err;
  auto p = nlohmann::json::parse(planned.out)["plans"][0];
  EXPECT_TRUE(p["violations"].empty());
  EXPECT_FALSE(nlohmann::json::parse(slurp(plan))["swaps"].empty());

  Outcome run = cleave("run " + plan + " --check --steps 2 --json");
  ASSERT_EQ(run.code, 0) << run.err;
  auto j = nlohmann::json::parse(run.out);
  EXPECT_TRUE(j["check"]["passed"].get<bool>());
  std::int64_t measured_peak = j["devices"][0]["peak_memory_bytes"];
  EXPECT_LE(measured_peak, cap);
  auto steps = j["step_times_s"].get<std::vector<double>>();
  std::printf("swapadvisor, %s on cpu:devices=1,memory=9MiB: peak %.2f MiB without swaps "
              "(predicted), %.2f MiB measured with them; step predicted %.4f s, measured %.4f s "
              "(fastest of %zu)\n",
              model.c_str(), static_cast<double>(peak_unlimited) / (1 << 20),
              static_cast<double>(measured_peak) / (1 << 20),
              j["predicted_step_time_s"].get<double>(),
              *std::min_element(steps.begin(), steps.end()), steps.size());
}

// Weights and optimizer state swapped: a model whose blocks held before the step (8 MiB) are
// most of its peak (13.1 MiB) trains under a 9 MiB cap with `--check` passing, the swapped-in
// copies freed after their last reader as the simulator counted them.
TEST(Cli, SwapAdvisorSwapsWeightsForReal) {
  std::string model = "mlp:layers=4,hidden=512,input=512,classes=10,batch=8";
  std::string plan = (scratch() / "swapadvisor_weights.json").string();
  Outcome planned = cleave("plan " + model + " --cluster cpu:devices=1,memory=9MiB --algo " +
                           "swapadvisor --seed 1 --json -o " + plan);
  ASSERT_EQ(planned.code, 0) << planned.err;
  auto p = nlohmann::json::parse(planned.out)["plans"][0];
  EXPECT_TRUE(p["violations"].empty());
  Outcome simulated = cleave("simulate " + plan);
  ASSERT_EQ(simulated.code, 0) << simulated.err;
  EXPECT_NE(simulated.out.find("% internal fragmentation"), std::string::npos) << simulated.out;
  Outcome run = cleave("run " + plan + " --check --steps 2 --json");
  ASSERT_EQ(run.code, 0) << run.err;
  auto j = nlohmann::json::parse(run.out);
  EXPECT_TRUE(j["check"]["passed"].get<bool>());
  EXPECT_LE(j["devices"][0]["peak_memory_bytes"].get<std::int64_t>(), 9 << 20);
}

}  // namespace
}  // namespace cleave
