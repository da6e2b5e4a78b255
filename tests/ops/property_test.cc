// The core guarantee (issue 2): for random shapes and random boxings of the iteration space of
// every built-in op, evaluating the op piece by piece with the interpreter — each piece given only
// the input regions region analysis computed for it, partial results reduced — equals evaluating
// it whole.
#include <cmath>
#include <functional>
#include <gtest/gtest.h>
#include <map>
#include <random>

#include "ops/op_registry.h"
#include "tdl/interpreter.h"

namespace cleave::ops {
namespace {

using Rng = std::mt19937_64;
using tdl::Box;
using tdl::TensorData;

std::int64_t pick(Rng& rng, std::int64_t lo, std::int64_t hi) {
  return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
}

ir::TensorType f32(ir::Shape s) {
  return {std::move(s), ir::DType::fp32};
}
ir::TensorType i64(ir::Shape s) {
  return {std::move(s), ir::DType::int64};
}
std::vector<std::int64_t> ints(std::initializer_list<std::int64_t> v) {
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

// One random small instance per built-in op. Every built-in op must have one (checked below).
std::map<std::string, Generator> generators() {
  std::map<std::string, Generator> g;
  auto unary = [](Rng& r) {
    return Case{{f32({pick(r, 1, 4), pick(r, 1, 5), pick(r, 2, 6)})}, {}, {}};
  };
  for (char const* name : {"relu", "tanh", "sigmoid"})
    g[name] = unary;
  g["gelu"] = [](Rng& r) {
    return Case{{f32({pick(r, 1, 4), pick(r, 2, 6)})},
                {{"approximate", std::string(pick(r, 0, 1) ? "tanh" : "none")}},
                {}};
  };
  g["scale"] = [](Rng& r) {
    return Case{{f32({pick(r, 1, 5), pick(r, 2, 6)})}, {{"alpha", 0.37}}, {}};
  };
  g["cast"] = [](Rng& r) {
    return Case{{f32({pick(r, 1, 5), pick(r, 2, 6)})}, {{"dtype", std::string("fp16")}}, {}};
  };
  g["dropout"] = [](Rng& r) {
    ir::Shape s = {pick(r, 1, 5), pick(r, 2, 6)};
    return Case{{f32(s), f32(s)}, {{"p", 0.25}}, {{-1, 1, 0}, {0, 0, 2}}};
  };
  auto binary = [](Rng& r) {
    // Broadcasting: B is a suffix of A's shape with some dims set to 1, or A and B swapped.
    ir::Shape a = {pick(r, 1, 4), pick(r, 1, 5), pick(r, 2, 5)};
    ir::Shape b(a.begin() + pick(r, 0, 2), a.end());
    for (auto& d : b)
      if (pick(r, 0, 2) == 0) d = 1;
    if (pick(r, 0, 1)) std::swap(a, b);
    return Case{{f32(a), f32(b)}, {}, {{-1, 1, 0}, {0.5, 1.5, 0}}};
  };
  for (char const* name : {"add", "sub", "mul", "div"})
    g[name] = binary;
  g["matmul"] = [](Rng& r) {
    std::int64_t m = pick(r, 1, 6), k = pick(r, 1, 6), n = pick(r, 1, 6);
    bool ta = pick(r, 0, 1), tb = pick(r, 0, 1);
    return Case{
        {f32(ta ? ir::Shape{k, m} : ir::Shape{m, k}), f32(tb ? ir::Shape{n, k} : ir::Shape{k, n})},
        {{"transpose_a", std::int64_t{ta}}, {"transpose_b", std::int64_t{tb}}},
        {}};
  };
  g["batch_matmul"] = [](Rng& r) {
    std::int64_t b = pick(r, 1, 3), m = pick(r, 1, 4), k = pick(r, 1, 4), n = pick(r, 1, 4);
    bool shared = pick(r, 0, 1);
    return Case{{f32({b, 2, m, k}), f32(shared ? ir::Shape{n, k} : ir::Shape{b, 2, n, k})},
                {{"transpose_b", std::int64_t{1}}},
                {}};
  };
  g["linear"] = [](Rng& r) {
    std::int64_t i = pick(r, 1, 6);
    return Case{{f32({pick(r, 1, 3), pick(r, 1, 4), i}), f32({pick(r, 1, 5), i})}, {}, {}};
  };
  g["conv2d"] = [](Rng& r) {
    std::int64_t groups = pick(r, 1, 2), cig = pick(r, 1, 2), cog = pick(r, 1, 2);
    std::int64_t kh = pick(r, 1, 3), kw = pick(r, 1, 3);
    std::int64_t pt = pick(r, 0, 1), pl = pick(r, 0, 1), pb = pick(r, 0, 2), pr = pick(r, 0, 1);
    ir::Attrs a{{"stride", ints({pick(r, 1, 2), pick(r, 1, 2)})},
                {"padding", ints({pt, pl, pb, pr})},
                {"dilation", ints({pick(r, 1, 2), 1})},
                {"groups", groups}};
    return Case{{f32({pick(r, 1, 2), groups * cig, pick(r, 5, 8), pick(r, 4, 7)}),
                 f32({groups * cog, cig, kh, kw})},
                a,
                {}};
  };
  auto pool = [](bool is_max) {
    return [is_max](Rng& r) {
      std::int64_t k = pick(r, 1, 3);
      ir::Attrs a{{"kernel", ints({k, pick(r, 1, 3)})},
                  {"stride", ints({pick(r, 1, 2), pick(r, 1, 2)})},
                  {"padding", ints({pick(r, 0, k / 2), 0})}};
      if (is_max) {
        a.set("ceil_mode", pick(r, 0, 1));
      } else {
        a.set("count_include_pad", pick(r, 0, 1));
      }
      return Case{{f32({pick(r, 1, 2), pick(r, 1, 3), pick(r, 4, 7), pick(r, 4, 7)})}, a, {}};
    };
  };
  g["max_pool2d"] = pool(true);
  g["avg_pool2d"] = pool(false);
  auto global = [](Rng& r) {
    return Case{{f32({pick(r, 1, 3), pick(r, 1, 4), pick(r, 1, 4), pick(r, 1, 4)})}, {}, {}};
  };
  g["global_avg_pool"] = global;
  g["global_max_pool"] = global;
  g["softmax"] = [](Rng& r) {
    return Case{
        {f32({pick(r, 1, 3), pick(r, 2, 5), pick(r, 2, 5)})}, {{"axis", pick(r, -3, 2)}}, {}};
  };
  g["layer_norm"] = [](Rng& r) {
    std::int64_t d = pick(r, 2, 5);
    return Case{{f32({pick(r, 1, 3), pick(r, 1, 3), d}), f32({d}), f32({d})}, {{"eps", 1e-3}}, {}};
  };
  auto bn_x = [](Rng& r) {
    return f32({pick(r, 1, 3), pick(r, 1, 4), pick(r, 1, 3), pick(r, 1, 3)});
  };
  g["bn_mean"] = [bn_x](Rng& r) { return Case{{bn_x(r)}, {}, {}}; };
  g["bn_var"] = [bn_x](Rng& r) {
    auto x = bn_x(r);
    return Case{{x, f32({x.shape[1]})}, {}, {}};
  };
  g["bn_apply"] = [bn_x](Rng& r) {
    auto x = bn_x(r);
    auto c = f32({x.shape[1]});
    return Case{{x, c, c, c, c}, {}, {{-1, 1, 0}, {-1, 1, 0}, {0.1, 2, 0}, {-1, 1, 0}, {-1, 1, 0}}};
  };
  g["cross_entropy"] = [](Rng& r) {
    std::int64_t b = pick(r, 1, 5), c = pick(r, 2, 5);
    return Case{{f32({b, c}), i64({b})}, {}, {{-2, 2, 0}, {0, 0, c}}};
  };
  g["concat"] = [](Rng& r) {
    std::int64_t n = pick(r, 1, 3), rows = pick(r, 1, 4), axis = pick(r, 0, 1);
    std::vector<ir::TensorType> in;
    for (std::int64_t i = 0; i < n; ++i) {
      std::int64_t w = pick(r, 1, 4);
      in.push_back(f32(axis == 0 ? ir::Shape{w, rows} : ir::Shape{rows, w}));
    }
    return Case{in, {{"axis", axis}}, {}};
  };
  g["slice"] = [](Rng& r) {
    ir::Shape s = {pick(r, 2, 5), pick(r, 3, 9)};
    std::int64_t start = pick(r, 0, s[1] - 2);
    return Case{{f32(s)},
                {{"starts", ints({start})},
                 {"ends", ints({pick(r, start + 1, s[1] + 2)})},
                 {"axes", ints({1})},
                 {"steps", ints({pick(r, 1, 3)})}},
                {}};
  };
  g["transpose"] = [](Rng& r) {
    std::vector<std::int64_t> perm = {0, 1, 2};
    std::shuffle(perm.begin(), perm.end(), r);
    return Case{{f32({pick(r, 1, 3), pick(r, 1, 4), pick(r, 1, 5)})}, {{"perm", perm}}, {}};
  };
  g["reshape"] = [](Rng& r) {
    static const std::vector<std::pair<ir::Shape, std::vector<std::int64_t>>> shapes = {
        {{6, 4}, {4, 6}},  {{2, 3, 4}, {6, 4}},    {{2, 3, 4}, {2, 12}},
        {{24}, {2, 3, 4}}, {{4, 6}, {2, 2, 6}},    {{3, 4, 1}, {12}},
        {{1, 6}, {3, -1}}, {{2, 6, 2}, {4, 3, 2}}, {{2, 3, 4}, {0, 4, 3}}};
    auto const& [in, out] = shapes[static_cast<std::size_t>(pick(r, 0, shapes.size() - 1))];
    return Case{{f32(in)}, {{"shape", out}}, {}};
  };
  g["embedding"] = [](Rng& r) {
    std::int64_t v = pick(r, 2, 6);
    return Case{{f32({v, pick(r, 1, 4)}), i64({pick(r, 1, 3), pick(r, 1, 3)})},
                {},
                {{-1, 1, 0}, {0, 0, v}}};
  };
  return g;
}

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
  auto gens = generators();
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
  auto gens = generators();
  for (auto const& name : builtin_names())
    EXPECT_TRUE(gens.count(name)) << name;
}

}  // namespace
}  // namespace cleave::ops
