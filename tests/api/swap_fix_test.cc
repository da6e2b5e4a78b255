// Swaps for any plan (api/swap_fix.h, api/add_swaps.h): the swap planner run on each
// over-capacity device's pieces of a data-parallel plan, checked against plan.h's rule for swaps
// and by evaluating the changed plan; `--swap`'s outcome when nothing is over and when a device
// cannot fit.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "api/add_swaps.h"
#include "api/model_input.h"
#include "api/swap_fix.h"
#include "cluster/presets.h"
#include "lower/lifetime.h"
#include "lower/schedule.h"
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
    report::FixContext ctx{{model.training, *registry, plan, cost, model.batch, evaluation}, {}};
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
  auto held_readers = lower::initial_readers(c.model.training, program);
  std::size_t held_swapped = 0;
  for (auto const& s : change->plan.swaps) {
    // The block's readers: those of the piece that writes it, else of the block held before the
    // step.
    std::vector<lower::TaskId> readers;
    lower::TaskId writer = 0;
    while (writer < program.tasks.size() &&
           !(program.tasks[writer].kind == lower::TaskKind::compute &&
             program.tasks[writer].device == s.device && program.tasks[writer].tensor == s.tensor &&
             program.tasks[writer].region == s.region))
      ++writer;
    if (writer < program.tasks.size()) {
      readers = lifetimes[writer].readers;
    } else {
      auto const& held = program.initial;
      auto b = std::find_if(held.begin(), held.end(), [&](lower::InitialBlock const& h) {
        return h.device == s.device && h.tensor == s.tensor && h.region == s.region;
      });
      ASSERT_NE(b, held.end()) << "a swap of no piece's block nor one held before the step";
      readers = held_readers[static_cast<std::size_t>(b - held.begin())];
      ++held_swapped;
    }
    ASSERT_FALSE(readers.empty());
    for (auto r : readers) {
      EXPECT_EQ(program.tasks[r].kind, lower::TaskKind::compute);
      EXPECT_EQ(program.tasks[r].device, s.device);
    }
  }
  // The weights, optimizer state and input batch each device alone reads are swappable too.
  EXPECT_GT(held_swapped, 0u);
  auto after = sim::evaluate({c.model.training, *c.registry, change->plan, c.cost, c.model.batch});
  ASSERT_TRUE(after.has_value()) << after.error().to_string();
  EXPECT_TRUE(after->violations.empty());
  EXPECT_GT(after->prediction.swap_bytes, 0);
  EXPECT_GE(after->prediction.step_time_s, c.evaluation.prediction.step_time_s);
}

// The small MLP's devices overflow with updated weights, partial results and reduced gradients,
// which a swap may not move: the error names each device, what it is still over, and those
// blocks by role.
TEST(AddSwaps, SaysWhichDeviceCannotFitAndWhatNoSwapMoves) {
  Case c("mlp:batch=16", "cpu:devices=2,memory=8MiB");
  ASSERT_EQ(c.evaluation.violations.size(), 2u);
  auto outcome = add_swaps(c.model, c.plan, c.evaluation, c.cost, *c.registry);
  ASSERT_TRUE(outcome.has_value()) << outcome.error().to_string();
  EXPECT_TRUE(outcome->changed());
  EXPECT_FALSE(outcome->fits());
  ASSERT_EQ(outcome->devices.size(), 2u);
  auto const& d = outcome->devices.front();
  EXPECT_GT(d.unmovable[static_cast<std::size_t>(sim::MemoryRole::gradients)], 0);
  EXPECT_LT(outcome->evaluation.devices[0].memory.peak_bytes, outcome->peak_before_bytes[0]);
  auto st = swaps_fit(*outcome);
  ASSERT_FALSE(st.is_ok());
  auto const& message = st.error().message();
  EXPECT_NE(message.find("cpu0 is "), std::string::npos) << message;
  EXPECT_NE(message.find("over its 8 MiB with swaps"), std::string::npos) << message;
  EXPECT_NE(message.find("could not be swapped (weights "), std::string::npos) << message;
  auto j = swaps_to_json(*outcome);
  EXPECT_FALSE(j["fits"].get<bool>());
  EXPECT_GT(j["devices"][0]["unmovable"]["gradients"].get<std::int64_t>(), 0);
}

TEST(AddSwaps, LeavesAPlanThatFitsUnchanged) {
  Case c("mlp:batch=16", "cpu:devices=2");
  ASSERT_TRUE(c.evaluation.violations.empty());
  auto outcome = add_swaps(c.model, c.plan, c.evaluation, c.cost, *c.registry);
  ASSERT_TRUE(outcome.has_value()) << outcome.error().to_string();
  EXPECT_FALSE(outcome->changed());
  EXPECT_TRUE(outcome->fits());
  EXPECT_TRUE(outcome->plan.swaps.empty());
  EXPECT_TRUE(outcome->plan.order.empty());
  EXPECT_DOUBLE_EQ(outcome->slowdown(), 1.0);
  EXPECT_TRUE(swaps_fit(*outcome).is_ok());
  EXPECT_NE(swaps_to_text("data-parallel", *outcome).find("no device over capacity"),
            std::string::npos);
}

}  // namespace
}  // namespace cleave::api
