// Random small instances of op types, for the property tests: one generator per op type. Each
// family of ops keeps its generators in its own file (generators_*.cc).
#pragma once

#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "ir/attrs.h"
#include "ir/types.h"

namespace cleave::ops::testing {

using Rng = std::mt19937_64;

inline std::int64_t pick(Rng& rng, std::int64_t lo, std::int64_t hi) {
  return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
}
inline ir::TensorType f32(ir::Shape s) {
  return {std::move(s), ir::DType::fp32};
}
inline ir::TensorType i64(ir::Shape s) {
  return {std::move(s), ir::DType::int64};
}
inline std::vector<std::int64_t> ints(std::initializer_list<std::int64_t> v) {
  return v;
}

// How to fill an input: uniform reals in [lo, hi], or integers in [0, int_hi).
struct Fill {
  double lo = -1, hi = 1;
  std::int64_t int_hi = 0;
};

struct Case {
  std::vector<ir::TensorType> inputs;
  ir::Attrs attrs;
  std::vector<Fill> fills;  // empty: all [-1, 1]
};

using Generator = std::function<Case(Rng&)>;
using Generators = std::map<std::string, Generator>;

// The forward built-in ops (generators_forward.cc).
void add_forward_generators(Generators& g);
// The gradient and optimizer ops (generators_gradients.cc).
void add_gradient_generators(Generators& g);

// Every family's generators.
inline Generators all_generators() {
  Generators g;
  add_forward_generators(g);
  add_gradient_generators(g);
  return g;
}

}  // namespace cleave::ops::testing
