// The plan's schedule in the lowering (schedule.h): orders become ordering-only edges that keep no
// block alive, swaps become a swap-out and a swap-in whose late readers read the copy, the
// program still computes what the graph computes, and bad schedules are clear errors. Also the
// per-tensor fetch policy and the plan format's version 2.
#include <algorithm>
#include <functional>
#include <gtest/gtest.h>

#include "autodiff/training_graph.h"
#include "lower/lifetime.h"
#include "lower/lowering.h"
#include "lower/reference_check.h"
#include "lower/reference_run.h"
#include "lower/schedule.h"
#include "lower/test_models.h"
#include "models/model_zoo.h"
#include "ops/op_builder.h"
#include "ops/reference_executor.h"
#include "plan/plan_json.h"

namespace cleave::lower {
namespace {

using namespace testing;

struct Mlp {
  std::unique_ptr<ops::OpRegistry> registry = ops::OpRegistry::with_builtins();
  ir::Graph graph = *autodiff::build_training_graph(
      *models::ModelZoo::with_builtins().build("mlp:layers=2,hidden=8,input=6,classes=3,batch=4",
                                               *registry),
      *registry);
  plan::Plan single = plan::single_device_plan(graph, *registry);
};

// A plan made bad one way, and what the error of lowering it must say.
struct BadPlan {
  std::function<void(plan::Plan&)> change;
  std::string message;
};

void expect_each_rejected(Mlp const& m, plan::Plan const& good, std::vector<BadPlan> const& cases) {
  for (auto const& c : cases) {
    plan::Plan p = good;
    c.change(p);
    auto program = lower(m.graph, p, *m.registry);
    ASSERT_FALSE(program.has_value()) << c.message;
    EXPECT_NE(program.error().message().find(c.message), std::string::npos)
        << c.message << "\n"
        << program.error().message();
  }
}

TEST(Schedule, OrdersAreOrderingEdgesThatKeepNoBlockAlive) {
  Mlp m;
  auto plain = lower(m.graph, m.single, *m.registry);
  ASSERT_TRUE(plain.has_value());
  plan::Plan p = with_swapped_activations(m.graph, m.single, /*gap=*/1000);
  ASSERT_TRUE(p.swaps.empty());
  auto ordered = lower(m.graph, p, *m.registry);
  ASSERT_TRUE(ordered.has_value()) << ordered.error().to_string();
  // The same tasks, plus one edge per consecutive pair of pieces; the same lifetimes.
  ASSERT_EQ(ordered->tasks.size(), plain->tasks.size());
  EXPECT_EQ(ordered->ordering.size(), m.graph.num_ops() - 1);
  EXPECT_TRUE(plain->ordering.empty());
  auto a = output_lifetimes(*plain), b = output_lifetimes(*ordered);
  for (std::size_t i = 0; i < a.size(); ++i)
    EXPECT_EQ(a[i].readers, b[i].readers);
  expect_computes_the_graph(m.graph, *ordered, *m.registry, /*seed=*/7);
}

TEST(Schedule, SwapsAreLoweredToHostCopiesThatLateReadersRead) {
  Mlp m;
  plan::Plan p = with_swapped_activations(m.graph, m.single, /*gap=*/2);
  ASSERT_FALSE(p.swaps.empty());
  auto program = lower(m.graph, p, *m.registry);
  ASSERT_TRUE(program.has_value()) << program.error().to_string();
  auto lifetimes = output_lifetimes(*program);
  std::size_t outs = 0;
  for (TaskId i = 0; i < program->tasks.size(); ++i) {
    Task const& t = program->tasks[i];
    if (t.kind != TaskKind::swap_out) continue;
    ++outs;
    // The swap-out reads its block's writer, whose block it frees; the swap-in follows it and is
    // read by every backward reader of the tensor.
    TaskId writer = t.deps.at(0);
    EXPECT_TRUE(lifetimes[writer].swapped);
    EXPECT_FALSE(lifetimes[i].allocates);
    Task const& in = program->tasks[i + 1];
    EXPECT_EQ(in.kind, TaskKind::swap_in);
    EXPECT_EQ(in.deps, std::vector<TaskId>{i});
    for (TaskId r : lifetimes[i + 1].readers)
      EXPECT_TRUE(m.graph.op(program->tasks[r].op).forward.valid());
    EXPECT_FALSE(lifetimes[i + 1].readers.empty());
    for (TaskId r : lifetimes[writer].readers)
      EXPECT_TRUE(r == i || !m.graph.op(program->tasks[r].op).forward.valid());
  }
  EXPECT_EQ(outs, p.swaps.size());
  expect_computes_the_graph(m.graph, *program, *m.registry, /*seed=*/7);
}

// A swap's `out_before` piece waits for its swap-out: the edge that keeps a plan's memory within
// what its swap planner counted, however copies and computation interleave.
TEST(Schedule, OutBeforeWaitsForTheSwapOut) {
  Mlp m;
  plan::Plan p = with_swapped_activations(m.graph, m.single, /*gap=*/2);
  ASSERT_FALSE(p.swaps.empty());
  p.swaps[0].out_before = p.swaps[0].in_before;
  auto program = lower(m.graph, p, *m.registry);
  ASSERT_TRUE(program.has_value()) << program.error().to_string();
  std::optional<TaskId> out, before;
  for (TaskId i = 0; i < program->tasks.size(); ++i) {
    Task const& t = program->tasks[i];
    if (t.kind == TaskKind::swap_out && t.tensor == p.swaps[0].tensor) out = i;
    if (t.kind == TaskKind::compute && t.op.value() == p.swaps[0].in_before->op) before = i;
  }
  ASSERT_TRUE(out && before);
  auto const& e = program->ordering;
  EXPECT_NE(std::find(e.begin(), e.end(), OrderEdge{*before, *out}), e.end());
  expect_computes_the_graph(m.graph, *program, *m.registry, /*seed=*/7);
}

// The graph's order with each weight swapped out after its forward reader and back before its
// first backward reader (the backward and optimizer ops read the copy).
plan::Plan with_swapped_weights(ir::Graph const& g, plan::Plan const& single) {
  plan::Plan p = with_swapped_activations(g, single, /*gap=*/1000);
  std::vector<std::size_t> position(g.num_ops());
  for (std::size_t k = 0; k < p.order[0].size(); ++k)
    position[p.order[0][k].op] = k;
  for (auto const& t : g.tensors()) {
    if (t.role != ir::TensorRole::weight || g.producer(t.id).valid()) continue;
    std::optional<ir::OpId> forward, backward;
    auto at = [&](ir::OpId op) { return position[op.value()]; };
    for (ir::OpId c : g.consumers(t.id)) {
      if (!g.op(c).forward.valid() && (!forward || at(c) > at(*forward))) forward = c;
      if (g.op(c).forward.valid() && (!backward || at(c) < at(*backward))) backward = c;
    }
    if (forward && backward && position[backward->value()] > position[forward->value()] + 1)
      p.swaps.push_back({t.id, tdl::whole_box(t.type.shape), 0, plan::PieceRef{forward->value(), 0},
                         plan::PieceRef{backward->value(), 0}, std::nullopt, std::nullopt});
  }
  return p;
}

// A block held before the step is swapped like one the step writes: its swap-out depends on no
// task (it follows its piece by an ordering edge) and frees the block; the device's later readers
// list the swap-in, whose copy they read; the program still computes the graph.
TEST(Schedule, BlocksHeldBeforeTheStepAreSwapped) {
  Mlp m;
  plan::Plan p = with_swapped_weights(m.graph, m.single);
  ASSERT_FALSE(p.swaps.empty());
  auto program = lower(m.graph, p, *m.registry);
  ASSERT_TRUE(program.has_value()) << program.error().to_string();
  auto lifetimes = output_lifetimes(*program);
  std::size_t outs = 0;
  for (TaskId i = 0; i < program->tasks.size(); ++i) {
    Task const& t = program->tasks[i];
    if (t.kind != TaskKind::swap_out) continue;
    ++outs;
    EXPECT_TRUE(t.deps.empty());
    EXPECT_LT(i, 2 * p.swaps.size());  // first in the task list
    EXPECT_EQ(program->tasks[i + 1].kind, TaskKind::swap_in);
    ASSERT_FALSE(lifetimes[i + 1].readers.empty());
    for (TaskId r : lifetimes[i + 1].readers)
      EXPECT_TRUE(m.graph.op(program->tasks[r].op).forward.valid());
  }
  EXPECT_EQ(outs, p.swaps.size());
  expect_computes_the_graph(m.graph, *program, *m.registry, /*seed=*/7);
  // Out after the first op: the last weight's forward reader reads it between out and in.
  p.swaps.back().out_after = p.order[0].front();
  auto bad = lower(m.graph, p, *m.registry);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("reads it between the swap-out and the swap-in"),
            std::string::npos)
      << bad.error().message();
}

// with_swapped_weights with each weight swapped out a second time after its first backward reader
// and back before its next reader (the update, in the graph's order), where one follows.
plan::Plan with_weights_swapped_twice(ir::Graph const& g, plan::Plan const& single) {
  plan::Plan p = with_swapped_weights(g, single);
  std::vector<std::size_t> position(g.num_ops());
  for (std::size_t k = 0; k < p.order[0].size(); ++k)
    position[p.order[0][k].op] = k;
  std::vector<plan::Swap> again;
  for (auto const& s : p.swaps) {
    std::size_t in = position[s.in_before->op];
    std::optional<std::size_t> next;
    for (ir::OpId c : g.consumers(s.tensor))
      if (position[c.value()] > in && (!next || position[c.value()] < *next))
        next = position[c.value()];
    if (next)
      again.push_back(
          {s.tensor, s.region, 0, s.in_before, p.order[0][*next], std::nullopt, std::nullopt});
  }
  p.swaps.insert(p.swaps.end(), again.begin(), again.end());
  return p;
}

// A block swapped out, in, out again and in again: the second swap-out copies the first swap-in's
// copy (its only dependency, whose block it frees), the readers up to it read that copy, those
// after the second swap-in read the second; the program still computes the graph. Swaps of one
// block that do not alternate are clear errors.
TEST(Schedule, ABlockIsSwappedOutAgainAfterItsSwapIn) {
  Mlp m;
  plan::Plan p = with_weights_swapped_twice(m.graph, m.single);
  std::size_t twice = p.swaps.size() - with_swapped_weights(m.graph, m.single).swaps.size();
  ASSERT_GT(twice, 0u);
  auto program = lower(m.graph, p, *m.registry);
  ASSERT_TRUE(program.has_value()) << program.error().to_string();
  auto lifetimes = output_lifetimes(*program);
  std::size_t outs = 0, chained = 0;
  for (TaskId i = 0; i < program->tasks.size(); ++i) {
    Task const& t = program->tasks[i];
    if (t.kind != TaskKind::swap_out) continue;
    ++outs;
    if (t.deps.empty()) continue;  // the first swap-out of a weight held before the step
    ++chained;
    TaskId in = t.deps.at(0);
    EXPECT_EQ(t.deps.size(), 1u);
    EXPECT_EQ(program->tasks[in].kind, TaskKind::swap_in);
    EXPECT_EQ(program->tasks[in].tensor, t.tensor);
    EXPECT_TRUE(lifetimes[in].swapped);
    // The first copy is read by its backward reader as well as copied out again.
    EXPECT_GE(lifetimes[in].readers.size(), 2u);
    Task const& second = program->tasks[i + 1];
    EXPECT_EQ(second.kind, TaskKind::swap_in);
    EXPECT_EQ(second.deps, std::vector<TaskId>{i});
    EXPECT_FALSE(lifetimes[i + 1].readers.empty());
    for (TaskId r : lifetimes[i + 1].readers)
      EXPECT_NE(r, in);
  }
  EXPECT_EQ(outs, p.swaps.size());
  EXPECT_EQ(chained, twice);
  expect_computes_the_graph(m.graph, *program, *m.registry, /*seed=*/7);

  // The first swap of a block swapped twice (the second swaps are listed last), and its second.
  std::size_t k = p.swaps.size() - twice;
  std::size_t f = 0;
  while (p.swaps[f].tensor != p.swaps[k].tensor)
    ++f;
  std::vector<BadPlan> cases = {
      // Out again before the first copy came back: the two overlap.
      {[&](plan::Plan& q) { q.swaps[k].out_after = q.swaps[f].out_after; }, "must alternate"},
      // The first brings it back only after the second took it out again.
      {[&](plan::Plan& q) { q.swaps[f].in_before = q.swaps[k].in_before; }, "must alternate"},
      {[&](plan::Plan& q) { q.swaps.push_back(q.swaps[f]); }, "must alternate"},
      {[&](plan::Plan& q) {
         q.swaps[f].in_before.reset();
         q.swaps[f].in_after.reset();
       },
       "leaves it on the host to the step's end"},
  };
  expect_each_rejected(m, p, cases);
}

// The graph's order with every block held before the step starting it on the host: brought
// before its first reader, each weight again before its first backward reader (its first copy
// dropped after its forward reader), and each update's output left on the host.
plan::Plan with_held_blocks_on_host(ir::Graph const& g, plan::Plan const& single) {
  plan::Plan p = with_swapped_activations(g, single, /*gap=*/1000);
  std::vector<std::size_t> position(g.num_ops());
  for (std::size_t k = 0; k < p.order[0].size(); ++k)
    position[p.order[0][k].op] = k;
  auto at = [&](ir::OpId op) { return position[op.value()]; };
  for (auto const& t : g.tensors()) {
    if (g.producer(t.id).valid()) continue;
    std::optional<ir::OpId> first, backward;
    for (ir::OpId c : g.consumers(t.id)) {
      if (!first || at(c) < at(*first)) first = c;
      if (g.op(c).forward.valid() && (!backward || at(c) < at(*backward))) backward = c;
    }
    auto bring = [&](ir::OpId before) {
      p.swaps.push_back({t.id, tdl::whole_box(t.type.shape), 0, std::nullopt,
                         plan::PieceRef{before.value(), 0}, std::nullopt, std::nullopt});
    };
    bring(*first);
    if (t.role == ir::TensorRole::weight && backward && at(*backward) > at(*first))
      bring(*backward);
    if (auto update = update_of(g, t.id)) {
      // Out after its last reader (SGD's weight update reads the updated momentum).
      ir::TensorId next = g.op(*update).outputs[0];
      ir::OpId last = *update;
      for (ir::OpId c : g.consumers(next))
        if (at(c) > at(last)) last = c;
      p.swaps.push_back({next, tdl::whole_box(g.tensor(next).type.shape), 0,
                         plan::PieceRef{last.value(), 0}, std::nullopt, std::nullopt,
                         std::nullopt});
    }
  }
  return p;
}

// Blocks that start the step on the host have no swap-out: each swap-in depends on no task and
// its readers are the pieces from its in_before to the next one's; an update's output left on the
// host has a swap-out and no swap-in; the program still computes the graph (the updated weights
// read back from the host).
TEST(Schedule, HeldBlocksStartTheStepOnTheHost) {
  Mlp m;
  plan::Plan p = with_held_blocks_on_host(m.graph, m.single);
  auto program = lower(m.graph, p, *m.registry);
  ASSERT_TRUE(program.has_value()) << program.error().to_string();
  for (auto const& b : program->initial)
    EXPECT_TRUE(b.on_host) << m.graph.tensor(b.tensor).name;
  auto lifetimes = output_lifetimes(*program);
  std::size_t ins = 0, outs = 0, updates = 0;
  for (auto const& op : m.graph.ops())
    updates += !op.inputs.empty() && update_of(m.graph, op.inputs[0]) == op.id;
  for (TaskId i = 0; i < program->tasks.size(); ++i) {
    Task const& t = program->tasks[i];
    if (t.kind == TaskKind::swap_in) {
      ++ins;
      EXPECT_TRUE(t.deps.empty());
      EXPECT_FALSE(lifetimes[i].readers.empty());
    }
    if (t.kind == TaskKind::swap_out) {
      ++outs;
      EXPECT_TRUE(lifetimes[t.deps.at(0)].swapped);
      EXPECT_TRUE(i + 1 == program->tasks.size() ||
                  program->tasks[i + 1].kind != TaskKind::swap_in);
    }
  }
  EXPECT_GT(updates, 0u);
  EXPECT_EQ(outs, updates);
  EXPECT_EQ(ins + outs, p.swaps.size());
  expect_computes_the_graph(m.graph, *program, *m.registry, /*seed=*/7);

  // Made bad one way each: what the error says.
  auto first_from_host = std::find_if(p.swaps.begin(), p.swaps.end(),
                                      [](plan::Swap const& s) { return !s.out_after; });
  auto first_to_host = std::find_if(p.swaps.begin(), p.swaps.end(),
                                    [](plan::Swap const& s) { return !s.in_before; });
  auto activation = with_swapped_activations(m.graph, m.single, /*gap=*/2).swaps.at(0);
  std::vector<BadPlan> cases = {
      {[&](plan::Plan& q) { q.swaps.erase(q.swaps.begin() + (first_to_host - p.swaps.begin())); },
       "does not end it there"},
      {[&](plan::Plan& q) {
         ir::TensorId weight = m.graph.op(m.graph.producer(first_to_host->tensor)).inputs[0];
         std::erase_if(q.swaps, [&](plan::Swap const& s) { return s.tensor == weight; });
       },
       "ends it on the host"},
      {[&](plan::Plan& q) {
         auto swap = activation;
         swap.out_after.reset();
         q.swaps.push_back(swap);
       },
       "which only a block held before the step can"},
      {[&](plan::Plan& q) {
         auto swap = activation;
         swap.in_before.reset();
         swap.in_after.reset();
         q.swaps.push_back(swap);
       },
       "reads it after its swap-out"},
      {[&](plan::Plan& q) { q.swaps.push_back(*first_from_host); },
       "another swap brings it for the same piece"},
      {[&](plan::Plan& q) {
         q.swaps[static_cast<std::size_t>(first_from_host - p.swaps.begin())].in_before =
             q.order[0].back();
       },
       "before the first swap-in brings it"},
      {[&](plan::Plan& q) {
         plan::Swap neither;  // no out_after, no in_before
         neither.tensor = activation.tensor;
         neither.region = activation.region;
         q.swaps.push_back(neither);
       },
       "neither a swap-out"},
  };
  expect_each_rejected(m, p, cases);
}

// Each check: a plan made bad one way, and what its error must say.
TEST(Schedule, BadSchedulesAreClearErrors) {
  Mlp m;
  plan::Plan good = with_swapped_activations(m.graph, m.single, /*gap=*/2);
  ASSERT_FALSE(good.swaps.empty());
  std::vector<BadPlan> cases = {
      {[](plan::Plan& p) { p.order.clear(); }, "orders no device"},
      {[](plan::Plan& p) { std::swap(p.swaps[0].out_after, p.swaps[0].in_before); },
       "which the device's order runs before swapping out"},
      {[](plan::Plan& p) { p.swaps[0].region[0].hi -= 1; }, "is not a block the device computes"},
      {[](plan::Plan& p) { p.swaps[0].region[0].hi += 1; }, "inside the tensor's shape"},
      {[](plan::Plan& p) { p.swaps[0].device = 1; }, "no such device"},
      {[](plan::Plan& p) { p.swaps.push_back(p.swaps[0]); }, "must alternate"},
      {[&](plan::Plan& p) { p.swaps[0].in_after = p.swaps[0].in_before; },
       "it issues the swap-in after"},
      {[](plan::Plan& p) { p.swaps[0].in_before = p.order[0].back(); },
       "reads it between the swap-out and the swap-in"},
      {[](plan::Plan& p) { p.swaps[0].out_before = p.swaps[0].out_after; },
       "its swap-out is awaited by"},
      {[](plan::Plan& p) {
         p.tensor_fetch = {{ir::TensorId(0)}, {ir::TensorId(0)}};
       },
       "fetch policy of tensor"},
      {[&](plan::Plan& p) { p.tensor_fetch = {{ir::TensorId(99999)}}; }, "does not have"},
  };
  expect_each_rejected(m, good, cases);
}

// The simulator starts a collective's members together, so an order that only a collective
// makes cyclic is an error too: b's piece 0 on device 1 reads a's piece 0 from device 0 and b's
// piece 1 on device 0 reads a's piece 1 from device 1, an all-gather; device 1 running b's piece 0
// before a's piece 1 waits on the all-gather, which waits on a's piece 1.
TEST(Schedule, AnOrderCyclicOnlyThroughACollectiveIsAnError) {
  auto registry = ops::OpRegistry::with_builtins();
  ops::OpBuilder b(*registry);
  auto x = b.input("x", {4, 8});
  auto y = b.op("relu", {x}, {}, "a");
  b.op("relu", {y}, {}, "b");
  ir::Graph g = *b.finish();
  plan::Plan p = plan::single_device_plan(g, *registry);
  p.num_devices = 2;
  p.ops[0] = {{2, 1}, {0, 1}};
  p.ops[1] = {{2, 1}, {1, 0}};
  auto plain = lower(g, p, *registry);
  ASSERT_TRUE(plain.has_value()) << plain.error().to_string();
  ASSERT_EQ(plain->collectives.size(), 1u);
  EXPECT_EQ(plain->collectives[0].kind, CollectiveKind::all_gather);
  p.order = {{{0, 0}, {1, 1}}, {{1, 0}, {0, 1}}};
  auto ordered = lower(g, p, *registry);
  ASSERT_FALSE(ordered.has_value());
  EXPECT_NE(ordered.error().message().find("runs op 'b' piece 0 before op 'a' piece 1"),
            std::string::npos)
      << ordered.error().message();
  p.order = {{{0, 0}, {1, 1}}, {{0, 1}, {1, 0}}};
  EXPECT_TRUE(lower(g, p, *registry).has_value());
}

// A plan-wide fetch policy and the same policy set tensor by tensor lower alike; an override
// changes only what its tensor's readers fetch.
TEST(Schedule, PerTensorFetchPolicies) {
  Mlp m;
  auto cluster_plan = [&](plan::FetchPolicy f) {
    plan::Plan p = m.single;
    p.num_devices = 2;
    // The updates on device 1, the rest on device 0: the weights live on device 1, and device 0
    // reads them in the forward and in the backward pass.
    for (auto const& op : m.graph.ops()) {
      auto role = m.graph.tensor(op.outputs[0]).role;
      bool update = role == ir::TensorRole::weight || role == ir::TensorRole::optimizer_state;
      p.ops[op.id.value()].devices = {update ? 1 : 0};
    }
    p.fetch = f;
    return p;
  };
  plan::Plan by_plan = cluster_plan(plan::FetchPolicy::per_pass);
  plan::Plan by_tensor = cluster_plan(plan::FetchPolicy::shared);
  for (auto const& t : m.graph.tensors())
    by_tensor.tensor_fetch.push_back({t.id, plan::FetchPolicy::per_pass});
  auto a = lower(m.graph, by_plan, *m.registry);
  auto b = lower(m.graph, by_tensor, *m.registry);
  auto shared = lower(m.graph, cluster_plan(plan::FetchPolicy::shared), *m.registry);
  ASSERT_TRUE(a.has_value() && b.has_value() && shared.has_value());
  ASSERT_EQ(a->tasks.size(), b->tasks.size());
  for (std::size_t i = 0; i < a->tasks.size(); ++i) {
    EXPECT_EQ(a->tasks[i].deps, b->tasks[i].deps);
    EXPECT_EQ(a->tasks[i].region, b->tasks[i].region);
  }
  EXPECT_NE(a->tasks.size(), shared->tasks.size()) << "per-pass should fetch more here";
  expect_computes_the_graph(m.graph, *b, *m.registry, /*seed=*/7);
}

TEST(Schedule, ReconfigureDropsTheScheduleAndRenumbers) {
  Mlp m;
  plan::Plan p = with_swapped_activations(m.graph, m.single, /*gap=*/2);
  auto lowering = Lowering::create(m.graph, p, *m.registry);
  ASSERT_TRUE(lowering.has_value());
  EXPECT_FALSE(lowering->program().ordering.empty());
  ir::OpId op = m.graph.topo_order()[0];
  ASSERT_TRUE(lowering->reconfigure(op, p.ops[op.value()]).is_ok());
  EXPECT_TRUE(lowering->plan().order.empty());
  EXPECT_TRUE(lowering->plan().swaps.empty());
  auto fresh = lower(m.graph, lowering->plan(), *m.registry);
  ASSERT_TRUE(fresh.has_value());
  EXPECT_TRUE(lowering->program().ordering.empty());
  ASSERT_EQ(lowering->program().tasks.size(), fresh->tasks.size());
  for (std::size_t i = 0; i < fresh->tasks.size(); ++i)
    EXPECT_EQ(lowering->program().tasks[i].deps, fresh->tasks[i].deps);
  for (auto const& prev : lowering->previous_ids())
    EXPECT_FALSE(prev.has_value());
}

TEST(PlanJson, Version2CarriesTheScheduleAndVersion1Loads) {
  Mlp m;
  plan::Plan p = with_swapped_activations(m.graph, m.single, /*gap=*/2);
  p.swaps[0].in_after = p.order[0][3];
  p.swaps[0].out_before = p.swaps[0].in_before;
  p.tensor_fetch = {{ir::TensorId(2), plan::FetchPolicy::per_pass}};
  std::string text = plan::plan_to_json(p);
  EXPECT_NE(text.find("\"format\":\"cleave.plan/2\""), std::string::npos);
  auto back = plan::plan_from_json(text);
  ASSERT_TRUE(back.has_value()) << back.error().to_string();
  EXPECT_EQ(back->order, p.order);
  EXPECT_EQ(back->swaps, p.swaps);
  EXPECT_EQ(back->tensor_fetch, p.tensor_fetch);
  EXPECT_EQ(plan::plan_to_json(*back), text);
  auto bad = text;
  bad.replace(bad.find("\"per-pass\""), 10, "\"eager\"");
  auto rejected = plan::plan_from_json(bad);
  ASSERT_FALSE(rejected.has_value());
  EXPECT_NE(rejected.error().message().find("\"tensor_fetch\" policy is \"eager\""),
            std::string::npos)
      << rejected.error().message();
  auto v1 = plan::load_plan(std::string(CLEAVE_PLAN_GOLDEN_DIR) + "/plan_v1_mlp_tofu.json");
  ASSERT_TRUE(v1.has_value()) << v1.error().to_string();
  EXPECT_EQ(v1->fetch, plan::FetchPolicy::per_pass);
  EXPECT_TRUE(v1->swaps.empty() && v1->tensor_fetch.empty() && v1->order.empty());
}

}  // namespace
}  // namespace cleave::lower
