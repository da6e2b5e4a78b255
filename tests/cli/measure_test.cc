// `--measure FILE` (issue 15, op times measured on demand): pieces are timed with the runtime's
// kernels while a search prices plans, kept in FILE, and reused by later runs; bad uses are clear
// errors that leave FILE as it was.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_util.h"

namespace cleave {
namespace {

using namespace cli_test;

constexpr char const* model = "mlp:layers=2,hidden=64,input=32,classes=8,batch=16";

nlohmann::json first_plan(Outcome const& o) {
  return nlohmann::json::parse(o.out)["plans"][0];
}

TEST(CliMeasure, TimesPiecesOnceAndLaterRunsReuseThem) {
  std::string file = (scratch() / "measured.json").string();
  std::filesystem::remove(file);
  std::string args = std::string("plan ") + model +
                     " --cluster cpu:devices=2 --algo flexflow --budget-iterations 40 --json ";
  Outcome first = cleave(args + "--measure " + file);
  ASSERT_EQ(first.code, 0) << first.err;
  EXPECT_NE(first.err.find("measured "), std::string::npos) << first.err;
  EXPECT_EQ(first.err.find("measured 0 new pieces"), std::string::npos) << first.err;
  auto table = nlohmann::json::parse(slurp(file));
  EXPECT_EQ(table["format"], "cleave.profile/1");
  std::size_t entries = table["entries"].size();
  EXPECT_GT(entries, 5u);
  // Every compute piece of the plan was measured (reduce tasks of collectives are priced by the
  // roofline: they are not one op's piece).
  auto row = first_plan(first);
  EXPECT_GT(row["measured_tasks"].get<int>(), 0);
  EXPECT_LE(row["measured_tasks"], row["priced_tasks"]);

  // The same search again times nothing new and predicts what --profile FILE predicts.
  Outcome again = cleave(args + "--measure " + file);
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_NE(again.err.find("measured 0 new pieces"), std::string::npos) << again.err;
  EXPECT_EQ(nlohmann::json::parse(slurp(file))["entries"].size(), entries);
  Outcome profiled = cleave(args + "--profile " + file);
  ASSERT_EQ(profiled.code, 0) << profiled.err;
  EXPECT_EQ(first_plan(again)["step_time_s"], first_plan(profiled)["step_time_s"]);
  EXPECT_EQ(first_plan(again)["measured_tasks"], first_plan(profiled)["measured_tasks"]);
}

TEST(CliMeasure, BadUsesAreClearErrorsAndLeaveTheFile) {
  std::string plan = std::string("plan ") + model + " --algo data-parallel ";
  Outcome gpu = cleave(plan + "--cluster p100-4x4 --measure " + (scratch() / "m.json").string());
  EXPECT_NE(gpu.code, 0);
  EXPECT_NE(gpu.err.find("cpu preset"), std::string::npos) << gpu.err;

  std::string bad = write("bad_profile.json", "{\"format\":\"cleave.profile/1\",\"entries\":[");
  Outcome malformed = cleave(plan + "--cluster cpu:devices=2 --measure " + bad);
  EXPECT_NE(malformed.code, 0);
  EXPECT_NE(malformed.err.find("bad_profile.json"), std::string::npos) << malformed.err;
  EXPECT_EQ(slurp(bad), "{\"format\":\"cleave.profile/1\",\"entries\":[");

  Outcome both = cleave(plan + "--cluster cpu:devices=2 --measure " + bad + " --profile " + bad);
  EXPECT_NE(both.code, 0);
  EXPECT_NE(both.err.find("give one"), std::string::npos) << both.err;
}

}  // namespace
}  // namespace cleave
