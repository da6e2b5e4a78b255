// FlexFlow's MCMC (issue 15): never worse than its starting plans, the same plan for the same
// seed, a valid plan from one iteration, the optimum of an exhaustive search over the same
// configuration space on tiny graphs, the course in the provenance, and its configuration space
// (hierarchical blocks, roles named from the TDL dimensions).
#include <algorithm>
#include <gtest/gtest.h>
#include <limits>

#include "autodiff/training_graph.h"
#include "cluster/presets.h"
#include "lower/program.h"
#include "models/model_zoo.h"
#include "plan/plan_json.h"
#include "search/baselines/baselines.h"
#include "search/flexflow/config_space.h"
#include "search/flexflow/flexflow.h"
#include "search/search.h"
#include "sim/delta.h"

namespace cleave::search {
namespace {

struct Planning {
  // The model's training graph, or with `training` false its forward graph.
  Planning(std::string const& model, std::string cluster_spec, std::int64_t batch,
           bool training = true)
      : graph(training ? *autodiff::build_training_graph(
                             *models::ModelZoo::with_builtins().build(model, *registry), *registry)
                       : *models::ModelZoo::with_builtins().build(model, *registry)),
        spec(std::move(cluster_spec)), samples(batch),
        cluster(std::make_unique<cluster::Cluster>(*cluster::load_cluster(spec))),
        cost(std::make_unique<cost::CostModel>(*cluster)) {}
  std::shared_ptr<ops::OpRegistry> registry = ops::OpRegistry::with_builtins();
  ir::Graph graph;
  std::string spec;
  std::int64_t samples;
  std::unique_ptr<cluster::Cluster> cluster;
  std::unique_ptr<cost::CostModel> cost;

