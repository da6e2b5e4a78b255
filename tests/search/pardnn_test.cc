// ParDNN and its baselines, critical-path placement and linear clustering (issue 16): their plans
// keep every op whole, order every device, validate, lower, simulate, fit and compute what the
// graph computes; the same seed gives the same plan; on tiny graphs a plan fits wherever some
// whole-op placement fits (checked against every placement), and where none fits the error names
// each device's shortfall; a device's order is memory-aware where the critical path first would
// overflow it; an op no device can hold is an error naming it.
#include <gtest/gtest.h>
#include <optional>
#include <random>
#include <regex>
#include <set>

#include "autodiff/training_graph.h"
#include "cluster/presets.h"
#include "ir/graph_builder.h"
#include "lower/reference_check.h"
#include "lower/test_models.h"
#include "models/model_zoo.h"
#include "ops/reference_executor.h"
#include "search/common/list_schedule.h"
#include "search/search.h"
#include "sim/predict.h"

namespace cleave::search {
namespace {

std::array<char const*, 3> const algos = {"pardnn", "critical-path", "linear-clustering"};

struct Case {
  std::unique_ptr<ops::OpRegistry> registry = ops::OpRegistry::with_builtins();
  ir::Graph graph;
  std::int64_t batch;
  Case(std::string const& model, std::int64_t batch)
      : graph(*autodiff::build_training_graph(
            *models::ModelZoo::with_builtins().build(model, *registry), *registry)),
        batch(batch) {}
  Case(ir::Graph g) : graph(std::move(g)), batch(0) {}

