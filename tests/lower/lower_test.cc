// The lowering's core guarantee, on training graphs of small models and random plans (random
// splits of splittable dimensions, random devices): the pieces of every op cover its iteration
// space exactly once, every task finds the data it reads on its device (delivered by transfers and
// reductions), and running the program with the reference interpreter computes exactly what the
// graph computes whole.
#include <gtest/gtest.h>
#include <random>
#include <set>

#include "autodiff/training_graph.h"
#include "cluster/presets.h"
#include "ir/graph_json.h"
#include "lower/reference_check.h"
#include "lower/reference_run.h"
#include "lower/test_models.h"
#include "models/layers.h"
#include "models/model_zoo.h"
#include "ops/reference_executor.h"
#include "search/search.h"

namespace cleave::lower {
namespace {

using namespace testing;

void check_program(ir::Graph const& g, Program const& program, ops::OpRegistry const& r) {
  // Pieces of each op: disjoint, covering the space.
  std::map<std::uint32_t, std::vector<tdl::Box>> pieces;
  for (auto const& t : program.tasks)
    if (t.kind == TaskKind::compute) pieces[t.op.value()].push_back(t.iteration);
  for (auto const& op : g.ops()) {
    auto bound = *r.bind(g, op.id);
    auto const& boxes = pieces[op.id.value()];
    std::int64_t total = 0;
    for (std::size_t a = 0; a < boxes.size(); ++a) {
      total += tdl::box_volume(boxes[a]);
      for (std::size_t b = a + 1; b < boxes.size(); ++b) {
        bool overlap = true;
        for (std::size_t d = 0; d < boxes[a].size(); ++d)
          overlap = overlap && std::max(boxes[a][d].lo, boxes[b][d].lo) <
                                   std::min(boxes[a][d].hi, boxes[b][d].hi);
        EXPECT_FALSE(overlap) << op.name;
      }
    }
    EXPECT_EQ(total, tdl::box_volume(tdl::full_box(*bound))) << op.name;
  }
  for (TaskId id = 0; id < program.tasks.size(); ++id)
    for (TaskId dep : program.tasks[id].deps)
      EXPECT_LT(dep, id);
  // Collectives: ascending groups of distinct devices, members that name their collective, and
  // dependencies from outside that precede the first member (so a collective is one unit).
  for (CollectiveId c = 0; c < program.collectives.size(); ++c) {
    auto const& col = program.collectives[c];
    EXPECT_GE(col.group.size(), 2u);
    EXPECT_TRUE(std::is_sorted(col.group.begin(), col.group.end()));
    EXPECT_EQ(std::adjacent_find(col.group.begin(), col.group.end()), col.group.end());
    ASSERT_FALSE(col.members.empty());
    EXPECT_TRUE(std::is_sorted(col.members.begin(), col.members.end()));
    for (TaskId m : col.members) {
      EXPECT_EQ(program.tasks[m].collective, c);
      for (TaskId dep : program.tasks[m].deps)
        if (program.tasks[dep].collective != c) {
          EXPECT_LT(dep, col.members.front());
        }
    }
  }
  std::size_t members = 0;
  for (auto const& t : program.tasks)
    members += t.collective != no_collective;
  std::size_t listed = 0;
  for (auto const& col : program.collectives)
    listed += col.members.size();
  EXPECT_EQ(members, listed);
}

class Lowering : public ::testing::TestWithParam<std::string> {};

TEST_P(Lowering, RandomPlansComputeWhatTheGraphComputes) {
  auto registry = ops::OpRegistry::with_builtins();
  ir::Graph forward = GetParam() == "cnn" ? tiny_cnn(*registry)
                      : GetParam() == "attention"
                          ? tiny_attention(*registry)
                          : *models::ModelZoo::with_builtins().build(
                                "mlp:layers=2,hidden=6,input=5,classes=3,batch=4", *registry);
  auto g = autodiff::build_training_graph(forward, *registry);
  ASSERT_TRUE(g.has_value()) << g.error().to_string();
  Rng rng(std::hash<std::string>{}(GetParam()));
  Sources sources = random_sources(*g, rng);
  auto whole = ops::evaluate_graph(*g, *registry, sources);
  ASSERT_TRUE(whole.has_value()) << whole.error().to_string();
  int transfers = 0, reduces = 0, collectives = 0;
  for (int trial = 0; trial < 40; ++trial) {
    int devices = 1 + trial % 4;
    plan::Plan p = random_plan(*g, *registry, devices, rng);
    auto program = lower(*g, p, *registry);
    ASSERT_TRUE(program.has_value()) << program.error().to_string();
    check_program(*g, *program, *registry);
    for (auto const& t : program->tasks) {
      transfers += t.kind == TaskKind::transfer;
      reduces += t.kind == TaskKind::reduce;
    }
    collectives += static_cast<int>(program->collectives.size());
    auto run = run_reference(*g, *program, *registry, sources);
    ASSERT_TRUE(run.has_value()) << "trial " << trial << ": " << run.error().to_string();
    for (auto const& t : g->tensors()) {
      if (!g->producer(t.id).valid()) continue;
      auto const& want = (*whole)[t.id.value()].values;
      auto const& got = (*run)[t.id.value()].values;
      ASSERT_EQ(want.size(), got.size()) << t.name;
      for (std::size_t i = 0; i < want.size(); ++i)
        ASSERT_NEAR(got[i], want[i], 1e-9 * std::max(1.0, std::abs(want[i])))
            << t.name << "[" << i << "] trial " << trial << " devices " << devices;
    }
  }
  EXPECT_GT(transfers, 0);
  EXPECT_GT(reduces, 0);
  EXPECT_GT(collectives, 0);
}

TEST(Lowering, BaselinePlansComputeWhatTheGraphComputes) {
  auto registry = ops::OpRegistry::with_builtins();
  auto g = *autodiff::build_training_graph(tiny_attention(*registry), *registry);
  Rng rng(5);
  Sources sources = random_sources(g, rng);
  auto whole = ops::evaluate_graph(g, *registry, sources);
  ASSERT_TRUE(whole.has_value());
  auto cluster = *cluster::load_cluster("cpu:devices=3");
  for (char const* algo : {"single", "data-parallel", "expert"}) {
    cost::CostModel cost(cluster);
    search::SearchContext ctx{g, *registry, cost, "cpu:devices=3", "", 2, 0};
    auto p = search::make_plan(algo, ctx);
    ASSERT_TRUE(p.has_value()) << p.error().to_string();
    auto program = lower(g, *p, *registry);
    ASSERT_TRUE(program.has_value()) << algo << ": " << program.error().to_string();
    auto run = run_reference(g, *program, *registry, sources);
    ASSERT_TRUE(run.has_value()) << algo << ": " << run.error().to_string();
    for (auto const& t : g.tensors()) {
      if (!g.producer(t.id).valid()) continue;
      auto const& want = (*whole)[t.id.value()].values;
      auto const& got = (*run)[t.id.value()].values;
      for (std::size_t i = 0; i < want.size(); ++i)
        ASSERT_NEAR(got[i], want[i], 1e-9 * std::max(1.0, std::abs(want[i])))
            << algo << " " << t.name;
    }
  }
}

// Batch norm's statistics under data parallelism: each device's partial mean and variance are
// reduce-scattered and then every device reads them whole, so each is one all-reduce; and the
// program still computes what the graph computes.
TEST(Lowering, DataParallelBatchNormStatisticsAreAllReduced) {
  auto registry = ops::OpRegistry::with_builtins();
  auto g = *autodiff::build_training_graph(tiny_cnn(*registry), *registry);
  auto cluster = *cluster::load_cluster("cpu:devices=4");
  cost::CostModel cost(cluster);
  search::SearchContext ctx{g, *registry, cost, "cpu:devices=4", "", 4, 0};
  auto p = search::make_plan("data-parallel", ctx);
  ASSERT_TRUE(p.has_value()) << p.error().to_string();
  auto program = lower(g, *p, *registry);
  ASSERT_TRUE(program.has_value()) << program.error().to_string();
  check_program(g, *program, *registry);
  std::set<std::string> all_reduced;
  for (auto const& c : program->collectives)
    if (c.kind == CollectiveKind::all_reduce) {
      all_reduced.insert(g.tensor(c.tensor).name);
      EXPECT_EQ(c.group, (std::vector<int>{0, 1, 2, 3}));
    }
  auto named = [&](std::string const& part) {
    return std::any_of(all_reduced.begin(), all_reduced.end(),
                       [&](std::string const& n) { return n.find(part) != std::string::npos; });
  };
  EXPECT_TRUE(named("bn.mean")) << ::testing::PrintToString(all_reduced);
  EXPECT_TRUE(named("bn.var")) << ::testing::PrintToString(all_reduced);
  expect_computes_the_graph(g, *program, *registry, /*seed=*/3);
}

// A weight held on device 1 (its update runs there) and read on device 0 by a forward op and by a
// backward op: each pass fetches it once (issue 5): the forward fetch waits for nothing, the
// backward one waits for backward tasks (so it runs in the backward pass, not at the start of the
// step), and each is read only by its own pass; the program still computes what the graph does.
TEST(Lowering, ForwardAndBackwardReadersOfAWeightFetchItSeparately) {
  auto registry = ops::OpRegistry::with_builtins();
  auto g = *autodiff::build_training_graph(
      *models::ModelZoo::with_builtins().build("mlp:layers=2,hidden=6,input=5,classes=3,batch=4",
                                               *registry),
      *registry);
  plan::Plan p = plan::single_device_plan(g, *registry);
  p.num_devices = 2;
  for (auto const& op : g.ops())
    if (op.forward.valid() && g.tensor(op.outputs[0]).role == ir::TensorRole::weight)
      p.ops[op.id.value()].devices = {1};  // the updates: weights are held on device 1
  // Under the shared policy (the default) each weight is fetched once, for all its readers.
  auto shared = lower(g, p, *registry);
  ASSERT_TRUE(shared.has_value()) << shared.error().to_string();
  p.fetch = plan::FetchPolicy::per_pass;
  auto program = lower(g, p, *registry);
  ASSERT_TRUE(program.has_value()) << program.error().to_string();
  check_program(g, *program, *registry);
  auto backward = [&](TaskId id) {
    auto const& t = program->tasks[id];
    return t.kind == TaskKind::compute ? g.op(t.op).forward.valid() : true;
  };
  int weights_checked = 0;
  for (auto const& w : g.tensors()) {
    if (w.role != ir::TensorRole::weight || g.producer(w.id).valid()) continue;
    std::vector<TaskId> fetches;
    for (TaskId i = 0; i < program->tasks.size(); ++i)
      if (program->tasks[i].kind == TaskKind::transfer && program->tasks[i].tensor == w.id)
        fetches.push_back(i);
    bool read_backward = false;
    for (ir::OpId c : g.consumers(w.id))
      read_backward = read_backward || (g.op(c).forward.valid() && g.op(c).inputs[0] != w.id);
    auto fetched_shared = std::count_if(shared->tasks.begin(), shared->tasks.end(), [&](auto& t) {
      return t.kind == TaskKind::transfer && t.tensor == w.id;
    });
    EXPECT_EQ(fetched_shared, 1) << w.name;
    if (!read_backward) {
      EXPECT_EQ(fetches.size(), 1u) << w.name;  // the forward op's only
      continue;
    }
    ASSERT_EQ(fetches.size(), 2u) << w.name;
    auto const& early = program->tasks[fetches[0]];
    auto const& late = program->tasks[fetches[1]];
    EXPECT_EQ(early.region, late.region) << w.name;
    EXPECT_TRUE(early.deps.empty()) << w.name;
    ASSERT_FALSE(late.deps.empty()) << w.name;
    for (TaskId d : late.deps)
      EXPECT_TRUE(backward(d)) << w.name;
    for (TaskId i = 0; i < program->tasks.size(); ++i)
      for (TaskId d : program->tasks[i].deps) {
        if (d == fetches[0]) {
          EXPECT_FALSE(backward(i)) << w.name;
        }
        if (d == fetches[1]) {
          EXPECT_TRUE(backward(i)) << w.name;
        }
      }
    ++weights_checked;
  }
  EXPECT_EQ(weights_checked, 2);  // the second and third linears' weights (not the biases)
  expect_computes_the_graph(g, *program, *registry, /*seed=*/3);
}

INSTANTIATE_TEST_SUITE_P(Models, Lowering, ::testing::Values("mlp", "cnn", "attention"));

TEST(LoweringErrors, PlansThatDoNotFit) {
  auto registry = ops::OpRegistry::with_builtins();
  auto g = *autodiff::build_training_graph(
      *models::ModelZoo::with_builtins().build("mlp:layers=1,hidden=4,input=3,classes=2,batch=2",
                                               *registry),
      *registry);
  auto other = *models::ModelZoo::with_builtins().build(
      "mlp:layers=1,hidden=5,input=3,classes=2,batch=2", *registry);
  plan::Plan p = plan::single_device_plan(other, *registry);
  auto wrong_graph = lower(g, p, *registry);
  ASSERT_FALSE(wrong_graph.has_value());
  EXPECT_NE(wrong_graph.error().message().find("the plan was made for graph"), std::string::npos);

  plan::Plan ok = plan::single_device_plan(g, *registry);
  // A dimension that must not be split (e.g. softmax's axis inside the loss gradient).
  bool found = false;
  for (auto const& op : g.ops()) {
    auto bound = *registry->bind(g, op.id);
    for (std::size_t d = 0; d < bound->dims().size() && !found; ++d) {
      auto const& dim = bound->dims()[d];
      if (dim.splittable || dim.extent < 2) continue;
      auto bad = ok;
      bad.ops[op.id.value()].degrees[d] = 2;
      bad.ops[op.id.value()].devices = {0, 0};
      auto e = lower(g, bad, *registry);
      ASSERT_FALSE(e.has_value());
      EXPECT_NE(e.error().message().find("dimension '" + dim.name + "' cannot be split (" +
                                         dim.unsplittable_reason + ")"),
                std::string::npos)
          << e.error().message();
      found = true;
    }
  }
  EXPECT_TRUE(found);
  auto bad_degree = ok;
  bad_degree.ops[0].degrees[0] = 1000;
  auto e1 = lower(g, bad_degree, *registry);
  ASSERT_FALSE(e1.has_value());
  EXPECT_NE(e1.error().message().find("must be between 1 and its extent"), std::string::npos);
  auto bad_device = ok;
  bad_device.ops[0].devices[0] = 3;
  auto e2 = lower(g, bad_device, *registry);
  ASSERT_FALSE(e2.has_value());
  EXPECT_NE(e2.error().message().find("device 3 is not in 0..0"), std::string::npos);
  auto bad_count = ok;
  bad_count.ops[0].degrees.push_back(1);
  EXPECT_FALSE(lower(g, bad_count, *registry).has_value());
}

}  // namespace
}  // namespace cleave::lower
