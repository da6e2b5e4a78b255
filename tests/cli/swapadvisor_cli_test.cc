// SwapAdvisor runs for real (issue 18): a model whose step peaks at over 3x a CPU device's cap
// trains with `--algo swapadvisor`'s plan, passes `--check`, and the runtime's arena, which refuses
// what would pass the cap, measures a peak at or under it; and `--swap` on another algorithm's
// plan (item 5) runs for real the same way.
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

// Weights and optimizer state that start the step on the host: a model whose blocks held before
// the step (8 MiB) pass a 6 MiB cap trains under it with `--check` passing over two steps (the
// second starts from the updated weights the first left on the host), the copies brought in
// freed after their last reader as the simulator counted them.
TEST(Cli, SwapAdvisorTrainsWithWeightsStartingOnTheHost) {
  std::string model = "mlp:layers=4,hidden=512,input=512,classes=10,batch=8";
  std::int64_t cap = 6 << 20;
  std::string plan = (scratch() / "swapadvisor_weights.json").string();
  // The paper's pool (the search may prefer bytes), which the runtime's arena hands out.
  Outcome planned = cleave("plan " + model + " --cluster cpu:devices=1,memory=6MiB --algo " +
                           "swapadvisor --option memory=pool --seed 1 --json -o " + plan);
  ASSERT_EQ(planned.code, 0) << planned.err;
  auto p = nlohmann::json::parse(planned.out)["plans"][0];
  EXPECT_TRUE(p["violations"].empty());
  auto swaps = nlohmann::json::parse(slurp(plan))["swaps"];
  EXPECT_TRUE(std::any_of(swaps.begin(), swaps.end(),
                          [](auto const& w) { return !w.contains("out_after"); }));
  EXPECT_TRUE(std::any_of(swaps.begin(), swaps.end(),
                          [](auto const& w) { return !w.contains("in_before"); }));
  Outcome simulated = cleave("simulate " + plan);
  ASSERT_EQ(simulated.code, 0) << simulated.err;
  EXPECT_NE(simulated.out.find("% internal fragmentation"), std::string::npos) << simulated.out;
  Outcome run = cleave("run " + plan + " --check --steps 2 --json");
  ASSERT_EQ(run.code, 0) << run.err;
  auto j = nlohmann::json::parse(run.out);
  EXPECT_TRUE(j["check"]["passed"].get<bool>());
  EXPECT_LE(j["devices"][0]["peak_memory_bytes"].get<std::int64_t>(), cap);
}

// A block swapped out and back twice: tests/cli/plans/mlp_swaps.json swaps each relu output out
// after its forward reader and back before the first of its two backward readers, which run one
// after the other in that plan's order (the linear's gradient, then the relu's). Each is swapped
// out again after the first and back before the second: the plan lowers, simulates within the
// cap and trains with `--check` passing, the runtime's host store taking each region twice.
// Swaps of one block that overlap are a clear error.
TEST(Cli, ABlockSwappedTwiceTrainsAndChecks) {
  auto plan = nlohmann::json::parse(slurp(std::string(CLEAVE_TEST_PLANS) + "/mlp_swaps.json"));
  auto swaps = plan["swaps"];
  ASSERT_EQ(swaps.size(), 4u);
  for (auto const& s : swaps) {
    auto again = s;
    again["out_after"] = s["in_before"];
    again["in_before"] = {s["in_before"][0].get<int>() + 1, 0};
    plan["swaps"].push_back(again);
  }
  std::string twice = write("mlp_swaps_twice.json", plan.dump());
  Outcome simulated = cleave("simulate " + twice + " --json");
  ASSERT_EQ(simulated.code, 0) << simulated.err;
  EXPECT_TRUE(nlohmann::json::parse(simulated.out)["plans"][0]["violations"].empty());
  Outcome run = cleave("run " + twice + " --check --steps 2 --json");
  ASSERT_EQ(run.code, 0) << run.err;
  auto j = nlohmann::json::parse(run.out);
  EXPECT_TRUE(j["check"]["passed"].get<bool>());
  EXPECT_LE(j["devices"][0]["peak_memory_bytes"].get<std::int64_t>(), 13 << 20);

  // The second swap-out of relu0 before the first swap-in brought it back.
  plan["swaps"][4]["out_after"] = swaps[0]["out_after"];
  Outcome bad = cleave("simulate " + write("mlp_swaps_overlap.json", plan.dump()));
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("the swaps of a block must alternate"), std::string::npos) << bad.err;
}