  SearchContext context(cost::CostModel const& cost) const {
    return {graph, *registry, cost, cost.cluster().name(), "", batch, 0, {}, {}};
  }
  Expected<plan::Plan> plan(std::string const& algo, cluster::Cluster const& cluster,
                            std::uint64_t seed = 0) const {
    cost::CostModel cost(cluster);
    auto ctx = context(cost);
    ctx.seed = seed;
    return make_plan(algo, ctx);
  }
  sim::Prediction predict(plan::Plan const& p, cluster::Cluster const& cluster) const {
    auto program = lower::lower(graph, p, *registry);
    EXPECT_TRUE(program.has_value()) << program.error().to_string();
    return sim::predict(graph, *program, cost::CostModel(cluster), batch);
  }
};

class PardnnPlans : public ::testing::TestWithParam<std::string> {};

TEST_P(PardnnPlans, KeepOpsWholeOrderEveryDeviceFitAndComputeWhatTheGraphComputes) {
  Case c(GetParam() == "rnn"   ? "rnn:layers=2,hidden=4,steps=3,batch=4,vocab=6"
         : GetParam() == "gpt" ? "gpt:layers=1,hidden=8,heads=2,seq=4,vocab=7,batch=4"
                               : "mlp:layers=2,hidden=8,input=4,classes=4,batch=4",
         4);
  auto cluster = *cluster::load_cluster("cpu:devices=4");
  for (char const* algo : algos) {
    auto p = c.plan(algo, cluster);
    ASSERT_TRUE(p.has_value()) << algo << ": " << p.error().to_string();
    ASSERT_TRUE(plan::validate(*p, c.graph, *c.registry)) << algo;
    ASSERT_EQ(p->order.size(), 4u) << algo;
    std::size_t ordered = 0;
    for (auto const& device : p->order)
      ordered += device.size();
    EXPECT_EQ(ordered, c.graph.num_ops()) << algo << ": every op in its device's order";
    for (auto const& op : p->ops) {
      ASSERT_EQ(op.devices.size(), 1u) << algo << " keeps every op whole";
      for (auto d : op.degrees)
        EXPECT_EQ(d, 1);
    }
    EXPECT_NE(p->provenance.config.find("memory_moves=0"), std::string::npos)
        << p->provenance.config;
    auto prediction = c.predict(*p, cluster);
    EXPECT_TRUE(prediction.fits);
    // The bound that spares the memory step a simulation is above every simulated peak.
    cost::CostModel cost(cluster);
    auto op_graph = *build_op_graph(c.context(cost), {});
    std::vector<int> device;
    for (auto const& unit : op_graph.units)
      device.push_back(p->ops[unit.pieces[0].op].devices[unit.pieces[0].piece]);
    auto bound = memory_bound(op_graph, device, 4);
    for (std::size_t d = 0; d < 4; ++d)
      EXPECT_GE(bound[d], prediction.peak_memory_bytes[d]) << algo << " device " << d;
    auto program = lower::lower(c.graph, *p, *c.registry);
    ASSERT_TRUE(program.has_value());
    SCOPED_TRACE(algo);
    lower::testing::expect_computes_the_graph(c.graph, *program, *c.registry, /*seed=*/7);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, PardnnPlans, ::testing::Values("mlp", "rnn", "gpt"));

TEST(Pardnn, SameSeedSamePlan) {
  Case c("resnet:depth=18,batch=8,image=64", 8);
  auto cluster = *cluster::load_cluster("dgx2");
  for (char const* algo : algos) {
    auto a = c.plan(algo, cluster, 5), b = c.plan(algo, cluster, 5);
    ASSERT_TRUE(a.has_value() && b.has_value()) << algo;
    ASSERT_EQ(a->ops.size(), b->ops.size());
    for (std::size_t op = 0; op < a->ops.size(); ++op)
      EXPECT_EQ(a->ops[op].devices, b->ops[op].devices) << algo;
    EXPECT_EQ(a->order, b->order) << algo;
    EXPECT_EQ(a->provenance.config, b->provenance.config) << algo;
    EXPECT_EQ(a->provenance.seed, 5u);
  }
}

// A stacked RNN runs its layers as a wavefront: ParDNN's primary clusters (the heaviest paths)
// put the layers' chains on different devices, so its step is shorter than on one device and
// than critical-path placement's, whose earliest-finish choices scatter the chains, and than
// linear clustering's, whose clusters are merged by load alone (PAPERS.md §3: ParDNN 1.1-7x over
// both).
TEST(Pardnn, BeatsOneDeviceCriticalPathAndLinearClusteringOnAStackedRnn) {
  Case c("rnn:layers=4,hidden=512,steps=16,batch=32,vocab=1000", 32);
  auto cluster = *cluster::load_cluster("dgx2");
  auto p = c.plan("pardnn", cluster);
  auto one = c.plan("single", cluster);
  auto cp = c.plan("critical-path", cluster);
  auto lc = c.plan("linear-clustering", cluster);
  ASSERT_TRUE(p.has_value() && one.has_value() && cp.has_value() && lc.has_value());
  std::set<int> used;
  for (auto const& op : p->ops)
    used.insert(op.devices[0]);
  EXPECT_GT(used.size(), 1u);
  double step = c.predict(*p, cluster).step_time_s;
  EXPECT_LT(step, 0.8 * c.predict(*one, cluster).step_time_s);
  EXPECT_LT(step, c.predict(*cp, cluster).step_time_s);
  EXPECT_LT(step, c.predict(*lc, cluster).step_time_s);
}

// Linear clustering on independent chains of products (different widths, so different weights):
// each chain is one heaviest path, so one cluster, and the merge by load gives each its own device.
TEST(Pardnn, LinearClusteringKeepsEachChainOnOneDevice) {
  auto registry = ops::OpRegistry::with_builtins();
  ir::GraphBuilder b(*registry);
  std::vector<std::vector<std::string>> chains;
  for (std::int64_t width : {64, 96, 128, 160}) {
    auto x = *b.add_source("x" + std::to_string(width), {{256, width}, ir::DType::fp32},
                           ir::TensorRole::input);
    auto w = *b.add_source("w" + std::to_string(width), {{width, width}, ir::DType::fp32},
                           ir::TensorRole::weight);
    chains.emplace_back();
    for (int i = 0; i < 3; ++i) {
      chains.back().push_back("c" + std::to_string(width) + "_" + std::to_string(i));
      x = *b.add_op1({"linear", {x, w}, {}, chains.back().back(), {}, {}});
    }
  }
  Case c(*b.finish());
  auto cluster = *cluster::load_cluster("cpu:devices=4");
  auto p = c.plan("linear-clustering", cluster);
  ASSERT_TRUE(p.has_value()) << p.error().to_string();
  EXPECT_NE(p->provenance.config.find("clusters=4 "), std::string::npos) << p->provenance.config;
  std::set<int> used;
  for (auto const& chain : chains) {
    std::set<int> on;
    for (auto const& name : chain)
      for (auto const& op : c.graph.ops())
        if (op.name == name) on.insert(p->ops[op.id.value()].devices[0]);
    EXPECT_EQ(on.size(), 1u) << chain[0];
    used.insert(on.begin(), on.end());
  }
  EXPECT_EQ(used.size(), 4u);
}

// A random forward graph of `ops` ops in lanes of different widths (unary and binary pointwise
// ops and products with a weight, reading earlier tensors of their lane), so that where outputs
// live decides each device's peak.
ir::Graph tiny_graph(ops::OpRegistry const& registry, std::mt19937_64& rng, int ops) {
  ir::GraphBuilder b(registry);
  std::vector<std::vector<ir::TensorId>> lanes;
  for (std::int64_t rows : {64, 256}) {
    auto x = b.add_source("x" + std::to_string(rows), {{rows, 16}, ir::DType::fp32},
                          ir::TensorRole::input);
    lanes.push_back({*x});
  }
  auto w = *b.add_source("w", {{16, 16}, ir::DType::fp32}, ir::TensorRole::weight);
  for (int i = 0; i < ops; ++i) {
    auto& lane = lanes[rng() % lanes.size()];
    auto pick = [&] { return lane[rng() % lane.size()]; };
    std::string name = "op" + std::to_string(i);
    int kind = static_cast<int>(rng() % 3);
    std::vector<ir::TensorId> in = kind == 0   ? std::vector{pick()}
                                   : kind == 1 ? std::vector{pick(), pick()}
                                               : std::vector{pick(), w};
    auto y = b.add_op1({kind == 0 ? "relu" : kind == 1 ? "add" : "linear", in, {}, name, {}, {}});
    EXPECT_TRUE(y.has_value()) << y.error().to_string();
    lane.push_back(*y);
  }
  return *b.finish();
}

// The least, over every placement of the graph's units on the cluster (each scheduled as the
// searches schedule one, search/common/list_schedule.h, memory-aware under `caps` if given), of
// the largest peak of a device.
std::int64_t least_peak(Case const& c, cluster::Cluster const& cluster,
                        std::vector<std::int64_t> const& caps = {}) {
  cost::CostModel cost(cluster);
  auto ctx = c.context(cost);
  auto graph = *build_op_graph(ctx, {});
  std::size_t const units = graph.units.size();
  auto const k = cluster.num_devices();
  std::vector<int> device(units, 0);
  std::int64_t best = INT64_MAX;
  for (;;) {
    auto program = *lower::lower(c.graph, placement_plan(ctx, graph, device, caps), *c.registry);
    auto peaks = sim::predict(c.graph, program, cost, 0).peak_memory_bytes;
    best = std::min(best, *std::max_element(peaks.begin(), peaks.end()));
    std::size_t u = 0;
    while (u < units && ++device[u] == static_cast<int>(k))
      device[u++] = 0;
    if (u == units) return best;
  }
}

// Capacities at the least peak any placement reaches in the plain order: the searches fit. Below
// it, some placement may still fit in a memory-aware order: the searches fit at the least
// capacity where one does (checked against every placement) and, 1 KiB below, where none does,
// fail with an error that names every device's peak and shortfall or room.
TEST(Pardnn, FitsWhereverSomeWholeOpPlacementFits) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 8; ++trial) {
    Case c(tiny_graph(*ops::OpRegistry::with_builtins(), rng, trial % 2 ? 9 : 6));
    int const k = trial % 2 ? 2 : 3;
    auto probe = *cluster::load_cluster("cpu:devices=" + std::to_string(k));
    std::int64_t least = least_peak(c, probe);
    auto at = [&](std::int64_t bytes) {
      return *cluster::load_cluster("cpu:devices=" + std::to_string(k) +
                                    ",memory=" + std::to_string(bytes) + "B");
    };
    auto some_fits = [&](std::int64_t bytes) {
      return least_peak(c, at(bytes), usable_memory(at(bytes), 1.0)) <= bytes;
    };
    std::int64_t none = least - 1024;
    for (int i = 0; i < 16 && some_fits(none); ++i)
      none -= 1024;
    ASSERT_FALSE(some_fits(none)) << "trial " << trial;
    for (char const* algo : algos) {
      for (std::int64_t fits : std::set<std::int64_t>{least, none + 1024}) {
        auto p = c.plan(algo, at(fits));
        ASSERT_TRUE(p.has_value()) << algo << " trial " << trial << ": " << p.error().to_string();
        EXPECT_TRUE(c.predict(*p, at(fits)).fits) << algo << " trial " << trial;
      }
      auto failed = c.plan(algo, at(none));
      ASSERT_FALSE(failed.has_value()) << algo << " trial " << trial;
      EXPECT_EQ(failed.error().code(), ErrorCode::out_of_memory);
      std::string text = failed.error().message();
      for (int d = 0; d < k; ++d)
        EXPECT_TRUE(std::regex_search(
            text, std::regex("cpu" + std::to_string(d) +
                             " (short by|with room for) [0-9]+ \\(peak [0-9]+ of [0-9]+\\)")))
            << text;
      EXPECT_NE(text.find("short by"), std::string::npos) << text;
    }
  }
}

// Branches that each write a wide activation and reduce it to a column, summed at the end: by
// bottom level every wide product runs before any reduction (a product's path to the end is the
// longer), so one device holds every wide output at once. Memory-aware, the device runs a
// reduction, which frees its product's output, whenever the next product would pass its cap.
TEST(Pardnn, OrdersADeviceByMemoryWhereTheCriticalPathOrderOverflowsIt) {
  auto registry = ops::OpRegistry::with_builtins();
  ir::GraphBuilder b(*registry);
  auto x = *b.add_source("x", {{256, 16}, ir::DType::fp32}, ir::TensorRole::input);
  std::optional<ir::TensorId> sum;
  for (int i = 0; i < 8; ++i) {
    auto n = std::to_string(i);
    auto w = *b.add_source("w" + n, {{512, 16}, ir::DType::fp32}, ir::TensorRole::weight);
    auto v = *b.add_source("v" + n, {{1, 512}, ir::DType::fp32}, ir::TensorRole::weight);
    auto wide = *b.add_op1({"linear", {x, w}, {}, "wide" + n, {}, {}});
    auto column = *b.add_op1({"linear", {wide, v}, {}, "column" + n, {}, {}});
    sum = sum ? *b.add_op1({"add", {*sum, column}, {}, "sum" + n, {}, {}}) : column;
  }
  Case c(*b.finish());
  std::int64_t const wide = 256 * 512 * 4;
  auto roomy = *cluster::load_cluster("cpu:devices=1");
  cost::CostModel cost(roomy);
  auto ctx = c.context(cost);
  auto graph = *build_op_graph(ctx, {});
  std::vector<int> device(graph.units.size(), 0);
  auto plain = *lower::lower(c.graph, placement_plan(ctx, graph, device), *c.registry);
  std::int64_t plain_peak = sim::predict(c.graph, plain, cost, 0).peak_memory_bytes[0];
  // What the device holds before the step (inputs, weights): the same in every order.
  std::int64_t before = 256 * 16 * 4 + 8 * (16 * 512 + 512) * 4;
  EXPECT_GE(plain_peak, before + 8 * wide) << "every wide output at once";
  auto tight =
      *cluster::load_cluster("cpu:devices=1,memory=" + std::to_string(before + 3 * wide) + "B");
  auto p = c.plan("pardnn", tight);
  ASSERT_TRUE(p.has_value()) << p.error().to_string();
  auto prediction = c.predict(*p, tight);
  EXPECT_TRUE(prediction.fits);
  EXPECT_LT(prediction.peak_memory_bytes[0], before + 3 * wide);
  EXPECT_NEAR(prediction.step_time_s, sim::predict(c.graph, plain, cost, 0).step_time_s, 1e-12)
      << "one device: the order changes no step time";
}

// ParDNN's E3D (a smaller one) on one device: the bottom-level order deferred every weight's
// gradient to the end of the backward pass and needed far more than the `single` plan of the
// same ops (63 GiB against 16 GiB at E3D's size); memory-aware, pardnn fits wherever `single`
// does.
TEST(Pardnn, FitsE3dOnOneDeviceWhereSingleDoes) {
  Case c("e3d:hidden=64,steps=6,batch=1,size=4", 1);
  auto roomy = *cluster::load_cluster("cpu:devices=1");
  auto single = c.plan("single", roomy);
  ASSERT_TRUE(single.has_value());
  std::int64_t need = c.predict(*single, roomy).peak_memory_bytes[0];
  cost::CostModel cost(roomy);
  auto ctx = c.context(cost);
  auto graph = *build_op_graph(ctx, {});
  auto plain = *lower::lower(
      c.graph, placement_plan(ctx, graph, std::vector<int>(graph.units.size(), 0)), *c.registry);
  EXPECT_GT(sim::predict(c.graph, plain, cost, 1).peak_memory_bytes[0], 5 * need / 4)
      << "the critical path first holds more";
  auto fits = *cluster::load_cluster("cpu:devices=1,memory=" + std::to_string(need) + "B");
  auto p = c.plan("pardnn", fits);
  ASSERT_TRUE(p.has_value()) << p.error().to_string();
  EXPECT_TRUE(c.predict(*p, fits).fits);
}

// An op that holds more than any device: an error naming it and the largest device, before any
// step runs; bad input never crashes.
TEST(Pardnn, AnOpHeavierThanAnyDeviceIsAnErrorNamingIt) {
  Case c("mlp:layers=2,hidden=2048,input=8,classes=4,batch=4", 4);
  auto cluster = *cluster::load_cluster("cpu:devices=4,memory=8MiB");
  for (char const* algo : algos) {
    auto p = c.plan(algo, cluster);
    ASSERT_FALSE(p.has_value()) << algo;
    EXPECT_EQ(p.error().code(), ErrorCode::out_of_memory);
    std::smatch m;
    std::string text = p.error().message();
    ASSERT_TRUE(std::regex_search(text, m, std::regex("op '([^']+)' cannot be placed"))) << text;
    EXPECT_TRUE(c.graph.find_op(m[1].str()).has_value()) << m[1];
    EXPECT_NE(text.find("cpu0, 8388608 bytes"), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace cleave::search
