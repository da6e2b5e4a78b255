// evaluate(): a plan that overflows a device names that device, by how much and what is live
// there; a plan that does not fit the cluster or the graph is a clear error; host copies count as
// swapped-in data and free the block they copy.
#include <algorithm>
#include <gtest/gtest.h>
#include <numeric>

#include "autodiff/training_graph.h"
#include "cluster/presets.h"
#include "models/model_zoo.h"
#include "sim/evaluate.h"
#include "sim/memory_use.h"

namespace cleave::sim {
namespace {

constexpr char const* mlp = "mlp:layers=2,hidden=256,input=128,classes=16,batch=64";

struct Fixture {
  std::unique_ptr<ops::OpRegistry> registry = ops::OpRegistry::with_builtins();
  ir::Graph graph;
  explicit Fixture(std::string const& model)
      : graph(*autodiff::build_training_graph(
            *models::ModelZoo::with_builtins().build(model, *registry), *registry)) {}

  // Every op unsplit on `device` of `devices`.
  plan::Plan all_on(int device, int devices) const {
    auto p = plan::single_device_plan(graph, *registry);
    p.num_devices = devices;
    for (auto& op : p.ops)
      for (auto& d : op.devices)
        d = device;
    return p;
  }

  // The plan evaluated on the cluster `spec` names (64 samples a step).
  Expected<Evaluation> evaluate_on(std::string const& spec, plan::Plan const& p) const {
    auto cluster = *cluster::load_cluster(spec);
    cost::CostModel cost(cluster);
    return evaluate({graph, *registry, p, cost, 64});
  }
};

TEST(Evaluate, AnOverflowNamesTheDeviceTheShortfallAndWhatIsLive) {
  Fixture f(mlp);
  auto e = f.evaluate_on("cpu:devices=2,memory=1MiB", f.all_on(1, 2));
  ASSERT_TRUE(e.has_value()) << e.error().to_string();
  EXPECT_FALSE(e->prediction.fits);
  ASSERT_EQ(e->violations.size(), 1u);  // device 0 holds nothing
  auto const& v = e->violations[0];
  EXPECT_EQ(v.device, 1);
  auto const& m = e->devices[1].memory;
  EXPECT_EQ(m.capacity_bytes, 1 << 20);
  EXPECT_EQ(v.over_bytes, m.peak_bytes - m.capacity_bytes);
  EXPECT_GT(v.over_bytes, 0);
  EXPECT_EQ(m.peak_bytes, e->prediction.peak_memory_bytes[1]);
  EXPECT_EQ(e->devices[0].memory.peak_bytes, 0);
  EXPECT_LE(v.first_over_s, v.peak_s);
  EXPECT_EQ(v.peak_s, m.peak_s);
  // The weights and their momentum are held from the start: more than 1 MiB of them alone.
  EXPECT_GT(m.peak_by_role[static_cast<std::size_t>(MemoryRole::weights)], 0);
  EXPECT_GT(m.peak_by_role[static_cast<std::size_t>(MemoryRole::optimizer_state)], 0);
  EXPECT_EQ(std::accumulate(m.peak_by_role.begin(), m.peak_by_role.end(), std::int64_t{0}),
            m.peak_bytes);
  ASSERT_EQ(v.largest.size(), 5u);
  // The largest block is the 256x256 weight or its momentum (fp32).
  EXPECT_EQ(v.largest[0].bytes, 256 * 256 * 4);
  for (std::size_t i = 1; i < v.largest.size(); ++i)
    EXPECT_GE(v.largest[i - 1].bytes, v.largest[i].bytes);
  EXPECT_FALSE(v.largest[0].tensor.empty());
}

TEST(Evaluate, APlanThatFitsHasNoViolations) {
  Fixture f(mlp);
  auto e = f.evaluate_on("cpu:devices=2", f.all_on(0, 2));
  ASSERT_TRUE(e.has_value()) << e.error().to_string();
  EXPECT_TRUE(e->violations.empty());
  EXPECT_TRUE(e->prediction.fits);
  EXPECT_GT(e->prediction.samples_per_s, 0);
  ASSERT_EQ(e->devices.size(), 2u);
  EXPECT_EQ(e->devices[0].name, "cpu0");
  EXPECT_GT(e->devices[0].time.compute_s, 0);
  EXPECT_EQ(e->devices[1].time.compute_s, 0);
}

TEST(Evaluate, AMismatchedPlanIsAClearError) {
  Fixture f(mlp);
  auto four = *cluster::load_cluster("cpu:devices=4");
  cost::CostModel cost(four);
  auto plan = f.all_on(0, 2);
  plan.cluster = "cpu:devices=2";
  auto e = evaluate({f.graph, *f.registry, plan, cost, 64});
  ASSERT_FALSE(e.has_value());
  EXPECT_NE(
      e.error().message().find("the plan uses 2 devices but the cluster 'cpu:devices=2' has 4"),
      std::string::npos)
      << e.error().message();

  Fixture other("mlp:layers=3,hidden=256,input=128,classes=16,batch=64");
  auto two = *cluster::load_cluster("cpu:devices=2");
  cost::CostModel cost2(two);
  auto wrong_graph = evaluate({other.graph, *other.registry, plan, cost2, 64});
  ASSERT_FALSE(wrong_graph.has_value());
  EXPECT_NE(wrong_graph.error().message().find("made for graph"), std::string::npos)
      << wrong_graph.error().message();
}

// The GPU model prices the ops fused into an element-wise chain at no time: their outputs are
// allocated and freed at one instant, the free first (MemoryUse's order). The pool's replay gives
// each such block an object and takes it back at once; it kept the object for the rest of the
// step, so a pool holding the most blocks ever live at once overflowed (every swapadvisor plan of
// a CNN on v100x1 did so).
TEST(Evaluate, APoolGivesBackTheObjectsOfBlocksThatLiveNoTime) {
  Fixture f("resnet:depth=18,batch=2,image=32,classes=10");
  auto p = f.all_on(0, 1);
  auto first = f.evaluate_on("v100x1", p);
  ASSERT_TRUE(first.has_value()) << first.error().to_string();
  auto use = memory_use(f.graph, first->program, first->prediction.sim.spans);
  // The most blocks live at once, in the events' order, a block freed before its allocation at
  // one instant counted at its allocation only.
  std::vector<bool> allocated(use.blocks.size(), false), instant(use.blocks.size(), false);
  std::int64_t largest = 0, live = 0, most = 0;
  std::size_t instants = 0;
  for (auto const& ev : use.events[0]) {
    largest = std::max(largest, ev.bytes);
    if (ev.bytes < 0) {
      if (allocated[ev.block]) {
        --live;
      } else {
        instant[ev.block] = true;
        ++instants;
      }
      continue;
    }
    allocated[ev.block] = true;
    most = std::max(most, ++live);
    if (instant[ev.block]) --live;
  }
  ASSERT_GT(instants, 10u);  // the case is exercised
  // One class whose objects hold any block, as many as the most blocks live at once.
  p.pools = {memory::Pool{{{largest, most}}}};
  auto e = f.evaluate_on("v100x1", p);
  ASSERT_TRUE(e.has_value()) << e.error().to_string();
  EXPECT_TRUE(e->violations.empty());
  ASSERT_TRUE(e->devices[0].pool.has_value());
  EXPECT_LE(e->devices[0].pool->peak_object_bytes, largest * most);
}

TEST(MemoryUse, HostCopiesAreSwappedInDataAndFreeTheBlockTheyCopy) {
  Fixture f(mlp);
  auto cluster = *cluster::load_cluster("cpu:devices=1");
  cost::CostModel cost(cluster);
  auto e = evaluate({f.graph, *f.registry, f.all_on(0, 1), cost, 64});
  ASSERT_TRUE(e.has_value()) << e.error().to_string();
  // Swap the first activation out after it is written and back in at the end of the step.
  auto program = e->program;
  auto spans = e->prediction.sim.spans;
  lower::TaskId written = 0;
  while (program.tasks[written].kind != lower::TaskKind::compute ||
         f.graph.tensor(program.tasks[written].tensor).role != ir::TensorRole::activation)
    ++written;
  lower::Task const w = program.tasks[written];  // a copy: the list grows below
  double end = e->prediction.step_time_s;
  lower::Task out;
  out.kind = lower::TaskKind::swap_out;
  out.device = w.device;
  out.tensor = w.tensor;
  out.region = w.region;
  out.deps = {written};
  lower::Task in = out;
  in.kind = lower::TaskKind::swap_in;
  in.deps = {static_cast<lower::TaskId>(program.tasks.size())};
  program.tasks.push_back(out);
  program.tasks.push_back(in);
  spans.push_back({spans[written].end, spans[written].end});
  spans.push_back({end, end + 1});
  auto use = memory_use(f.graph, program, spans);
  std::int64_t size = tdl::box_volume(w.region) * 4;
  auto const& events = use.events[0];
  // The swap-out frees the block its task wrote; the swap-in's block is swapped-in data.
  std::vector<std::int64_t> live(use.blocks.size(), 0);
  for (auto const& ev : events) {
    live[ev.block] += ev.bytes;
    EXPECT_GE(live[ev.block], 0);
  }
  auto in_block = std::find_if(use.blocks.begin(), use.blocks.end(), [&](MemoryBlock const& b) {
    return b.task == program.tasks.size() - 1;
  });
  ASSERT_NE(in_block, use.blocks.end());
  EXPECT_EQ(in_block->role, MemoryRole::swapped_in);
  EXPECT_EQ(live[static_cast<std::size_t>(in_block - use.blocks.begin())], size);
  auto written_block = std::find_if(use.blocks.begin(), use.blocks.end(),
                                    [&](MemoryBlock const& b) { return b.task == written; });
  EXPECT_EQ(live[static_cast<std::size_t>(written_block - use.blocks.begin())], 0);
  auto memory = device_memory(f.graph, use, cluster, 3);
  EXPECT_EQ(memory[0].timeline.back().time_s, end);
}

}  // namespace
}  // namespace cleave::sim
