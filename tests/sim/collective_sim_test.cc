// Collectives in the simulator: the lowering's groups priced by algorithm over real routes.
#include <algorithm>
#include <gtest/gtest.h>

#include "autodiff/training_graph.h"
#include "cluster/presets.h"
#include "models/model_zoo.h"
#include "search/search.h"
#include "sim/predict.h"

namespace cleave::sim {
namespace {

// A zoo model's training graph (a batch of 64) and its data-parallel plan, lowered.
struct Lowered {
  std::unique_ptr<ops::OpRegistry> registry;
  ir::Graph graph;
  Expected<lower::Program> program;
};

Lowered lower_data_parallel(std::string const& model, cost::CostModel const& cost) {
  auto registry = ops::OpRegistry::with_builtins();
  auto graph = *autodiff::build_training_graph(
      *models::ModelZoo::with_builtins().build(model, *registry), *registry);
  search::SearchContext ctx{graph, *registry, cost, "", "", 64, 0};
  auto plan = search::make_plan("data-parallel", ctx);
  Expected<lower::Program> program =
      plan ? lower::lower(graph, *plan, *registry) : Expected<lower::Program>(plan.error());
  return {std::move(registry), std::move(graph), std::move(program)};
}

// Data parallelism on an MLP: every weight's gradient is reduce-scattered over the 8 GPUs and
// every weight all-gathered, each priced as a ring over the NVSwitch, and the member tasks take
// the collective's span.
TEST(Collectives, DataParallelMlpReduceScattersGradientsAndAllGathersWeights) {
  auto cluster = *cluster::load_cluster("dgx-a100");
  cost::CostModel cost(cluster);
  auto mlp = lower_data_parallel("mlp:layers=2,hidden=256,input=128,classes=16,batch=64", cost);
  auto const& graph = mlp.graph;
  auto const& program = mlp.program;
  ASSERT_TRUE(program.has_value()) << program.error().to_string();
  Prediction p = predict(graph, *program, cost, 64);

  int gathers = 0, scatters = 0;
  ASSERT_EQ(p.collectives.size(), program->collectives.size());
  for (std::size_t c = 0; c < program->collectives.size(); ++c) {
    auto const& col = program->collectives[c];
    auto const& summary = p.collectives[c];
    auto role = graph.tensor(col.tensor).role;
    EXPECT_EQ(col.group, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
    if (col.kind == lower::CollectiveKind::all_gather) {
      ++gathers;
      EXPECT_EQ(role, ir::TensorRole::weight) << summary.tensor;
      EXPECT_EQ(col.members.size(), 8u * 7u);  // each device receives each other's block
    } else {
      ++scatters;
      EXPECT_EQ(col.kind, lower::CollectiveKind::reduce_scatter);
      EXPECT_EQ(role, ir::TensorRole::gradient) << summary.tensor;
    }
    auto price = cost_of(col, *program, graph, cost);
    EXPECT_EQ(summary.algorithm, "ring");
    EXPECT_EQ(summary.seconds, price.time.value());
    EXPECT_GT(summary.seconds, 0);
    for (auto m : col.members) {
      EXPECT_EQ(p.sim.spans[m].start, summary.start_s);
      EXPECT_NEAR(p.sim.spans[m].end - p.sim.spans[m].start, summary.seconds, 1e-15);
    }
  }
  EXPECT_EQ(gathers, 6);  // three linears' weights and biases
  EXPECT_EQ(scatters, 6);
}

// collective_costs prices each kind, size and group over its routes once (issue 21), yet every
// collective costs what cost_of gives it alone: on CPU cores, whose collectives add their own
// reduce members' compute time, and where the MLP's equal layers repeat collectives.
TEST(Collectives, CollectiveCostsEqualEachCollectivesOwnPrice) {
  auto cluster = *cluster::load_cluster("cpu:devices=4");
  cost::CostModel cost(cluster);
  auto mlp = lower_data_parallel("mlp:layers=4,hidden=256,input=256,classes=256,batch=64", cost);
  auto const& graph = mlp.graph;
  auto const& program = mlp.program;
  ASSERT_TRUE(program.has_value()) << program.error().to_string();
  auto costs = collective_costs(*program, graph, cost);
  ASSERT_EQ(costs.size(), program->collectives.size());
  std::size_t repeated = 0, reducing = 0;
  for (std::size_t c = 0; c < costs.size(); ++c) {
    auto const& col = program->collectives[c];
    auto alone = cost_of(col, *program, graph, cost);
    EXPECT_EQ(costs[c].time.value(), alone.time.value()) << c;
    EXPECT_EQ(costs[c].channel_bytes, alone.channel_bytes) << c;
    EXPECT_EQ(costs[c].algorithm, alone.algorithm) << c;
    for (std::size_t e = 0; e < c; ++e) {
      auto const& earlier = program->collectives[e];
      if (earlier.kind == col.kind && earlier.bytes == col.bytes && earlier.group == col.group) {
        ++repeated;
        break;
      }
    }
    reducing += std::any_of(col.members.begin(), col.members.end(), [&](lower::TaskId m) {
      return program->tasks[m].kind == lower::TaskKind::reduce;
    });
  }
  EXPECT_GT(repeated, 0u);  // priced once, given to several
  EXPECT_GT(reducing, 0u);  // with reduce members, which the shared price does not include
}

// A hand-built all-gather of the same buffer over one H100 node's 8 GPUs and over both nodes'
// 16, with 100 Gb/s NICs: the 16-device rings cross the nodes' NICs (8 x 12.5 GB/s, below
// NVLink's 360), so they move each byte more slowly.
TEST(Collectives, SixteenDeviceAllGatherIsSlowerPerByteOnTwoNodes) {
  auto cluster = *cluster::load_cluster("h100-2x8:network=100Gb/s");
  cost::CostModel cost(cluster);
  auto resources = resources_of(cluster);
  Bytes bytes(std::int64_t{1} << 30);
  auto bus = [&](int n) {
    lower::Program program;
    program.num_devices = 16;
    lower::Collective ag;
    ag.kind = lower::CollectiveKind::all_gather;
    ag.bytes = bytes;
    for (int d = 0; d < n; ++d)
      ag.group.push_back(d);
    for (int from = 0; from < n; ++from)
      for (int to = 0; to < n; ++to) {
        if (from == to) continue;
        lower::Task t;
        t.kind = lower::TaskKind::transfer;
        t.source_device = from;
        t.device = to;
        t.bytes = Bytes(bytes.value() / n);
        t.collective = 0;
        ag.members.push_back(static_cast<lower::TaskId>(program.tasks.size()));
        program.tasks.push_back(t);
      }
    program.collectives.push_back(ag);
    Timings timings;
    timings.tasks.resize(program.tasks.size());
    auto registry = ops::OpRegistry::with_builtins();
    auto none = *ir::Graph::create({}, {}, *registry);  // no reduce members to price
    timings.collectives.push_back(timing_of(cost_of(ag, program, none, cost), ag, cluster));
    auto r = simulate(program, timings, resources);
    EXPECT_EQ(r.step_seconds, cost_of(ag, program, none, cost).time.value());
    return cost::bus_bandwidth(cost::CollectiveKind::all_gather, bytes, n, Seconds(r.step_seconds))
        .value();
  };
  double eight = bus(8), sixteen = bus(16);
  EXPECT_GT(eight, 2 * sixteen);
}

}  // namespace
}  // namespace cleave::sim