  SearchContext context(std::int64_t iterations, std::uint64_t seed = 1) const {
    SearchContext ctx{graph, *registry, *cost, spec, "model", samples, seed};
    ctx.budget.iterations = iterations;
    return ctx;
  }
  double step_time(plan::Plan p) const {
    p.num_devices = static_cast<int>(cluster->num_devices());
    auto program = lower::lower(graph, p, *registry);
    EXPECT_TRUE(program.has_value()) << program.error().to_string();
    return sim::predict(graph, *program, *cost, samples).step_time_s;
  }
};

constexpr char const* mlp = "mlp:layers=2,hidden=64,input=32,classes=8,batch=16";

TEST(FlexFlow, NeverWorseThanItsStartingPlans) {
  for (char const* spec : {"cpu:devices=4", "p100-4x4:nodes=2"}) {
    SCOPED_TRACE(spec);
    Planning s(mlp, spec, 16);
    auto ctx = s.context(600);
    auto p = make_plan("flexflow", ctx);
    ASSERT_TRUE(p.has_value()) << p.error().to_string();
    ASSERT_TRUE(plan::validate(*p, s.graph, *s.registry).is_ok());
    double found = s.step_time(*p);
    EXPECT_LE(found, s.step_time(*data_parallel(ctx)));
    EXPECT_LE(found, s.step_time(*expert(ctx)));
    auto tofu = make_plan("tofu", ctx);
    ASSERT_TRUE(tofu.has_value()) << tofu.error().to_string();
    EXPECT_LE(found, s.step_time(*tofu));
    EXPECT_NE(p->provenance.config.find("step_time_s="), std::string::npos);
  }
}

TEST(FlexFlow, SameSeedSamePlanWithDeltaOrFullSimulation) {
  Planning s(mlp, "cpu:devices=4", 16);
  auto a = make_plan("flexflow", s.context(300, 7));
  auto b = make_plan("flexflow", s.context(300, 7));
  ASSERT_TRUE(a.has_value() && b.has_value());
  ASSERT_EQ(a->ops.size(), b->ops.size());
  for (std::size_t o = 0; o < a->ops.size(); ++o) {
    EXPECT_EQ(a->ops[o].degrees, b->ops[o].degrees) << o;
    EXPECT_EQ(a->ops[o].devices, b->ops[o].devices) << o;
  }
  EXPECT_EQ(a->provenance.course->accepted, b->provenance.course->accepted);
  // Full simulation predicts what the delta simulator does, bit for bit: the same walk.
  auto ctx = s.context(300, 7);
  ctx.options = {{"simulator", "full"}};
  auto full = make_plan("flexflow", ctx);
  ASSERT_TRUE(full.has_value()) << full.error().to_string();
  for (std::size_t o = 0; o < a->ops.size(); ++o) {
    EXPECT_EQ(a->ops[o].degrees, full->ops[o].degrees) << o;
    EXPECT_EQ(a->ops[o].devices, full->ops[o].devices) << o;
  }
  EXPECT_EQ(a->provenance.course->accepted, full->provenance.course->accepted);
  // The delta simulator stopped pricing some proposals once they were sure to be rejected (the
  // uniform is drawn before pricing), and the walk is still full simulation's.
  auto at = a->provenance.config.find("rejected_unfinished=");
  ASSERT_NE(at, std::string::npos);
  EXPECT_GT(std::stoi(a->provenance.config.substr(at + 20)), 0);
  EXPECT_NE(full->provenance.config.find("rejected_unfinished=0 "), std::string::npos);
}

TEST(FlexFlow, OneIterationLeavesAValidPlanAndTheCourseRoundTrips) {
  Planning s(mlp, "cpu:devices=4", 16);
  auto p = make_plan("flexflow", s.context(1));
  ASSERT_TRUE(p.has_value()) << p.error().to_string();
  EXPECT_TRUE(plan::validate(*p, s.graph, *s.registry).is_ok());
  EXPECT_TRUE(lower::lower(s.graph, *p, *s.registry).has_value());
  EXPECT_TRUE(p->provenance.budget_exhausted);
  ASSERT_TRUE(p->provenance.course.has_value());
  EXPECT_EQ(p->provenance.course->iterations, 1);
  ASSERT_FALSE(p->provenance.course->best.empty());
  auto back = plan::plan_from_json(plan::plan_to_json(*p));
  ASSERT_TRUE(back.has_value()) << back.error().to_string();
  ASSERT_TRUE(back->provenance.course.has_value());
  EXPECT_EQ(back->provenance.course->iterations, 1);
  EXPECT_EQ(back->provenance.course->best, p->provenance.course->best);
  // Without a budget the search ends too, at its default number of proposals.
  auto ctx = s.context(1);
  ctx.budget = {};
  auto unbudgeted = make_plan("flexflow", ctx);
  ASSERT_TRUE(unbudgeted.has_value());
  EXPECT_LE(unbudgeted->provenance.course->iterations, flexflow::default_iterations);
  EXPECT_FALSE(unbudgeted->provenance.budget_exhausted);
}

// With devices just big enough for the smaller of the data-parallel and expert plans' peaks, the
// other does not fit: the result fits, whatever the step times.
TEST(FlexFlow, TheResultFitsWhenAFittingPlanWasSeen) {
  std::string const model = "mlp:layers=2,hidden=512,input=512,classes=512,batch=8";
  Planning roomy(model, "cpu:devices=4", 8);
  auto peak = [&](Expected<plan::Plan> p) {
    p->num_devices = 4;
    auto program = lower::lower(roomy.graph, *p, *roomy.registry);
    auto memory = sim::predict(roomy.graph, *program, *roomy.cost, 8).peak_memory_bytes;
    return *std::max_element(memory.begin(), memory.end());
  };
  auto ctx = roomy.context(300);
  std::int64_t dp = peak(data_parallel(ctx)), ex = peak(expert(ctx));
  ASSERT_NE(dp, ex);
  Planning tight(model, "cpu:devices=4,memory=" + std::to_string(std::min(dp, ex)) + "B", 8);
  auto p = make_plan("flexflow", tight.context(300));
  ASSERT_TRUE(p.has_value()) << p.error().to_string();
  p->num_devices = 4;
  auto program = lower::lower(tight.graph, *p, *tight.registry);
  ASSERT_TRUE(program.has_value());
  EXPECT_TRUE(sim::predict(tight.graph, *program, *tight.cost, 8).fits) << p->provenance.config;
  EXPECT_NE(p->provenance.config.find("fits=yes"), std::string::npos);
}

TEST(FlexFlow, BadOptionsAreErrors) {
  Planning s(mlp, "cpu:devices=2", 16);
  auto ctx = s.context(10);
  ctx.options = {{"beta_per_op", "-1"}};
  auto p = make_plan("flexflow", ctx);
  ASSERT_FALSE(p.has_value());
  EXPECT_NE(p.error().message().find("beta_per_op >= 0"), std::string::npos) << p.error().message();
  ctx.options = {{"reductions", "maybe"}};
  EXPECT_FALSE(make_plan("flexflow", ctx).has_value());
}

TEST(FlexFlowSpace, BlocksRespectTheHierarchyAndRolesComeFromTheDims) {
  Planning s("mlp:layers=1,hidden=8,input=4,classes=4,batch=8", "p100-4x4:nodes=2", 8);
  auto ctx = s.context(1);
  auto space = *flexflow::ConfigSpace::create(ctx, false);
  // 4 devices per node, 2 nodes: within in {1, 2, 4}, across in {1, 2}.
  EXPECT_EQ(space.blocks().size(), 6u);
  for (std::uint32_t o = 0; o < s.graph.num_ops(); ++o)
    for (auto const& config : space.all(ir::OpId(o))) {
      std::int64_t pieces = 1;
      for (auto d : config.degrees)
        pieces *= d;
      ASSERT_EQ(pieces, static_cast<std::int64_t>(config.devices.size()));
      auto sorted = config.devices;
      std::sort(sorted.begin(), sorted.end());
      EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());  // distinct
      // Pieces of one node are consecutive: 8 pieces span both nodes, 4 or fewer within one
      // block of one node, or one device block in each of two nodes.
      if (pieces == 2 && s.cluster->same_node(cluster::DeviceId(config.devices[0]),
                                              cluster::DeviceId(config.devices[1]))) {
        EXPECT_EQ(config.devices[0] % 2, 0);  // an aligned block of two
      }
    }
  // The forward matmul's batch dimension is Sample; a dimension indexing the weight Parameter.
  bool sample = false, parameter = false;
  for (std::uint32_t o = 0; o < s.graph.num_ops(); ++o)
    for (auto const& dim : space.dims(ir::OpId(o))) {
      sample |= dim.role == flexflow::DimRole::sample;
      parameter |= dim.role == flexflow::DimRole::parameter;
      EXPECT_NE(dim.role, flexflow::DimRole::reduction);  // reductions off
    }
  EXPECT_TRUE(sample);
  EXPECT_TRUE(parameter);
  auto with = *flexflow::ConfigSpace::create(ctx, true);
  bool reduction = false;
  for (std::uint32_t o = 0; o < s.graph.num_ops(); ++o)
    for (auto const& dim : with.dims(ir::OpId(o)))
      reduction |= dim.role == flexflow::DimRole::reduction;
  EXPECT_TRUE(reduction);
}

// The least step time over every combination of the ops' configurations, walked as an odometer
// with one delta per change.
double exhaustive_optimum(Planning const& s, flexflow::ConfigSpace const& space) {
  std::vector<std::vector<plan::OpConfig>> all;
  plan::Plan p = plan::single_device_plan(s.graph, *s.registry);
  p.num_devices = static_cast<int>(s.cluster->num_devices());
  double combinations = 1;
  std::string sizes;
  for (std::uint32_t o = 0; o < s.graph.num_ops(); ++o) {
    all.push_back(space.all(ir::OpId(o)));
    p.ops[o] = all.back()[0];
    combinations *= static_cast<double>(all.back().size());
    sizes += s.graph.op(ir::OpId(o)).name + ":" + std::to_string(all.back().size()) + " ";
  }
  EXPECT_LE(combinations, 2e5) << sizes;
  if (combinations > 2e5) return 0;
  auto created = sim::DeltaSimulator::create(s.graph, p, *s.registry, *s.cost, s.samples);
  EXPECT_TRUE(created.has_value());
  auto sim = std::move(*created);
  double best = sim.prediction().step_time_s;
  std::vector<std::size_t> at(all.size(), 0);
  for (;;) {
    std::size_t o = 0;
    while (o < at.size() && ++at[o] == all[o].size()) {
      at[o] = 0;
      EXPECT_TRUE(sim.apply(ir::OpId(static_cast<std::uint32_t>(o)), all[o][0]).has_value());
      ++o;
    }
    if (o == at.size()) return best;
    auto got = sim.apply(ir::OpId(static_cast<std::uint32_t>(o)), all[o][at[o]]);
    EXPECT_TRUE(got.has_value());
    best = std::min(best, got->step_time_s);
  }
}

// On forward graphs (inference): a training graph, even of a one-layer MLP, has 22 ops and some
// 6e11 combinations on 2 devices, past what a test can walk (FlexFlow's exhaustive search of
// LeNet took 0.8 h).
TEST(FlexFlow, FindsTheExhaustiveOptimumOnTinyGraphs) {
  struct Case {
    char const* model;
    char const* cluster;
  };
  for (auto c : {Case{"mlp:layers=1,hidden=64,input=64,classes=64,batch=64", "cpu:devices=2"},
                 Case{"mlp:layers=1,hidden=64,input=64,classes=64,batch=64", "cpu:devices=3"},
                 Case{"mlp:layers=0,hidden=64,input=64,classes=64,batch=64", "cpu:devices=4"}}) {
    SCOPED_TRACE(std::string(c.model) + " on " + c.cluster);
    Planning s(c.model, c.cluster, 64, false);
    auto ctx = s.context(3000);
    auto space = *flexflow::ConfigSpace::create(ctx, false);
    double optimum = exhaustive_optimum(s, space);
    auto p = make_plan("flexflow", ctx);
    ASSERT_TRUE(p.has_value()) << p.error().to_string();
    EXPECT_LE(s.step_time(*p), optimum * (1 + 1e-12));
    // Found within 1 s of search.
    ASSERT_FALSE(p->provenance.course->best.empty());
    EXPECT_LT(p->provenance.course->best.back().first, 1.0);
  }
}

}  // namespace
}  // namespace cleave::search
