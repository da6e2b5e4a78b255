// The DP solver on hand-built requests (plain data): exact elimination equals exhaustive search
// on random chains, trees and general factor graphs; the table limit's mini-buckets give a valid
// answer between the lower bound they report and the exhaustive optimum's cost; bad requests are
// named.
#include <gtest/gtest.h>
#include <random>

#include "search/tofu/solver.h"

namespace cleave::search::tofu {
namespace {

using Rng = std::mt19937_64;

Factor random_factor(std::vector<int> scope, Request const& r, Rng& rng) {
  Factor f;
  std::size_t size = 1;
  for (int v : scope)
    size *= static_cast<std::size_t>(r.num_strategies[static_cast<std::size_t>(v)]);
  f.scope = std::move(scope);
  for (std::size_t i = 0; i < size; ++i)
    f.table.push_back(static_cast<std::int64_t>(rng() % 100));
  return f;
}

// kind 0: chain; 1: tree; 2: any factor graph with factors of 1-3 nodes.
Request random_request(int kind, Rng& rng) {
  Request r;
  int nodes = 1 + static_cast<int>(rng() % 8);
  for (int v = 0; v < nodes; ++v)
    r.num_strategies.push_back(1 + static_cast<int>(rng() % 4));
  for (int v = 0; v < nodes; ++v)
    r.factors.push_back(random_factor({v}, r, rng));
  for (int v = 1; v < nodes; ++v) {
    int u = kind == 0 ? v - 1 : static_cast<int>(rng() % static_cast<unsigned>(v));
    r.factors.push_back(random_factor({v, u}, r, rng));
  }
  if (kind == 2)
    for (int extra = 0; extra < nodes; ++extra) {
      std::vector<int> scope;
      for (int v = 0; v < nodes; ++v)
        if (rng() % 3 == 0 && scope.size() < 3) scope.push_back(v);
      if (!scope.empty()) r.factors.push_back(random_factor(scope, r, rng));
    }
  return r;
}

TEST(Solver, EliminationEqualsExhaustiveSearch) {
  Rng rng(1);
  for (int trial = 0; trial < 600; ++trial) {
    Request r = random_request(trial % 3, rng);
    Result dp = solve(r);
    Result brute = solve_exhaustive(r);
    ASSERT_TRUE(dp.exact);
    ASSERT_EQ(dp.cost, brute.cost) << "trial " << trial;
    EXPECT_EQ(dp.lower_bound, dp.cost);
    EXPECT_EQ(evaluate(r, dp.strategy), dp.cost);
    EXPECT_EQ(solve(r).strategy, dp.strategy);  // deterministic
  }
}

TEST(Solver, ChainEliminatesWithThreeNodeTablesAtMost) {
  Rng rng(2);
  Request r;
  r.num_strategies.assign(40, 5);
  for (int v = 1; v < 40; ++v)
    r.factors.push_back(random_factor({v - 1, v}, r, rng));
  Result dp = solve(r);
  EXPECT_TRUE(dp.exact);
  EXPECT_LE(dp.largest_scope, 2);  // OptCNN's node elimination: |C|^2 tables on a chain
}

TEST(Solver, MiniBucketsAreAValidApproximationBetweenBounds) {
  Rng rng(3);
  int inexact = 0;
  for (int trial = 0; trial < 200; ++trial) {
    Request r = random_request(2, rng);
    r.max_table_entries = 4;
    Result approx = solve(r);
    Result brute = solve_exhaustive(r);
    EXPECT_EQ(evaluate(r, approx.strategy), approx.cost);
    EXPECT_GE(approx.cost, brute.cost);
    EXPECT_LE(approx.lower_bound, brute.cost);
    if (approx.exact) {
      EXPECT_EQ(approx.cost, brute.cost);
    }
    inexact += !approx.exact;
  }
  EXPECT_GT(inexact, 20);
}

// A search's budget: once keep_going says false the rest of the elimination is approximate, and
// every node still gets a strategy whose cost is the evaluated one.
TEST(Solver, KeepGoingFalseFinishesApproximatelyWithEveryNodeChosen) {
  Rng rng(4);
  int inexact = 0;
  for (int trial = 0; trial < 200; ++trial) {
    Request r = random_request(2, rng);
    int asked = 0;
    r.keep_going = [&] { return ++asked < 2; };
    Result cut = solve(r);
    Result brute = solve_exhaustive(r);
    ASSERT_EQ(cut.strategy.size(), r.num_strategies.size());
    EXPECT_EQ(evaluate(r, cut.strategy), cut.cost);
    EXPECT_GE(cut.cost, brute.cost);
    EXPECT_LE(cut.lower_bound, brute.cost);
    EXPECT_LE(asked, 2);  // not asked again once it said false
    inexact += !cut.exact;
  }
  EXPECT_GT(inexact, 20);
}

TEST(SolverErrors, MalformedRequestsAreNamed) {
  Request r;
  r.num_strategies = {2, 0};
  EXPECT_NE(check_request(r).find("node 1 has no strategy"), std::string::npos);
  r.num_strategies = {2, 3};
  r.factors = {{{0, 1}, {1, 2, 3}}};
  EXPECT_NE(check_request(r).find("has 3 entries; its scope needs 6"), std::string::npos);
  r.factors = {{{0, 5}, {}}};
  EXPECT_NE(check_request(r).find("names node 5"), std::string::npos);
  r.factors = {{{1, 1}, {}}};
  EXPECT_NE(check_request(r).find("twice"), std::string::npos);
}

}  // namespace
}  // namespace cleave::search::tofu
