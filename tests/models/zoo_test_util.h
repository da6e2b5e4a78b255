// Shared by the zoo's tests: a graph's parameter count, and specs that must fail, each with a part
// of the message it must give.
#pragma once

#include <gtest/gtest.h>
#include <span>

#include "models/model_zoo.h"

namespace cleave::models::testing {

// Elements of every weight tensor.
inline std::int64_t parameters(ir::Graph const& g) {
  std::int64_t n = 0;
  for (auto const& t : g.tensors())
    if (t.role == ir::TensorRole::weight) n += ir::num_elements(t.type.shape);
  return n;
}

struct BadSpec {
  char const* spec;
  char const* message;
};

inline void expect_errors(ModelZoo const& zoo, ops::OpRegistry const& registry,
                          std::span<BadSpec const> cases) {
  for (auto const& c : cases) {
    auto g = zoo.build(c.spec, registry);
    ASSERT_FALSE(g.has_value()) << c.spec;
    EXPECT_NE(g.error().message().find(c.message), std::string::npos) << c.spec << "\n"
                                                                      << g.error().message();
  }
}

}  // namespace cleave::models::testing
