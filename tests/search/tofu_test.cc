// Tofu's optimality claims on random small graphs (issue 5): on graphs of at most 8 ops cut over
// 2 and 4 devices, each recursion step's DP finds the step's exhaustive optimum (every choice of
// every node priced by CommModel::evaluate, which does not use the DP's factor tables), the whole
// plan is compared with the best of all recursive plans (equal on most, never far), and the plan's
// predicted bytes are the lowered program's transfer bytes.
#include <gtest/gtest.h>
#include <random>

#include "lower/program.h"
#include "ops/op_builder.h"
#include "search/tofu/tofu.h"

namespace cleave::search::tofu {
namespace {

using Rng = std::mt19937_64;

std::int64_t pick(Rng& rng, std::vector<std::int64_t> const& from) {
  return from[rng() % from.size()];
}

// A random DAG of at most `max_ops` ops over 2-d tensors: linears and matmuls whose second operand
// is itself computed (so that it has a layout to convert from), element-wise ops, residual adds
// and transposes. Tensors are often read twice.
ir::Graph random_graph(ops::OpRegistry const& r, int max_ops, Rng& rng) {
  ops::OpBuilder b(r);
  std::vector<ir::TensorId> pool{b.input("x", {pick(rng, {2, 4, 6}), pick(rng, {2, 4})})};
  int ops = 0, inputs = 0;
  while (ops < max_ops) {
    ir::TensorId a = pool[rng() % pool.size()];
    auto shape = b.shape_of(a);
    switch (rng() % 6) {
    case 0:
      if (ops + 2 > max_ops) continue;
      {
        auto w = b.input("w" + std::to_string(inputs++), {pick(rng, {2, 4}), shape[1]});
        w = b.op("scale", {w}, {{"alpha", 0.5}});
        pool.push_back(b.op("linear", {a, w}));
        ops += 2;
      }
      break;
    case 1:
      if (ops + 2 > max_ops) continue;
      {
        auto m = b.input("m" + std::to_string(inputs++), {shape[1], pick(rng, {2, 4})});
        m = b.op("tanh", {m});
        pool.push_back(b.op("matmul", {a, m}));
        ops += 2;
      }
      break;
    case 2:
      pool.push_back(b.op(rng() % 2 ? "relu" : "tanh", {a}));
      ++ops;
      break;
    case 3:
      pool.push_back(b.op("transpose", {a}, {{"perm", std::vector<std::int64_t>{1, 0}}}));
      ++ops;
      break;
    default: {
      ir::TensorId other = a;
      for (auto t : pool)
        if (t != a && b.shape_of(t) == shape) other = t;
      pool.push_back(b.op("add", {a, other}));
      ++ops;
    }
    }
  }
  auto g = b.finish();
  EXPECT_TRUE(g.has_value()) << g.error().to_string();
  return *g;
}

// Every assignment of the request's nodes, as configurations per op.
template <typename F> void for_each_choice(Candidates const& c, Request const& r, F&& visit) {
  std::vector<int> s(r.num_strategies.size(), 0);
  std::vector<plan::OpConfig> configs(c.configs.size());
  while (true) {
    for (std::size_t op = 0; op < c.configs.size(); ++op)
      configs[op] =
          c.configs[op][static_cast<std::size_t>(s[static_cast<std::size_t>(c.node_of_op[op])])];
    visit(s, configs);
    std::size_t i = s.size();
    while (i > 0 && ++s[i - 1] == r.num_strategies[i - 1])
      s[--i] = 0;
    if (i == 0) break;
  }
}

double space(Request const& r) {
  double n = 1;
  for (int s : r.num_strategies)
    n *= s;
  return n;
}

// The best final bytes over every sequence of step choices from `history` on.
std::int64_t best_recursive(CommModel const& model, Coarsening const& co, History const& history,
                            std::vector<std::int64_t> const& ways) {
  std::vector<std::vector<int>> cut;
  Candidates c = step_candidates(model, co, history, ways, &cut);
  Request r = model.request(c, std::int64_t{1} << 30);
  std::int64_t best = -1;
  bool last = history[0].size() + 1 == ways.size();
  for_each_choice(c, r, [&](std::vector<int> const& s, std::vector<plan::OpConfig> const& cfg) {
    std::int64_t bytes;
    if (last) {
      bytes = model.evaluate(cfg);
    } else {
      History next = history;
      for (std::size_t op = 0; op < next.size(); ++op)
        next[op].push_back(
            cut[op][static_cast<std::size_t>(s[static_cast<std::size_t>(co.node_of_op[op])])]);
      bytes = best_recursive(model, co, next, ways);
    }
    if (best < 0 || bytes < best) best = bytes;
  });
  return best;
}

std::int64_t lowered_bytes(ir::Graph const& g, std::vector<plan::OpConfig> const& configs,
                           int devices, ops::OpRegistry const& r) {
  plan::Plan p = plan::single_device_plan(g, r);
  p.num_devices = devices;
  p.ops = configs;
  p.fetch = tofu_fetch;
  auto program = lower::lower(g, p, r);
  EXPECT_TRUE(program.has_value()) << program.error().to_string();
  std::int64_t bytes = 0;
  for (auto const& t : program->tasks)
    if (t.kind == lower::TaskKind::transfer) bytes += t.bytes.value();
  return bytes;
}

// The issue asks for at least 200 graphs; the sanitizer build (tens of times slower) checks the
// first 60 of the same sequence for memory errors only.
#if defined(__SANITIZE_ADDRESS__)
constexpr int optimality_graphs = 60;
#else
constexpr int optimality_graphs = 240;
#endif

TEST(TofuOptimality, EachStepAndTheWholePlanEqualExhaustiveSearch) {
  auto registry = ops::OpRegistry::with_builtins();
  Rng rng(2019);
  int graphs = 0, whole_checked = 0, whole_equal = 0, steps_checked = 0, nonzero = 0;
  double worst_ratio = 1;
  while (graphs < optimality_graphs) {
    ir::Graph g = random_graph(*registry, 1 + static_cast<int>(rng() % 8), rng);
    auto model = CommModel::create(g, *registry, tofu_fetch);
    ASSERT_TRUE(model.has_value()) << model.error().to_string();
    Coarsening co = coarsen(*model);
    ASSERT_LE(co.num_nodes, 8);
    int devices = graphs % 2 ? 4 : 2;
    auto ways = factor_ways(devices);
    // Keep the exhaustive searches small: every step's space below 2^12 choices.
    std::vector<std::vector<int>> cut;
    History empty(g.num_ops());
    Request first = model->request(step_candidates(*model, co, empty, ways, &cut), 1 << 30);
    if (space(first) > 512) continue;
    ++graphs;
    TofuResult result = tofu_search(*model, devices);
    History history(g.num_ops());
    for (std::size_t s = 0; s < ways.size(); ++s) {
      Candidates c = step_candidates(*model, co, history, ways, &cut);
      Request r = model->request(c, std::int64_t{1} << 30);
      std::int64_t best = -1;
      for_each_choice(c, r, [&](std::vector<int> const&, std::vector<plan::OpConfig> const& cfg) {
        std::int64_t bytes = model->evaluate(cfg);
        if (best < 0 || bytes < best) best = bytes;
      });
      // The same tables counted by BlockIndex instead of listed (comm_model.h).
      Request counted = model->request(c, std::int64_t{1} << 30, nullptr, /*max_listed_pairs=*/0);
      ASSERT_EQ(counted.factors.size(), r.factors.size());
      for (std::size_t f = 0; f < r.factors.size(); ++f)
        ASSERT_EQ(counted.factors[f].table, r.factors[f].table) << "graph " << graphs;
      Result dp = solve(r);
      ASSERT_TRUE(dp.exact);
      ASSERT_EQ(dp.cost, best) << "graph " << graphs << " step " << s;
      ASSERT_EQ(result.steps[s].comm_bytes, best) << "graph " << graphs << " step " << s;
      ++steps_checked;
      for (std::size_t op = 0; op < g.num_ops(); ++op)
        history[op].push_back(result.history[op][s]);
    }
    ASSERT_EQ(result.comm_bytes, lowered_bytes(g, result.configs, devices, *registry));
    std::int64_t whole = best_recursive(*model, co, History(g.num_ops()), ways);
    EXPECT_GE(result.comm_bytes, whole);
    if (result.comm_bytes == whole) {
      ++whole_equal;
    } else {
      worst_ratio = std::max(worst_ratio,
                             static_cast<double>(result.comm_bytes) / static_cast<double>(whole));
    }
    ++whole_checked;
    nonzero += result.comm_bytes > 0;
  }
  EXPECT_GE(steps_checked, optimality_graphs * 5 / 4);
  EXPECT_GE(whole_checked, optimality_graphs * 5 / 6);
  // The greedy sequence of exact steps is not always the best recursive plan: a cheap first cut
  // can leave later sub-problems a dearer one (docs/search_tofu.md, "Optimality"). Observed with
  // this seed: 230 of 240 equal, the worst 1.3x the best; this guards the finding.
  std::printf("whole plan = best recursive plan on %d of %d graphs; worst ratio %.3f\n",
              whole_equal, whole_checked, worst_ratio);
  EXPECT_GE(whole_equal * 10, whole_checked * 9);
  EXPECT_LE(worst_ratio, 1.5);
  EXPECT_GE(nonzero, optimality_graphs / 5);  // the graphs are not trivially free to cut
}

TEST(Tofu, WaysAreFactoredLargestFirst) {
  EXPECT_EQ(factor_ways(8), (std::vector<std::int64_t>{2, 2, 2}));
  EXPECT_EQ(factor_ways(12), (std::vector<std::int64_t>{3, 2, 2}));
  EXPECT_EQ(factor_ways(6), (std::vector<std::int64_t>{3, 2}));
  EXPECT_TRUE(factor_ways(1).empty());
}

TEST(Tofu, TheFirstCutSeparatesTheDeviceHalves) {
  auto registry = ops::OpRegistry::with_builtins();
  ops::OpBuilder b(*registry);
  b.op("relu", {b.input("x", {8, 8})});
  ir::Graph g = *b.finish();
  auto bound = *registry->bind(g, ir::OpId(0));
  std::vector<std::int64_t> ways{2, 2, 2};
  // Cut rows, then columns, then rows again: rows 0-3 (first half) on devices 0-3.
  auto c = config_from_history(*bound, {0, 1, 0}, ways);
  EXPECT_EQ(c.degrees, (std::vector<std::int64_t>{4, 2}));
  // Pieces row-major over (row quarter, column half); device = 4*row_half + 2*col + row_in_half.
  EXPECT_EQ(c.devices, (std::vector<int>{0, 2, 1, 3, 4, 6, 5, 7}));
  auto same = config_from_history(*bound, {0, 0, 0}, ways);
  EXPECT_EQ(same.devices, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
}

}  // namespace
}  // namespace cleave::search::tofu
