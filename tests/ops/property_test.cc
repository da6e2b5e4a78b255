// The core guarantee (issue 2): for random shapes and random boxings of the iteration space of
// every built-in op, evaluating the op piece by piece with the interpreter — each piece given only
// the input regions region analysis computed for it, partial results reduced — equals evaluating
// it whole.
#include <cmath>
#include <functional>
#include <gtest/gtest.h>
#include <map>
#include <random>

#include "generators.h"
#include "ops/op_registry.h"
#include "tdl/interpreter.h"

namespace cleave::ops {
namespace {

using namespace testing;
using tdl::Box;
using tdl::TensorData;

TensorData random_tensor(ir::TensorType const& t, Fill const& fill, Rng& rng) {
  std::vector<double> v(static_cast<std::size_t>(ir::num_elements(t.shape)));
  for (auto& x : v) {
    if (fill.int_hi > 0) {
      x = static_cast<double>(pick(rng, 0, fill.int_hi - 1));
    } else {
      x = std::uniform_real_distribution<double>(fill.lo, fill.hi)(rng);
    }
  }
  return TensorData::whole(t.shape, std::move(v));
}

// A random grid of the iteration space: 0-2 random cuts on each splittable dimension.
std::vector<Box> random_boxing(tdl::BoundOp const& op, Rng& rng) {
  std::vector<Box> boxes = {tdl::full_box(op)};
  for (std::size_t d = 0; d < op.dims().size(); ++d) {
    auto const& dim = op.dims()[d];
    if (!dim.splittable) continue;
    std::vector<std::int64_t> cuts = {0, dim.extent};
    for (int c = pick(rng, 0, 2); c > 0; --c)
      cuts.push_back(pick(rng, 1, dim.extent - 1));
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    std::vector<Box> next;
    for (auto const& b : boxes) {
      for (std::size_t k = 0; k + 1 < cuts.size(); ++k) {
        Box piece = b;
        piece[d] = {cuts[k], cuts[k + 1]};
        next.push_back(piece);
      }
    }
    boxes = std::move(next);
  }
  return boxes;
}

double max_abs_diff(TensorData const& a, TensorData const& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.values.size(); ++i) {
    double x = a.values[i], y = b.values[i];
    if (std::isinf(x) && x == y) continue;
    worst = std::max(worst, std::abs(x - y) / std::max(1.0, std::abs(y)));
  }
  return worst;
}

class PiecewiseEqualsWhole : public ::testing::TestWithParam<std::string> {};

TEST_P(PiecewiseEqualsWhole, RandomShapesAndBoxings) {
  auto registry = OpRegistry::with_builtins();
  auto gens = all_generators();
  Generator const& gen = gens.at(GetParam());
  int multi_piece = 0;
  for (int trial = 0; trial < 150; ++trial) {
    std::uint64_t seed = std::hash<std::string>{}(GetParam()) + static_cast<std::uint64_t>(trial);
    Rng rng(seed);
    Case c = gen(rng);
    SCOPED_TRACE("op " + GetParam() + " trial " + std::to_string(trial) + " attrs " +
                 c.attrs.to_string());
    auto op = registry->bind(GetParam(), c.attrs, c.inputs);
    ASSERT_TRUE(op.has_value()) << op.error().to_string();
    tdl::BoundOp const& bound = **op;
    SCOPED_TRACE(bound.text());
    std::vector<TensorData> inputs;
    for (std::size_t i = 0; i < c.inputs.size(); ++i)
      inputs.push_back(random_tensor(c.inputs[i], i < c.fills.size() ? c.fills[i] : Fill{}, rng));
    auto whole = tdl::evaluate(bound, tdl::full_box(bound), inputs);
    ASSERT_TRUE(whole.has_value()) << whole.error().to_string();

    auto boxes = random_boxing(bound, rng);
    multi_piece += boxes.size() > 1;
    TensorData assembled = TensorData::zeros(whole->shape, whole->region);
    bool partial = false;
    for (auto const& box : boxes) {
      auto info = tdl::analyze_piece(bound, box);
      ASSERT_TRUE(info.has_value()) << info.error().to_string();
      ASSERT_TRUE(info->output_exact) << tdl::box_to_string(box);
      std::vector<TensorData> given;
      for (std::size_t i = 0; i < inputs.size(); ++i)
        given.push_back(tdl::extract(inputs[i], info->inputs[i].box));
      auto part = tdl::evaluate(bound, box, given);
      ASSERT_TRUE(part.has_value())
          << "piece " << tdl::box_to_string(box) << ": " << part.error().to_string();
      if (info->partial && !partial) {
        partial = true;
        std::fill(assembled.values.begin(), assembled.values.end(),
                  tdl::reducer_identity(info->reducer));
      }
      if (info->partial) {
        tdl::reduce_into(assembled, *part, info->reducer);
      } else {
        tdl::write_region(assembled, *part);
      }
    }
    EXPECT_LE(max_abs_diff(assembled, *whole), 1e-9) << boxes.size() << " pieces";
  }
  // The test exercises splitting for every op that has a splittable dimension.
  EXPECT_GT(multi_piece, 40);
}

std::vector<std::string> builtin_names() {
  return OpRegistry::with_builtins()->names();
}

INSTANTIATE_TEST_SUITE_P(Builtins, PiecewiseEqualsWhole, ::testing::ValuesIn(builtin_names()),
                         [](auto const& info) { return info.param; });

TEST(Generators, EveryBuiltinOpHasOne) {
  auto gens = all_generators();
  for (auto const& name : builtin_names())
    EXPECT_TRUE(gens.count(name)) << name;
}

}  // namespace
}  // namespace cleave::ops
