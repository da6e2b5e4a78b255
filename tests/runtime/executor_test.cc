// The executor on small models: partitioned runs compute what the unpartitioned graph computes,
// blocks are freed after their last reader, and the workers' figures add up.
#include <cmath>
#include <gtest/gtest.h>

#include "runtime/synthetic_data.h"
#include "runtime_test_util.h"

namespace cleave::runtime {
namespace {

using namespace testing;

constexpr char const* mlp = "mlp:layers=2,hidden=6,input=5,classes=3,batch=4";

TEST(Executor, DataParallelMlpMatchesTheReference) {
  auto registry = ops::OpRegistry::with_builtins();
  auto g = training_graph(mlp, *registry);
  auto cluster = *cluster::load_cluster("cpu:devices=2");
  auto p = make_plan(g, *registry, cluster, "cpu:devices=2", "data-parallel", 4);
  ASSERT_TRUE(p.has_value()) << p.error().to_string();
  auto report = run_and_check(g, *p, *registry, cluster, /*steps=*/2);
  ASSERT_TRUE(report.has_value()) << report.error().to_string();
  EXPECT_TRUE(report->passed) << report->worst << " " << report->max_relative_error;
  EXPECT_GT(report->tensors.size(), 3u);
}

TEST(Executor, StepFiguresAddUp) {
  auto registry = ops::OpRegistry::with_builtins();
  auto g = training_graph(mlp, *registry);
  auto cluster = *cluster::load_cluster("cpu:devices=2");
  auto p = make_plan(g, *registry, cluster, "cpu:devices=2", "tofu", 4);
  ASSERT_TRUE(p.has_value()) << p.error().to_string();
  auto exec = executor_for(g, *p, *registry, cluster);
  ASSERT_TRUE(exec.has_value()) << exec.error().to_string();
  auto step = exec->run_step(synthetic_sources(g, 1), {});
  ASSERT_TRUE(step.has_value()) << step.error().to_string();
  EXPECT_GT(step->step_s, 0);
  ASSERT_EQ(step->spans.size(), exec->program().tasks.size());
  for (std::size_t i = 0; i < step->spans.size(); ++i) {
    EXPECT_LE(step->spans[i].start_s, step->spans[i].end_s);
    for (auto dep : exec->program().tasks[i].deps)
      EXPECT_LE(step->spans[dep].end_s, step->spans[i].start_s);
  }
  ASSERT_EQ(step->devices.size(), 2u);
  for (auto const& d : step->devices) {
    EXPECT_GT(d.peak.value(), 0);
    EXPECT_LE(d.compute_s + d.comm_s, step->step_s * 1.0001);
  }
  EXPECT_TRUE(step->values.count("loss"));
}

TEST(Executor, SyntheticDataIsDeterministicAndInRange) {
  auto registry = ops::OpRegistry::with_builtins();
  auto g = training_graph("gpt:layers=1,hidden=8,heads=2,seq=4,vocab=7,batch=2", *registry);
  auto a = synthetic_sources(g, 3), b = synthetic_sources(g, 3), c = synthetic_sources(g, 4);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  for (auto const& t : g.tensors()) {
    if (g.producer(t.id).valid() || ir::is_floating(t.type.dtype)) continue;
    for (float x : a.at(t.name)) {
      EXPECT_GE(x, 0);
      EXPECT_LT(x, 7);
      EXPECT_EQ(x, std::floor(x));
    }
  }
}

}  // namespace
}  // namespace cleave::runtime
