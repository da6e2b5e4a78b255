// Checking gradient ops against central finite differences, both evaluated by the reference
// interpreter in fp64: for a forward function F and a random R of F's output shape, the gradient
// of L = sum(F(inputs) * R) with respect to an input is what the gradient ops compute from dY = R.
#pragma once

#include <cmath>
#include <functional>
#include <gtest/gtest.h>
#include <sstream>

#include "generators.h"
#include "ops/op_registry.h"
#include "tdl/interpreter.h"

namespace cleave::ops::testing {

// A tensor's type and values (row-major; integers are exact in double).
struct Value {
  ir::TensorType type;
  std::vector<double> data;
};

inline Value random_value(ir::Shape shape, Rng& rng, double lo = -1, double hi = 1) {
  Value v{f32(std::move(shape)), {}};
  v.data.resize(static_cast<std::size_t>(ir::num_elements(v.type.shape)));
  for (auto& x : v.data)
    x = std::uniform_real_distribution<double>(lo, hi)(rng);
  return v;
}

// Integers in [0, hi), as int64 (labels, indices).
inline Value random_ints(ir::Shape shape, std::int64_t hi, Rng& rng) {
  Value v{i64(std::move(shape)), {}};
  v.data.resize(static_cast<std::size_t>(ir::num_elements(v.type.shape)));
  for (auto& x : v.data)
    x = static_cast<double>(pick(rng, 0, hi - 1));
  return v;
}

// Evaluates one op on whole inputs.
inline Expected<Value> run(OpRegistry const& registry, std::string const& type,
                           ir::Attrs const& attrs, std::vector<Value> const& inputs) {
  std::vector<ir::TensorType> types;
  std::vector<tdl::TensorData> data;
  for (auto const& in : inputs) {
    types.push_back(in.type);
    data.push_back(tdl::TensorData::whole(in.type.shape, in.data));
  }
  CLEAVE_TRY(auto op, registry.bind(type, attrs, types));
  CLEAVE_TRY(tdl::TensorData out, tdl::evaluate(*op, tdl::full_box(*op), data));
  return Value{op->output_type(), std::move(out.values)};
}

// A differentiable function of some inputs (one op, or several composed).
using Function = std::function<Expected<Value>(std::vector<Value> const&)>;

inline Function op_function(OpRegistry const& registry, std::string type, ir::Attrs attrs = {}) {
  return [&registry, type, attrs](std::vector<Value> const& in) {
    return run(registry, type, attrs, in);
  };
}

inline Expected<double> weighted_sum(Value const& y, Value const& r) {
  if (y.data.size() != r.data.size())
    return Error(ErrorCode::shape_mismatch, "F's output " + ir::shape_to_string(y.type.shape) +
                                                " does not match R " +
                                                ir::shape_to_string(r.type.shape));
  double sum = 0;
  for (std::size_t i = 0; i < y.data.size(); ++i)
    sum += y.data[i] * r.data[i];
  return sum;
}

// d/d inputs[which] of sum(f(inputs) * r), by central differences.
inline Expected<Value> numeric_gradient(Function const& f, std::vector<Value> inputs,
                                        std::size_t which, Value const& r, double step = 1e-5) {
  Value grad{inputs[which].type, std::vector<double>(inputs[which].data.size(), 0.0)};
  for (std::size_t i = 0; i < grad.data.size(); ++i) {
    double x = inputs[which].data[i];
    inputs[which].data[i] = x + step;
    CLEAVE_TRY(Value hi, f(inputs));
    CLEAVE_TRY(double l_hi, weighted_sum(hi, r));
    inputs[which].data[i] = x - step;
    CLEAVE_TRY(Value lo, f(inputs));
    CLEAVE_TRY(double l_lo, weighted_sum(lo, r));
    inputs[which].data[i] = x;
    grad.data[i] = (l_hi - l_lo) / (2 * step);
  }
  return grad;
}

// Every element within atol + rtol * |numeric|, and the same shape.
inline ::testing::AssertionResult close(Value const& analytic, Value const& numeric,
                                        double rtol = 1e-6, double atol = 1e-6) {
  if (analytic.type.shape != numeric.type.shape)
    return ::testing::AssertionFailure() << "shape " << ir::shape_to_string(analytic.type.shape)
                                         << ", want " << ir::shape_to_string(numeric.type.shape);
  for (std::size_t i = 0; i < analytic.data.size(); ++i) {
    double a = analytic.data[i], n = numeric.data[i];
    if (!(std::abs(a - n) <= atol + rtol * std::abs(n)))
      return ::testing::AssertionFailure()
             << "element " << i << ": gradient op gives " << a << ", finite differences " << n;
  }
  return ::testing::AssertionSuccess();
}

// Checks `analytic` (the gradient ops' result) against finite differences of f.
inline ::testing::AssertionResult matches_numeric(Expected<Value> const& analytic,
                                                  Function const& f,
                                                  std::vector<Value> const& inputs,
                                                  std::size_t which, Value const& r) {
  if (!analytic)
    return ::testing::AssertionFailure() << "gradient op failed: " << analytic.error().to_string();
  auto numeric = numeric_gradient(f, inputs, which, r);
  if (!numeric)
    return ::testing::AssertionFailure() << "forward failed: " << numeric.error().to_string();
  return close(*analytic, *numeric);
}

}  // namespace cleave::ops::testing
