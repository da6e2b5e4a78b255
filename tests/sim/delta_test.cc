// Delta simulation's guarantee: after any sequence of single-op changes, the prediction is bit for
// bit what lowering and predicting the changed plan in full gives, on random plans of small
// training graphs over a hierarchical cluster; an undone change restores the prediction before it.
#include <gtest/gtest.h>
#include <utility>

#include "autodiff/training_graph.h"
#include "cluster/presets.h"
#include "lower/test_models.h"
#include "models/model_zoo.h"
#include "sim/delta.h"

namespace cleave::sim {
namespace {

using lower::testing::Rng;

void expect_identical(Prediction const& delta, Prediction const& full, std::string const& where) {
  SCOPED_TRACE(where);
  EXPECT_EQ(delta.step_time_s, full.step_time_s);
  EXPECT_EQ(delta.samples_per_s, full.samples_per_s);
  EXPECT_EQ(delta.breakdown.compute_s, full.breakdown.compute_s);
  EXPECT_EQ(delta.breakdown.exposed_comm_s, full.breakdown.exposed_comm_s);
  EXPECT_EQ(delta.breakdown.exposed_swap_s, full.breakdown.exposed_swap_s);
  EXPECT_EQ(delta.breakdown.idle_s, full.breakdown.idle_s);
  EXPECT_EQ(delta.breakdown.comm_s, full.breakdown.comm_s);
  EXPECT_EQ(delta.device_compute_s, full.device_compute_s);
  EXPECT_EQ(delta.peak_memory_bytes, full.peak_memory_bytes);
  EXPECT_EQ(delta.fits, full.fits);
  EXPECT_EQ(delta.comm_bytes, full.comm_bytes);
  EXPECT_EQ(delta.link_bytes, full.link_bytes);
  EXPECT_EQ(delta.sim.busy_seconds, full.sim.busy_seconds);
  ASSERT_EQ(delta.sim.spans.size(), full.sim.spans.size());
  for (std::size_t i = 0; i < full.sim.spans.size(); ++i) {
    ASSERT_EQ(delta.sim.spans[i].start, full.sim.spans[i].start) << "task " << i;
    ASSERT_EQ(delta.sim.spans[i].end, full.sim.spans[i].end) << "task " << i;
  }
  ASSERT_EQ(delta.collectives.size(), full.collectives.size());
  for (std::size_t c = 0; c < full.collectives.size(); ++c) {
    EXPECT_EQ(delta.collectives[c].kind, full.collectives[c].kind);
    EXPECT_EQ(delta.collectives[c].start_s, full.collectives[c].start_s);
    EXPECT_EQ(delta.collectives[c].seconds, full.collectives[c].seconds);
  }
}

void expect_same_program(lower::Program const& a, lower::Program const& b) {
  ASSERT_EQ(a.tasks.size(), b.tasks.size());
  for (std::size_t i = 0; i < a.tasks.size(); ++i) {
    EXPECT_EQ(a.tasks[i].deps, b.tasks[i].deps) << i;
    EXPECT_EQ(a.tasks[i].collective, b.tasks[i].collective) << i;
    EXPECT_FALSE(lower::canonical_less(a.tasks[i], b.tasks[i]) ||
                 lower::canonical_less(b.tasks[i], a.tasks[i]))
        << i;
  }
  ASSERT_EQ(a.collectives.size(), b.collectives.size());
  for (std::size_t c = 0; c < a.collectives.size(); ++c)
    EXPECT_EQ(a.collectives[c].members, b.collectives[c].members);
  EXPECT_EQ(a.initial.size(), b.initial.size());
}

class Delta : public ::testing::TestWithParam<std::string> {};

TEST_P(Delta, EqualsFullSimulationAfterEveryChangeAndUndo) {
  auto registry = ops::OpRegistry::with_builtins();
  ir::Graph forward = GetParam() == "cnn" ? lower::testing::tiny_cnn(*registry)
                      : GetParam() == "attention"
                          ? lower::testing::tiny_attention(*registry)
                          : *models::ModelZoo::with_builtins().build(
                                "mlp:layers=2,hidden=6,input=5,classes=3,batch=4", *registry);
  auto g = *autodiff::build_training_graph(forward, *registry);
  auto cluster = *cluster::load_cluster("p100-4x4:nodes=2");  // 8 GPUs, NVLink, PCIe, IB
  cost::CostModel cost(cluster);
  Rng rng(std::hash<std::string>{}(GetParam()) + 1);
  std::size_t replayed = 0, taken = 0, gave_up = 0;
  for (int trial = 0; trial < 12; ++trial) {
    int devices = 2 + trial % 7;
    auto plan = lower::testing::random_plan(g, *registry, devices, rng);
    auto delta = DeltaSimulator::create(g, plan, *registry, cost, 4);
    ASSERT_TRUE(delta.has_value()) << delta.error().to_string();
    for (int change = 0; change < 15; ++change) {
      ir::OpId op(static_cast<std::uint32_t>(rng() % g.num_ops()));
      auto config = lower::testing::random_config(g, *registry, op, devices, rng);
      // Every other change is first priced only up to half the current step (as MCMC rejects):
      // a step above it always gives up, one that finishes is under it, and undo restores the
      // state before either way.
      if (change % 2 == 0) {
        Prediction now = delta->prediction();
        auto capped = delta->apply_unless_above(op, config, now.step_time_s / 2);
        ASSERT_TRUE(capped.has_value()) << capped.error().to_string();
        if (*capped) EXPECT_LE((*capped)->step_time_s, now.step_time_s / 2);
        gave_up += *capped ? 0 : 1;
        delta->undo();
        expect_identical(delta->prediction(), now, "capped and undone");
        auto same =
            delta->apply_unless_above(op, plan.ops[op.value()], now.step_time_s * (1 + 1e-9));
        ASSERT_TRUE(same.has_value() && *same) << "the op's own configuration finishes at its step";
        EXPECT_EQ((*same)->step_time_s, now.step_time_s);
        delta->undo();
      }
      auto got = delta->apply(op, config);
      ASSERT_TRUE(got.has_value()) << got.error().to_string();
      auto before = std::exchange(plan.ops[op.value()], config);
      std::string where = "trial " + std::to_string(trial) + " change " + std::to_string(change) +
                          " op " + g.op(op).name;
      auto program = lower::lower(g, plan, *registry);
      ASSERT_TRUE(program.has_value()) << program.error().to_string();
      // Not after every change: between two looks at the program, the lowering's moved tasks
      // keep their old dependency ids (Lowering::program_in_flux), and the predictions must not
      // depend on them.
      if (change % 4 == 3) expect_same_program(delta->program(), *program);
      Prediction full = predict(g, *program, cost, 4);
      expect_identical(*got, full, where);
      if (::testing::Test::HasFatalFailure()) return;

      // Every third change is undone (an MCMC rejection); the changes after it start from there.
      if (change % 3 == 2) {
        delta->undo();
        plan.ops[op.value()] = before;
        auto restored = lower::lower(g, plan, *registry);
        ASSERT_TRUE(restored.has_value());
        if (change % 4 == 1) expect_same_program(delta->program(), *restored);
        EXPECT_EQ(delta->plan().ops[op.value()].devices, before.devices);
        expect_identical(delta->prediction(), predict(g, *restored, cost, 4), where + " undone");
        if (::testing::Test::HasFatalFailure()) return;
      }
      replayed += delta->last_work().nodes_replayed;
      taken += delta->last_work().nodes;
    }
  }
  EXPECT_GT(gave_up, 0u);
  EXPECT_GT(replayed, 0u);  // the restart point is not always the start
  EXPECT_LT(replayed, taken);
}

INSTANTIATE_TEST_SUITE_P(Models, Delta, ::testing::Values("mlp", "cnn", "attention"));

// A plan with a schedule (order and swaps) is simulated with it; the first change drops the
// schedule (it names the old pieces) and the prediction is still the full one of the changed plan;
// undoing it restores the schedule.
TEST(DeltaSchedule, TheFirstChangeDropsTheScheduleAndStaysExact) {
  auto registry = ops::OpRegistry::with_builtins();
  auto g = *autodiff::build_training_graph(
      *models::ModelZoo::with_builtins().build("mlp:layers=2,hidden=6,input=5,classes=3,batch=4",
                                               *registry),
      *registry);
  auto cluster = *cluster::load_cluster("cpu:devices=2");
  cost::CostModel cost(cluster);
  auto plan = lower::testing::with_swapped_activations(g, plan::single_device_plan(g, *registry),
                                                       /*gap=*/2);
  plan.num_devices = 2;
  plan.order.emplace_back();
  ASSERT_FALSE(plan.swaps.empty());
  auto delta = DeltaSimulator::create(g, plan, *registry, cost, 4);
  ASSERT_TRUE(delta.has_value()) << delta.error().to_string();
  auto scheduled = lower::lower(g, plan, *registry);
  ASSERT_TRUE(scheduled.has_value());
  expect_same_program(delta->program(), *scheduled);
  expect_identical(delta->prediction(), predict(g, *scheduled, cost, 4), "scheduled");
  // Undoing the first change brings the schedule back with the program it applied to.
  {
    Rng first(5);
    ir::OpId op(static_cast<std::uint32_t>(first() % g.num_ops()));
    ASSERT_TRUE(
        delta->apply(op, lower::testing::random_config(g, *registry, op, 2, first)).has_value());
    delta->undo();
    EXPECT_EQ(delta->plan().swaps, plan.swaps);
    expect_same_program(delta->program(), *scheduled);
    expect_identical(delta->prediction(), predict(g, *scheduled, cost, 4), "undone");
  }
  Rng rng(11);
  for (int change = 0; change < 4; ++change) {
    ir::OpId op(static_cast<std::uint32_t>(rng() % g.num_ops()));
    auto config = lower::testing::random_config(g, *registry, op, 2, rng);
    auto got = delta->apply(op, config);
    ASSERT_TRUE(got.has_value()) << got.error().to_string();
    plan.ops[op.value()] = config;
    plan.order.clear();
    plan.swaps.clear();
    auto program = lower::lower(g, plan, *registry);
    ASSERT_TRUE(program.has_value());
    expect_same_program(delta->program(), *program);
    expect_identical(*got, predict(g, *program, cost, 4), "change " + std::to_string(change));
  }
}

TEST(DeltaErrors, AnInvalidChangeChangesNothing) {
  auto registry = ops::OpRegistry::with_builtins();
  auto g = *autodiff::build_training_graph(lower::testing::tiny_cnn(*registry), *registry);
  auto cluster = *cluster::load_cluster("cpu:devices=2");
  cost::CostModel cost(cluster);
  auto plan = plan::single_device_plan(g, *registry);
  plan.num_devices = 2;
  auto delta = DeltaSimulator::create(g, plan, *registry, cost, 4);
  ASSERT_TRUE(delta.has_value());
  double before = delta->prediction().step_time_s;
  auto bad = plan.ops[0];
  bad.devices = {5};
  auto e = delta->apply(ir::OpId(0), bad);
  ASSERT_FALSE(e.has_value());
  EXPECT_NE(e.error().message().find("device 5 is not in 0..1"), std::string::npos);
  EXPECT_FALSE(delta->apply(ir::OpId(static_cast<std::uint32_t>(g.num_ops())), bad).has_value());
  EXPECT_EQ(delta->prediction().step_time_s, before);
  EXPECT_EQ(delta->plan().ops[0].devices, plan.ops[0].devices);
}

}  // namespace
}  // namespace cleave::sim
