// The run-time scheduling assistant (api/rebalance.h): a plan whose measured compute is unbalanced
// is partitioned again on the measured times and the run switches to it between steps, carrying
// the weights and optimizer state over; a balanced enough plan is kept; bad requests are errors.
#include <cmath>
#include <gtest/gtest.h>
#include <set>

#include "api/rebalance.h"
#include "cluster/presets.h"
#include "runtime/comm_backend.h"
#include "runtime/kernels/kernel.h"
#include "search/search.h"

namespace cleave::api {
namespace {

// A 4-layer LSTM unrolled 4 steps: its wavefront lets a balanced placement run layers at once.
constexpr char const* model_spec = "rnn:layers=4,hidden=64,steps=4,batch=8,vocab=32";
constexpr char const* cluster_spec = "cpu:devices=4";

struct Case {
  std::unique_ptr<ops::OpRegistry> registry = ops::OpRegistry::with_builtins();
  ModelInput model = *load_model(model_spec, *registry, {});
  cluster::Cluster cluster = *cluster::load_cluster(cluster_spec);
  cost::CostModel cost{cluster};
  std::unique_ptr<runtime::KernelRegistry> kernels = runtime::KernelRegistry::with_builtins();
  runtime::InProcessBackend backend;

  // What a mincut plan made with a profile that priced every op but one device's at nothing
  // would be: everything on device 0 of the four (the `single` plan, recorded as mincut's), so
  // that its measured imbalance is exactly 4 whatever the machine's timing.
  plan::Plan unbalanced_mincut_plan() const {
    search::SearchContext ctx{model.training, *registry,   cost,
                              cluster_spec,   model.label, model.batch};
    auto p = search::make_plan("single", ctx);
    EXPECT_TRUE(p.has_value()) << p.error().to_string();
    p->provenance.algorithm = "mincut";
    return *p;
  }

