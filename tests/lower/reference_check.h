// The lowering tests' oracle: a program run by the reference interpreter on random sources
// computes every tensor the graph computes (to 1e-9 relative).
#pragma once

#include <algorithm>
#include <cmath>
#include <gtest/gtest.h>

#include "lower/reference_run.h"
#include "lower/test_models.h"
#include "ops/reference_executor.h"

namespace cleave::lower::testing {

inline void expect_computes_the_graph(ir::Graph const& g, Program const& program,
                                      ops::OpRegistry const& registry, std::uint64_t seed) {
  Rng rng(seed);
  Sources sources = random_sources(g, rng);
  auto whole = ops::evaluate_graph(g, registry, sources);
  ASSERT_TRUE(whole.has_value());
  auto run = run_reference(g, program, registry, sources);
  ASSERT_TRUE(run.has_value()) << run.error().to_string();
  for (auto const& t : g.tensors()) {
    if (!g.producer(t.id).valid()) continue;
    auto const& want = (*whole)[t.id.value()].values;
    auto const& got = (*run)[t.id.value()].values;
    for (std::size_t i = 0; i < want.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 1e-9 * std::max(1.0, std::abs(want[i]))) << t.name;
  }
}

}  // namespace cleave::lower::testing
