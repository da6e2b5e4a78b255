// The swap fix of the memory explanation (api/swap_fix.h): the swap planner run on each
// over-capacity device's pieces of a data-parallel plan, checked against plan.h's rule for swaps
// and by evaluating the changed plan.
#include <gtest/gtest.h>

#include "api/model_input.h"
#include "api/swap_fix.h"
#include "cluster/presets.h"
#include "lower/lifetime.h"
#include "search/search.h"

namespace cleave::api {
namespace {

struct Case {
  Case(std::string const& model_spec, std::string const& cluster_spec)
      : model(*load_model(model_spec, *registry, {})),
        cluster(*cluster::load_cluster(cluster_spec)), cost(cluster), plan(make(cluster_spec)),
        evaluation(*sim::evaluate({model.training, *registry, plan, cost, model.batch})) {}

  plan::Plan make(std::string const& cluster_spec) const {
    search::SearchContext ctx{model.training, *registry,   cost,
                              cluster_spec,   model.label, model.batch};
    auto p = search::make_plan("data-parallel", ctx);
    EXPECT_TRUE(p.has_value()) << p.error().to_string();
    return *p;
  }

  Expected<report::PlanChange> swap() const {
    report::FixContext ctx{model.training, *registry, plan, cost, model.batch, evaluation, {}};
    return swap_fix(
        ctx, sim::memory_use(model.training, evaluation.program, evaluation.prediction.sim.spans));
  }

  std::unique_ptr<ops::OpRegistry> registry = ops::OpRegistry::with_builtins();
  ModelInput model;
  cluster::Cluster cluster;
  cost::CostModel cost;
  plan::Plan plan;
  sim::Evaluation evaluation;
};

// 8 MiB of saved activations per device against 10 MiB.
TEST(SwapFix, SwapsBlocksOnlyTheirDeviceReadsAndTheChangedPlanFits) {
  Case c("mlp:batch=2048,hidden=256,layers=8,input=256", "cpu:devices=2,memory=10MiB");
  ASSERT_EQ(c.evaluation.violations.size(), 2u);
  auto change = c.swap();
  ASSERT_TRUE(change.has_value()) << change.error().to_string();
  EXPECT_TRUE(change->unchanged.empty());
  EXPECT_EQ(change->changed.size(), 2u);
  ASSERT_EQ(change->plan.order.size(), 2u);
  ASSERT_FALSE(change->plan.swaps.empty());
  auto const& program = c.evaluation.program;
  auto lifetimes = lower::output_lifetimes(program);
  for (auto const& s : change->plan.swaps) {
    lower::TaskId writer = 0;
    while (writer < program.tasks.size() &&
           !(program.tasks[writer].kind == lower::TaskKind::compute &&
             program.tasks[writer].device == s.device && program.tasks[writer].tensor == s.tensor &&
             program.tasks[writer].region == s.region))
      ++writer;
    ASSERT_LT(writer, program.tasks.size()) << "a swap of no piece's block";
    for (auto r : lifetimes[writer].readers) {
      EXPECT_EQ(program.tasks[r].kind, lower::TaskKind::compute);
      EXPECT_EQ(program.tasks[r].device, s.device);
    }
  }
  auto after = sim::evaluate({c.model.training, *c.registry, change->plan, c.cost, c.model.batch});
  ASSERT_TRUE(after.has_value()) << after.error().to_string();
  EXPECT_TRUE(after->violations.empty());
  EXPECT_GT(after->prediction.swap_bytes, 0);
  EXPECT_GE(after->prediction.step_time_s, c.evaluation.prediction.step_time_s);
}

// The small MLP's devices overflow with weights and gradients, which a swap may not move.
TEST(SwapFix, SaysWhyWhenItSwapsNothing) {
  Case c("mlp:batch=16", "cpu:devices=2,memory=16MiB");
  ASSERT_EQ(c.evaluation.violations.size(), 2u);
  auto change = c.swap();
  ASSERT_TRUE(change.has_value()) << change.error().to_string();
  EXPECT_TRUE(change->changed.empty());
  ASSERT_EQ(change->unchanged.size(), 2u);
  EXPECT_NE(change->unchanged.at(0).find("found no swaps for any room below"), std::string::npos)
      << change->unchanged.at(0);
  EXPECT_TRUE(change->plan.swaps.empty());
}

}  // namespace
}  // namespace cleave::api