// `--swap` on Tofu's plan for two CPU devices capped at 10 MiB (each peaks at 13.0 MiB without
// swaps): the plan written carries the swaps and order, `simulate` replays it within the cap, and
// it trains for real with `--check` passing under the cap.
TEST(Cli, SwapAddsSwapsToATofuPlanThatRunsUnderTheCap) {
  std::string model = "mlp:batch=2048,hidden=256,layers=8,input=256";
  std::int64_t cap = 10 << 20;
  std::string plan = (scratch() / "tofu_swap.json").string();
  Outcome planned =
      cleave("plan " + model +
             " --cluster cpu:devices=2,memory=10MiB --algo tofu --swap --json -o " + plan);
  ASSERT_EQ(planned.code, 0) << planned.err;
  auto swap = nlohmann::json::parse(planned.out)["plans"][0]["swap"];
  EXPECT_TRUE(swap["changed"].get<bool>());
  EXPECT_TRUE(swap["fits"].get<bool>());
  ASSERT_EQ(swap["devices"].size(), 2u);
  for (auto const& d : swap["devices"]) {
    EXPECT_GT(d["peak_before_bytes"].get<std::int64_t>(), cap);
    EXPECT_LE(d["peak_bytes"].get<std::int64_t>(), cap);
    EXPECT_GT(d["swapped_bytes"].get<std::int64_t>(), 0);
  }
  EXPECT_GE(swap["slowdown"].get<double>(), 1.0);
  auto written = nlohmann::json::parse(slurp(plan));
  EXPECT_FALSE(written["swaps"].empty());
  EXPECT_EQ(written["order"].size(), 2u);

  Outcome simulated = cleave("simulate " + plan + " --json");
  ASSERT_EQ(simulated.code, 0) << simulated.err;
  EXPECT_TRUE(nlohmann::json::parse(simulated.out)["plans"][0]["fits"].get<bool>());

  Outcome run = cleave("run " + plan + " --check --steps 2 --json");
  ASSERT_EQ(run.code, 0) << run.err;
  auto j = nlohmann::json::parse(run.out);
  EXPECT_TRUE(j["check"]["passed"].get<bool>());
  for (auto const& d : j["devices"])
    EXPECT_LE(d["peak_memory_bytes"].get<std::int64_t>(), cap);
}

TEST(Cli, SwapOnAPlanThatFitsSaysSoAndChangesNothing) {
  Outcome o = cleave("plan mlp:batch=16 --cluster cpu:devices=2 --swap");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("swaps (--swap), data-parallel: no device over capacity; the plan is "
                       "unchanged"),
            std::string::npos)
      << o.out;
}

// A device that cannot fit: an error naming it, its shortfall and what no swap moves; the plan
// asked for is written with the swaps found.
TEST(Cli, SwapThatCannotFitFailsNamingTheDevice) {
  std::string plan = (scratch() / "swap_cannot_fit.json").string();
  Outcome o = cleave("plan mlp:batch=16 --cluster cpu:devices=2,memory=8MiB --swap -o " + plan);
  EXPECT_NE(o.code, 0);
  EXPECT_NE(o.err.find("the plan does not fit even with swaps"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("cpu0 is "), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("could not be swapped"), std::string::npos) << o.err;
  EXPECT_FALSE(nlohmann::json::parse(slurp(plan))["swaps"].empty());
}

}  // namespace
}  // namespace cleave