  runtime::TrainingConfig training(int steps) {
    runtime::TrainingConfig config;
    config.steps = steps;
    config.exec.kernels = kernels.get();
    config.exec.backend = &backend;
    config.exec.capture = runtime::checked_tensors(model.training, "loss");
    return config;
  }
};

std::set<int> devices_used(plan::Plan const& p) {
  std::set<int> used;
  for (auto const& op : p.ops)
    used.insert(op.devices.begin(), op.devices.end());
  return used;
}

TEST(Rebalance, SwitchesAnUnbalancedPlanAndCarriesTheStateOver) {
  Case c;
  plan::Plan given = c.unbalanced_mincut_plan();
  RebalanceOptions options;
  options.measure_steps = 2;
  RebalanceRequest request{c.model,       given,   c.cost, *c.registry,
                           c.training(5), options, 1e-4,   "loss"};
  auto r = run_rebalanced(request);
  ASSERT_TRUE(r.has_value()) << r.error().to_string();
  EXPECT_NEAR(r->before.imbalance, 4.0, 1e-9);
  EXPECT_TRUE(r->switched) << r->decision;
  EXPECT_NE(r->decision.find("switched after step 3"), std::string::npos) << r->decision;
  ASSERT_TRUE(r->predicted_before_s && r->predicted_after_s);
  EXPECT_LT(*r->predicted_after_s, *r->predicted_before_s);
  EXPECT_EQ(devices_used(given).size(), 1u);
  EXPECT_GT(devices_used(r->after.plan).size(), 1u);
  EXPECT_LT(r->after.imbalance, 4.0);
  EXPECT_EQ(r->before.first_step, 1);
  EXPECT_EQ(r->before.last_step, 3);
  EXPECT_EQ(r->after.first_step, 4);
  EXPECT_EQ(r->after.last_step, 5);
  EXPECT_EQ(r->after.run.steps.size(), 2u);
  EXPECT_GT(r->before.step_s, 0.0);
  EXPECT_GT(r->after.step_s, 0.0);
  // The measured profile prices every piece the first plan ran.
  EXPECT_TRUE(r->measured.has_entries());
  EXPECT_NE(r->measured.source.find("steps 2-3"), std::string::npos) << r->measured.source;
  // The check holds on both sides of the switch.
  ASSERT_TRUE(r->before.check && r->after.check);
  EXPECT_TRUE(r->before.check->passed) << r->before.check->worst;
  EXPECT_TRUE(r->after.check->passed) << r->after.check->worst;

  // The state carried over: five steps of the given plan alone end where the switched run does
  // (every op whole on one device computes the same wherever it runs; up to rounding).
  auto program = lower::lower(c.model.training, given, *c.registry);
  ASSERT_TRUE(program.has_value());
  std::vector<runtime::DeviceInfo> devices;
  for (auto const& d : c.cluster.devices())
    devices.push_back({d.name, d.memory});
  auto executor =
      runtime::Executor::create(c.model.training, std::move(*program), *c.registry, devices);
  ASSERT_TRUE(executor.has_value());
  auto alone = runtime::run_training(*executor, c.training(5));
  ASSERT_TRUE(alone.has_value()) << alone.error().to_string();
  auto same = runtime::compare(c.model.training, runtime::checked_tensors(c.model.training, "loss"),
                               r->after.run.last, alone->last, 1e-5);
  ASSERT_TRUE(same.has_value()) << same.error().to_string();
  EXPECT_TRUE(same->passed) << same->worst << " " << same->max_relative_error;
  // A run that restarted from the initial weights after the switch would differ.
  auto restarted = runtime::run_training(*executor, c.training(2));
  ASSERT_TRUE(restarted.has_value());
  auto differs =
      runtime::compare(c.model.training, runtime::checked_tensors(c.model.training, "loss"),
                       r->after.run.last, restarted->last, 1e-5);
  ASSERT_TRUE(differs.has_value());
  EXPECT_FALSE(differs->passed);
}

TEST(Rebalance, KeepsAPlanUnderTheThreshold) {
  Case c;
  plan::Plan given = c.unbalanced_mincut_plan();
  RebalanceOptions options;
  options.measure_steps = 1;
  options.threshold = 5;  // above the largest imbalance 4 devices can have
  RebalanceRequest request{c.model,       given,   c.cost,       *c.registry,
                           c.training(4), options, std::nullopt, "loss"};
  auto r = run_rebalanced(request);
  ASSERT_TRUE(r.has_value()) << r.error().to_string();
  EXPECT_FALSE(r->switched);
  EXPECT_NE(r->decision.find("<= threshold 5.000: kept the plan"), std::string::npos)
      << r->decision;
  EXPECT_FALSE(r->predicted_after_s.has_value());
  EXPECT_EQ(devices_used(r->after.plan).size(), 1u);
  EXPECT_EQ(r->after.run.steps.size(), 2u);
}

TEST(Rebalance, BadRequestsSayWhatToChange) {
  Case c;
  plan::Plan mincut = c.unbalanced_mincut_plan();
  plan::Plan tofu = mincut;
  tofu.provenance.algorithm = "tofu";
  plan::Plan hand = mincut;
  hand.provenance.algorithm = "";
  auto parts = c.cluster.parts();
  parts.devices[3].kind = "cpu-core-slow";
  auto mixed = cluster::Cluster::create(parts);
  ASSERT_TRUE(mixed.has_value());
  RebalanceOptions ok;
  RebalanceOptions low = ok, nan = ok, none = ok;
  low.threshold = 0.5;
  nan.threshold = std::nan("");
  none.measure_steps = 0;
  struct Bad {
    plan::Plan const* plan;
    cluster::Cluster const* cluster;
    int steps;
    RebalanceOptions options;
    std::string message;
  } cases[] = {
      {&tofu, &c.cluster, 8, ok, "this plan was made by 'tofu': plan with --algo mincut"},
      {&hand, &c.cluster, 8, ok, "this plan records no algorithm"},
      {&mincut, &*mixed, 8, ok, "needs devices of one kind"},
      {&mincut, &c.cluster, 8, low, "--rebalance-threshold 0.5: it is the busiest device's"},
      {&mincut, &c.cluster, 8, nan, "--rebalance-threshold nan"},
      {&mincut, &c.cluster, 8, none, "--rebalance-steps 0: measure at least 1 step"},
      {&mincut, &c.cluster, 5, ok, "needs --steps 6 or more"},
  };
  for (auto const& bad : cases) {
    auto st = check_rebalance(*bad.plan, *bad.cluster, bad.steps, bad.options);
    ASSERT_FALSE(st) << bad.message;
    EXPECT_EQ(st.error().code(), ErrorCode::invalid_argument);
    EXPECT_NE(st.error().to_string().find(bad.message), std::string::npos)
        << st.error().to_string();
  }
  EXPECT_TRUE(check_rebalance(mincut, c.cluster, 6, ok));
  // The run refuses before running anything.
  RebalanceRequest request{c.model,       tofu, c.cost,       *c.registry,
                           c.training(8), ok,   std::nullopt, "loss"};
  EXPECT_FALSE(run_rebalanced(request).has_value());
}

}  // namespace
}  // namespace cleave::api
