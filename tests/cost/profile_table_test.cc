// Measured profile tables (cleave.profile/1): round trip, errors that name the entry and field,
// lookups in the cost model, and a measured entry changing a simulated step by what it says.
#include <unistd.h>

#include <filesystem>
#include <gtest/gtest.h>

#include "autodiff/training_graph.h"
#include "cluster/presets.h"
#include "cost/cost_model.h"
#include "cost/profile_table.h"
#include "fuzz_regressions.h"
#include "lower/program.h"
#include "models/model_zoo.h"
#include "sim/predict.h"

namespace cleave::cost {
namespace {

ProfileTable sample_table() {
  ProfileTable t;
  t.source = "hand-written for the test";
  DeviceCalibration a100;
  a100.efficiency["conv2d"] = 0.55;
  a100.default_efficiency = 0.4;
  a100.memory_efficiency = 0.85;
  a100.launch = Seconds(4e-6);
  EXPECT_TRUE(t.add_calibration("A100-SXM4-80GB", a100).is_ok());
  EXPECT_TRUE(t.add_calibration("cpu-core", {}).is_ok());
  EXPECT_TRUE(t.add({{"conv2d",
                      "padding=[1,1], stride=[1,1]",
                      {32, 64, 56, 56, 64, 3, 3},
                      ir::DType::fp16,
                      "A100-SXM4-80GB"},
                     {Seconds(1.25e-4), 20}})
                  .is_ok());
  EXPECT_TRUE(
      t.add({{"relu", "", {32, 64}, ir::DType::fp32, "cpu-core"}, {Seconds(3e-6), 0}}).is_ok());
  return t;
}

std::string temp_path(std::string const& name) {
  return (std::filesystem::temp_directory_path() /
          ("cleave_profile_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

TEST(ProfileTable, SaveLoadRoundTrip) {
  ProfileTable t = sample_table();
  std::string path = temp_path("round_trip.json");
  ASSERT_TRUE(save_profile(t, path).is_ok());
  auto back = load_profile(path);
  ASSERT_TRUE(back.has_value()) << back.error().to_string();
  EXPECT_EQ(back->source, t.source);
  auto a = t.entries(), b = back->entries();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].key, b[i].key);
    EXPECT_EQ(a[i].measurement.seconds, b[i].measurement.seconds);
    EXPECT_EQ(a[i].measurement.samples, b[i].measurement.samples);
  }
  auto const* cal = back->calibration("A100-SXM4-80GB");
  ASSERT_NE(cal, nullptr);
  EXPECT_EQ(cal->efficiency.at("conv2d"), 0.55);
  EXPECT_EQ(cal->default_efficiency, 0.4);
  EXPECT_EQ(cal->memory_efficiency, 0.85);
  EXPECT_EQ(cal->launch, Seconds(4e-6));
  EXPECT_NE(back->calibration("cpu-core"), nullptr);
  EXPECT_EQ(profile_to_json(*back), profile_to_json(t));
  std::filesystem::remove(path);
}

TEST(ProfileTable, FindIsExact) {
  ProfileTable t = sample_table();
  std::vector<std::int64_t> extents{32, 64};
  EXPECT_NE(t.find({"relu", "", extents, ir::DType::fp32, "cpu-core"}), nullptr);
  EXPECT_EQ(t.find({"relu", "", extents, ir::DType::fp16, "cpu-core"}), nullptr);
  EXPECT_EQ(t.find({"relu", "", extents, ir::DType::fp32, "A100-SXM4-80GB"}), nullptr);
  EXPECT_EQ(t.find({"relu", "alpha=1.0", extents, ir::DType::fp32, "cpu-core"}), nullptr);
  std::vector<std::int64_t> other{32, 65};
  EXPECT_EQ(t.find({"relu", "", other, ir::DType::fp32, "cpu-core"}), nullptr);
}

struct Bad {
  std::string text;
  std::string message;
};

TEST(ProfileTable, BadFilesNameTheEntryAndField) {
  std::string const entry = R"({"op":"relu","extents":[4],"dtype":"fp32","device_kind":"k",)";
  Bad cases[] = {
      {R"({"format":"cleave.plan/1"})", "the file's format is \"cleave.plan/1\""},
      {R"({"entries":[]})", "not a cleave profile table"},
      {R"({"format":"cleave.profile/1","entries":[)", "malformed JSON"},
      {R"({"format":"cleave.profile/1","extra":1})", "top level: unknown key 'extra'"},
      {R"({"format":"cleave.profile/1","entries":[)" + entry + R"("seconds":-1}]})",
       "time -1.0 s is not a positive number of seconds"},
      {R"({"format":"cleave.profile/1","entries":[)" + entry + R"("seconds":"1"}]})",
       "entry 0, key 'seconds': expected a number, found a string"},
      {R"({"format":"cleave.profile/1","entries":[{"op":"relu","extents":[4],"dtype":"fp8",)"
       R"("device_kind":"k","seconds":1}]})",
       "entry 0, key 'dtype': unknown dtype 'fp8'"},
      {R"({"format":"cleave.profile/1","entries":[{"op":"relu","extents":[0],"dtype":"fp32",)"
       R"("device_kind":"k","seconds":1}]})",
       "extent 0 is below 1"},
      {R"({"format":"cleave.profile/1","entries":[{"op":"relu","dtype":"fp32",)"
       R"("device_kind":"k","seconds":1}]})",
       "entry 0: missing key 'extents'"},
      {R"({"format":"cleave.profile/1","entries":[)" + entry + R"("seconds":1},)" + entry +
           R"("seconds":2}]})",
       "measured twice"},
      {R"({"format":"cleave.profile/1","calibrations":[{"device_kind":"k",)"
       R"("efficiency":{"matmul":1.5}}]})",
       "efficiency of 'matmul' must be a fraction of the peak in (0, 1]"},
      {R"({"format":"cleave.profile/1","calibrations":[{"device_kind":"k","launch_s":-1}]})",
       "launch_s must be a non-negative number of seconds"},
  };
  for (auto const& c : cases) {
    auto t = profile_from_json(c.text);
    ASSERT_FALSE(t.has_value()) << c.text;
    EXPECT_NE(t.error().to_string().find(c.message), std::string::npos) << c.text << "\n"
                                                                        << t.error().to_string();
  }
  auto missing = load_profile(temp_path("no_such_file.json"));
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().to_string().find("in profile table"), std::string::npos);
}

TEST(CostModelProfile, ExactEntryOverridesTheRoofline) {
  auto cluster = cluster::load_cluster("dgx-a100");
  ASSERT_TRUE(cluster.has_value());
  ir::Attrs attrs{{"stride", std::vector<std::int64_t>{1, 1}}};
  tdl::Box box{{0, 32}, {0, 64}, {0, 56}};
  ProfileTable t;
  ASSERT_TRUE(t.add({{"conv2d",
                      attrs.to_string(),
                      {32, 64, 56},
                      ir::DType::fp16,
                      cluster->devices()[0].kind},
                     {Seconds(0.5), 3}})
                  .is_ok());
  ComputeRequest r{"conv2d",       &attrs,      ir::DType::fp16,     box,
                   Flops(1000000), Bytes(1000), cluster::DeviceId(0)};
  CostModel plain(*cluster);
  CostModel profiled(*cluster, {}, t);
  EXPECT_FALSE(plain.compute(r).measured);
  auto hit = profiled.compute(r);
  EXPECT_TRUE(hit.measured);
  EXPECT_EQ(hit.time, Seconds(0.5));
  // Another box (a piece offset elsewhere with the same extents) finds the same entry...
  tdl::Box shifted{{32, 64}, {0, 64}, {0, 56}};
  r.box = shifted;
  EXPECT_TRUE(profiled.compute(r).measured);
  // ... other attributes or another dtype do not.
  ir::Attrs strided{{"stride", std::vector<std::int64_t>{2, 2}}};
  r.attrs = &strided;
  EXPECT_FALSE(profiled.compute(r).measured);
  r.attrs = &attrs;
  r.dtype = ir::DType::fp32;
  EXPECT_FALSE(profiled.compute(r).measured);
  EXPECT_EQ(profiled.compute(r).time, plain.compute(r).time);
}

TEST(CostModelProfile, CalibrationReplacesTheDefaults) {
  auto cluster = cluster::load_cluster("dgx-a100");
  ASSERT_TRUE(cluster.has_value());
  auto const& dev = cluster->devices()[0];
  double peak = dev.peak_for(ir::DType::fp16)->value();
  ProfileTable t;
  DeviceCalibration cal;
  cal.efficiency["matmul"] = 0.25;
  cal.default_efficiency = 0.1;
  cal.launch = Seconds(0);
  ASSERT_TRUE(t.add_calibration(dev.kind, cal).is_ok());
  CostModel model(*cluster, {}, t);
  tdl::Box box{{0, 8}};
  ComputeRequest r{"matmul",
                   nullptr,
                   ir::DType::fp16,
                   box,
                   Flops(1'000'000'000'000),
                   Bytes(0),
                   cluster::DeviceId(0)};
  EXPECT_NEAR(model.compute(r).time.value(), 1e12 / (peak * 0.25), 1e-12);
  r.op_type = "conv2d";  // not calibrated: the calibration's default, not CostOptions' 0.6
  EXPECT_NEAR(model.compute(r).time.value(), 1e12 / (peak * 0.1), 1e-12);
  EXPECT_FALSE(model.compute(r).measured);
}

// On one device the step is the sum of the task times, so pricing every piece of one kind from
// the table changes the step by exactly (measured - roofline) summed over those pieces.
TEST(CostModelProfile, MeasuredEntryChangesTheSimulatedStep) {
  auto registry = ops::OpRegistry::with_builtins();
  auto forward = models::ModelZoo::with_builtins().build(
      "mlp:layers=2,hidden=64,input=32,classes=8,batch=16", *registry);
  ASSERT_TRUE(forward.has_value());
  auto graph = autodiff::build_training_graph(*forward, *registry);
  ASSERT_TRUE(graph.has_value());
  auto cluster = cluster::load_cluster("v100x1");
  ASSERT_TRUE(cluster.has_value());
  auto program = lower::lower(*graph, plan::single_device_plan(*graph, *registry), *registry);
  ASSERT_TRUE(program.has_value()) << program.error().to_string();

  CostModel plain(*cluster);
  auto before = sim::predict(*graph, *program, plain, 16);
  EXPECT_EQ(before.measured_tasks, 0);
  // The most expensive compute task's key.
  auto timings =
      sim::timings_of(*program, *graph, plain, sim::collective_costs(*program, *graph, plain))
          .tasks;
  std::size_t top = 0;
  for (std::size_t i = 0; i < program->tasks.size(); ++i)
    if (program->tasks[i].kind == lower::TaskKind::compute &&
        timings[i].seconds > timings[top].seconds)
      top = i;
  auto const& task = program->tasks[top];
  auto const& op = graph->op(task.op);
  ProfileKey key{op.type,
                 op.attrs.to_string(),
                 {},
                 graph->tensor(task.tensor).type.dtype,
                 cluster->devices()[0].kind};
  for (auto const& interval : task.iteration)
    key.extents.push_back(interval.size());
  double measured = 3 * timings[top].seconds;
  ProfileTable table;
  ASSERT_TRUE(table.add({key, {Seconds(measured), 5}}).is_ok());

  // Every compute task with the same key is priced from the table.
  double expected_delta = 0;
  std::int64_t matching = 0;
  for (std::size_t i = 0; i < program->tasks.size(); ++i) {
    auto const& t = program->tasks[i];
    if (t.kind != lower::TaskKind::compute) continue;
    auto const& o = graph->op(t.op);
    std::vector<std::int64_t> extents;
    for (auto const& interval : t.iteration)
      extents.push_back(interval.size());
    if (o.type == key.op && o.attrs.to_string() == key.attrs && extents == key.extents &&
        graph->tensor(t.tensor).type.dtype == key.dtype) {
      expected_delta += measured - timings[i].seconds;
      ++matching;
    }
  }
  ASSERT_GE(matching, 1);

  CostModel profiled(*cluster, {}, table);
  auto after = sim::predict(*graph, *program, profiled, 16);
  EXPECT_EQ(after.measured_tasks, matching);
  EXPECT_EQ(after.priced_tasks, before.priced_tasks);
  EXPECT_NEAR(after.step_time_s - before.step_time_s, expected_delta, 1e-9 * before.step_time_s);
  EXPECT_GT(after.step_time_s, before.step_time_s);
}

// Inputs fuzz/profile_json_fuzz.cc found crashing (scripts/fuzz.sh), with the outcome each must
// now have.
TEST(ProfileTable, FuzzRegressionsGiveTheirOutcome) {
  testing::expect_fuzz_outcomes(
      CLEAVE_PROFILE_FUZZ_REGRESSIONS,
      {
          // 1.797693134862315e+7308: nlohmann throws out_of_range, not parse_error; it was
          // uncaught.
          {"number_beyond_double.json", "malformed JSON: number overflow parsing"},
      },
      [](std::string const& text) { return testing::status_of(profile_from_json(text)); });
}

}  // namespace
}  // namespace cleave::cost
