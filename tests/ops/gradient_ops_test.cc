// Gradient ops against finite differences of their forward ops (gradient_check.h), optimizer ops
// against their formulas, and the errors bad attributes and shapes give.
#include <gtest/gtest.h>

#include "gradient_check.h"

namespace cleave::ops {
namespace {

using namespace testing;
using Ints = std::vector<std::int64_t>;

ir::Attrs with(ir::Attrs a, std::string const& key, ir::AttrValue value) {
  a.set(key, std::move(value));
  return a;
}

class GradientOps : public ::testing::Test {
 protected:
  std::unique_ptr<OpRegistry> registry_ = OpRegistry::with_builtins();
  Rng rng_{20240611};

  Value rand(ir::Shape s, double lo = -1, double hi = 1) {
    return random_value(std::move(s), rng_, lo, hi);
  }
  Expected<Value> op(std::string const& type, std::vector<Value> const& in, ir::Attrs attrs = {}) {
    return run(*registry_, type, attrs, in);
  }
  Function fn(std::string const& type, ir::Attrs attrs = {}) {
    return op_function(*registry_, type, std::move(attrs));
  }
  // A random R (= dY) of the shape of f(inputs).
  Value r_for(Function const& f, std::vector<Value> const& in) {
    auto y = f(in);
    EXPECT_TRUE(y.has_value()) << y.error().to_string();
    return rand(y ? y->type.shape : ir::Shape{});
  }
  Error error_of(std::string const& type, std::vector<ir::TensorType> in, ir::Attrs attrs = {}) {
    auto out = registry_->bind(type, attrs, in);
    EXPECT_FALSE(out.has_value()) << type << " " << attrs.to_string();
    return out ? Error(ErrorCode::invalid_argument, "") : out.error();
  }
};

TEST_F(GradientOps, Linear) {
  for (ir::Shape x : {ir::Shape{3, 4}, ir::Shape{2, 3, 5}, ir::Shape{1, 2, 2, 3}}) {
    std::vector<Value> in = {rand(x), rand({4, x.back()})};
    auto f = fn("linear");
    Value r = r_for(f, in);
    SCOPED_TRACE(ir::shape_to_string(x));
    EXPECT_TRUE(matches_numeric(op("linear_grad_input", {r, in[1]}), f, in, 0, r));
    EXPECT_TRUE(matches_numeric(op("linear_grad_weight", {r, in[0]}), f, in, 1, r));
  }
}

TEST_F(GradientOps, Conv2d) {
  struct Config {
    ir::Shape x, w;
    ir::Attrs attrs;
  };
  std::vector<Config> configs = {
      {{2, 3, 5, 6}, {4, 3, 3, 3}, {}},
      {{1, 2, 7, 6}, {3, 2, 3, 3}, {{"stride", Ints{2, 2}}, {"padding", Ints{1, 1}}}},
      {{1, 2, 8, 7},
       {2, 2, 3, 2},
       {{"stride", Ints{2, 3}}, {"padding", Ints{0, 1, 2, 1}}, {"dilation", Ints{2, 1}}}},
      {{2, 4, 6, 5}, {6, 2, 3, 3}, {{"groups", std::int64_t{2}}, {"padding", Ints{1, 1}}}},
      {{1, 4, 7, 7},
       {4, 2, 2, 3},
       {{"groups", std::int64_t{2}},
        {"stride", Ints{2, 2}},
        {"dilation", Ints{1, 2}},
        {"padding", Ints{1, 0}}}},
  };
  for (auto const& c : configs) {
    SCOPED_TRACE(c.attrs.to_string());
    std::vector<Value> in = {rand(c.x), rand(c.w)};
    auto f = fn("conv2d", c.attrs);
    Value r = r_for(f, in);
    EXPECT_TRUE(matches_numeric(
        op("conv2d_grad_input", {r, in[1]}, with(c.attrs, "input_shape", c.x)), f, in, 0, r));
    EXPECT_TRUE(matches_numeric(
        op("conv2d_grad_weight", {r, in[0]}, with(c.attrs, "kernel", Ints{c.w[2], c.w[3]})), f, in,
        1, r));
  }
}

TEST_F(GradientOps, Conv3d) {
  struct Config {
    ir::Shape x, w;
    ir::Attrs attrs;
  };
  std::vector<Config> configs = {
      {{2, 2, 3, 4, 5}, {3, 2, 2, 3, 3}, {{"padding", Ints{0, 1, 1, 1, 1, 1}}}},
      {{1, 2, 4, 6, 5},
       {2, 2, 2, 3, 2},
       {{"stride", Ints{2, 2, 1}}, {"padding", Ints{1, 1, 0}}, {"dilation", Ints{1, 1, 2}}}},
      {{1, 4, 3, 4, 4}, {4, 2, 1, 3, 3}, {{"groups", std::int64_t{2}}, {"padding", Ints{0, 1, 1}}}},
  };
  for (auto const& c : configs) {
    SCOPED_TRACE(c.attrs.to_string());
    std::vector<Value> in = {rand(c.x), rand(c.w)};
    auto f = fn("conv3d", c.attrs);
    Value r = r_for(f, in);
    EXPECT_TRUE(matches_numeric(
        op("conv3d_grad_input", {r, in[1]}, with(c.attrs, "input_shape", c.x)), f, in, 0, r));
    EXPECT_TRUE(matches_numeric(
        op("conv3d_grad_weight", {r, in[0]}, with(c.attrs, "kernel", Ints{c.w[2], c.w[3], c.w[4]})),
        f, in, 1, r));
  }
}

TEST_F(GradientOps, MaxPool2d) {
  std::vector<std::pair<ir::Shape, ir::Attrs>> configs = {
      {{2, 2, 6, 6}, {{"kernel", Ints{3, 3}}, {"stride", Ints{2, 2}}, {"padding", Ints{1, 1}}}},
      {{1, 3, 5, 5}, {{"kernel", Ints{2, 2}}, {"ceil_mode", std::int64_t{1}}}},
      {{1, 2, 7, 6},
       {{"kernel", Ints{3, 2}},
        {"stride", Ints{1, 2}},
        {"padding", Ints{1, 1}},
        {"dilation", Ints{2, 1}}}},
      {{1, 2, 6, 7},
       {{"kernel", Ints{2, 3}},
        {"stride", Ints{2, 2}},
        {"padding", Ints{1, 1}},
        {"ceil_mode", std::int64_t{1}}}},
      // TensorFlow's SAME at stride 2 over an even side: the odd pad after (nasnet).
      {{1, 2, 6, 5},
       {{"kernel", Ints{3, 3}}, {"stride", Ints{2, 2}}, {"padding", Ints{0, 1, 1, 1}}}},
  };
  for (auto const& [x, attrs] : configs) {
    SCOPED_TRACE(attrs.to_string());
    std::vector<Value> in = {rand(x)};
    auto f = fn("max_pool2d", attrs);
    auto y = f(in);
    ASSERT_TRUE(y.has_value()) << y.error().to_string();
    Value r = rand(y->type.shape);
    EXPECT_TRUE(matches_numeric(op("max_pool2d_grad", {in[0], *y, r}, attrs), f, in, 0, r));
  }
}

TEST_F(GradientOps, MaxPoolTiesAllGetTheGradient) {
  // One 2x2 window whose max 1 occurs twice: both positions get dY (PyTorch: the first only).
  Value x{f32({1, 1, 2, 2}), {1, 0, 1, -1}};
  Value y{f32({1, 1, 1, 1}), {1}};
  Value dy{f32({1, 1, 1, 1}), {5}};
  auto dx = op("max_pool2d_grad", {x, y, dy}, {{"kernel", Ints{2, 2}}});
  ASSERT_TRUE(dx.has_value()) << dx.error().to_string();
  EXPECT_EQ(dx->data, (std::vector<double>{5, 0, 5, 0}));
}

TEST_F(GradientOps, AvgPool2d) {
  std::vector<std::pair<ir::Shape, ir::Attrs>> configs = {
      {{2, 2, 6, 6}, {{"kernel", Ints{2, 2}}}},
      {{1, 2, 7, 6}, {{"kernel", Ints{3, 3}}, {"stride", Ints{2, 2}}, {"padding", Ints{1, 1}}}},
      {{1, 2, 7, 6},
       {{"kernel", Ints{3, 3}},
        {"stride", Ints{2, 1}},
        {"padding", Ints{1, 1}},
        {"count_include_pad", std::int64_t{0}}}},
      {{1, 1, 5, 6},
       {{"kernel", Ints{2, 3}},
        {"stride", Ints{2, 2}},
        {"padding", Ints{0, 1}},
        {"count_include_pad", std::int64_t{0}}}},
      {{1, 2, 5, 7},
       {{"kernel", Ints{2, 3}}, {"stride", Ints{2, 2}}, {"ceil_mode", std::int64_t{1}}}},
      {{1, 2, 6, 5},
       {{"kernel", Ints{3, 2}},
        {"stride", Ints{2, 2}},
        {"padding", Ints{1, 1}},
        {"ceil_mode", std::int64_t{1}}}},
      // Asymmetric padding, excluded from the divisor: TensorFlow's SAME average pool (nasnet)
      // at stride 2 over an even side, and at stride 1 with more padding after than before.
      {{1, 2, 6, 6},
       {{"kernel", Ints{3, 3}},
        {"stride", Ints{2, 2}},
        {"padding", Ints{0, 0, 1, 1}},
        {"count_include_pad", std::int64_t{0}}}},
      {{1, 1, 5, 4},
       {{"kernel", Ints{3, 3}},
        {"stride", Ints{1, 1}},
        {"padding", Ints{0, 1, 2, 1}},
        {"count_include_pad", std::int64_t{0}}}},
  };
  for (auto const& [x, attrs] : configs) {
    SCOPED_TRACE(attrs.to_string());
    std::vector<Value> in = {rand(x)};
    auto f = fn("avg_pool2d", attrs);
    Value r = r_for(f, in);
    EXPECT_TRUE(
        matches_numeric(op("avg_pool2d_grad", {r}, with(attrs, "input_shape", x)), f, in, 0, r));
  }
}

TEST_F(GradientOps, AvgPoolExcludingAsymmetricPaddingDividesByTheWindowInside) {
  // 3x3 windows at stride 2 over a 4x4 input, padded 0 before and 1 after (SAME): the second
  // window of each row holds 3 columns of X and one of padding.
  Value x{f32({1, 1, 4, 4}), {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}};
  ir::Attrs attrs{{"kernel", Ints{3, 3}}, {"stride", Ints{2, 2}}, {"padding", Ints{0, 0, 1, 1}}};
  auto excluded = op("avg_pool2d", {x}, with(attrs, "count_include_pad", std::int64_t{0}));
  ASSERT_TRUE(excluded.has_value()) << excluded.error().to_string();
  EXPECT_EQ(excluded->type.shape, (ir::Shape{1, 1, 2, 2}));
  // (1+2+3+5+6+7+9+10+11)/9; (3+4+7+8+11+12)/6; (9+10+11+13+14+15)/6; (11+12+15+16)/4.
  std::vector<double> want = {54.0 / 9, 45.0 / 6, 72.0 / 6, 54.0 / 4};
  for (std::size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(excluded->data[i], want[i], 1e-6) << i;
  auto included = op("avg_pool2d", {x}, attrs);
  ASSERT_TRUE(included.has_value()) << included.error().to_string();
  EXPECT_NEAR(included->data[3], 54.0 / 9, 1e-6);  // the padding counts: /9
}

TEST_F(GradientOps, GlobalPools) {
  for (ir::Shape x : {ir::Shape{2, 3, 4, 5}, ir::Shape{1, 2, 1, 3}}) {
    std::vector<Value> in = {rand(x)};
    auto avg = fn("global_avg_pool");
    Value r = r_for(avg, in);
    EXPECT_TRUE(
        matches_numeric(op("global_avg_pool_grad", {r}, {{"input_shape", x}}), avg, in, 0, r));
    auto max = fn("global_max_pool");
    auto y = max(in);
    ASSERT_TRUE(y.has_value());
    EXPECT_TRUE(matches_numeric(op("global_max_pool_grad", {in[0], *y, r}), max, in, 0, r));
  }
}

TEST_F(GradientOps, BatchMatmulSharedB) {
  for (std::int64_t ta : {0, 1})
    for (std::int64_t tb : {0, 1}) {
      std::int64_t m = 3, k = 4, n = 2;
      ir::Attrs attrs{{"transpose_a", ta}, {"transpose_b", tb}};
      SCOPED_TRACE(attrs.to_string());
      std::vector<Value> in = {rand(ta ? ir::Shape{2, 3, k, m} : ir::Shape{2, 3, m, k}),
                               rand(tb ? ir::Shape{n, k} : ir::Shape{k, n})};
      auto f = fn("batch_matmul", attrs);
      Value r = r_for(f, in);
      EXPECT_TRUE(matches_numeric(op("batch_matmul_grad_shared", {in[0], r}, attrs), f, in, 1, r));
    }
}

TEST_F(GradientOps, Activations) {
  for (ir::Shape x : {ir::Shape{3, 4}, ir::Shape{2, 1, 5}, ir::Shape{}}) {
    std::vector<Value> in = {rand(x, -3, 3)};
    Value r = rand(x);
    auto relu = op("relu", in);
    ASSERT_TRUE(relu.has_value());
    EXPECT_TRUE(matches_numeric(op("relu_grad", {*relu, r}), fn("relu"), in, 0, r));
    for (std::string approx : {"none", "tanh"}) {
      ir::Attrs a{{"approximate", approx}};
      EXPECT_TRUE(matches_numeric(op("gelu_grad", {in[0], r}, a), fn("gelu", a), in, 0, r))
          << approx;
    }
    for (std::string name : {"tanh", "sigmoid"}) {
      auto y = op(name, in);
      ASSERT_TRUE(y.has_value());
      EXPECT_TRUE(matches_numeric(op(name + "_grad", {*y, r}), fn(name), in, 0, r)) << name;
    }
  }
}

// Broadcasting pairs: the gradient at the broadcast shape, summed back with sum_to_shape.
std::vector<std::pair<ir::Shape, ir::Shape>> broadcast_pairs() {
  return {{{3, 4}, {3, 4}}, {{2, 3, 4}, {4}},       {{2, 3, 4}, {3, 1}},
          {{1, 4}, {3, 1}}, {{2, 1, 4}, {1, 3, 1}}, {{5}, {2, 1, 5}}};
}

TEST_F(GradientOps, AddWithBroadcastSumsToShape) {
  for (auto const& [a, b] : broadcast_pairs()) {
    SCOPED_TRACE(ir::shape_to_string(a) + " + " + ir::shape_to_string(b));
    std::vector<Value> in = {rand(a), rand(b)};
    auto f = fn("add");
    Value r = r_for(f, in);
    EXPECT_TRUE(matches_numeric(op("sum_to_shape", {r}, {{"shape", a}}), f, in, 0, r));
    EXPECT_TRUE(matches_numeric(op("sum_to_shape", {r}, {{"shape", b}}), f, in, 1, r));
  }
}

TEST_F(GradientOps, DivRhs) {
  for (auto const& [a, b] : broadcast_pairs()) {
    SCOPED_TRACE(ir::shape_to_string(a) + " / " + ir::shape_to_string(b));
    std::vector<Value> in = {rand(a), rand(b, 0.5, 1.5)};
    auto f = fn("div");
    Value r = r_for(f, in);
    auto grad = [&]() -> Expected<Value> {
      CLEAVE_TRY(Value at_y, op("div_grad_rhs", {in[0], in[1], r}));
      return op("sum_to_shape", {at_y}, {{"shape", b}});
    };
    EXPECT_TRUE(matches_numeric(grad(), f, in, 1, r));
  }
}

TEST_F(GradientOps, Softmax) {
  for (std::int64_t axis : {0, 1, -1}) {
    ir::Attrs a{{"axis", axis}};
    std::vector<Value> in = {rand({3, 4, 5}, -2, 2)};
    auto f = fn("softmax", a);
    auto y = f(in);
    ASSERT_TRUE(y.has_value());
    Value r = rand(y->type.shape);
    EXPECT_TRUE(matches_numeric(op("softmax_grad", {*y, r}, a), f, in, 0, r)) << axis;
  }
}

TEST_F(GradientOps, LayerNorm) {
  for (ir::Shape x : {ir::Shape{3, 5}, ir::Shape{2, 3, 4}, ir::Shape{6}}) {
    SCOPED_TRACE(ir::shape_to_string(x));
    ir::Attrs a{{"eps", 1e-3}};
    ir::Shape d = {x.back()};
    std::vector<Value> in = {rand(x, -2, 2), rand(d, 0.5, 1.5), rand(d)};
    auto f = fn("layer_norm", a);
    Value r = r_for(f, in);
    EXPECT_TRUE(matches_numeric(op("layer_norm_grad_input", {in[0], in[1], r}, a), f, in, 0, r));
    EXPECT_TRUE(matches_numeric(op("layer_norm_grad_gamma", {in[0], r}, a), f, in, 1, r));
    EXPECT_TRUE(matches_numeric(op("sum_to_shape", {r}, {{"shape", d}}), f, in, 2, r));
  }
}

TEST_F(GradientOps, BatchNormPieces) {
  for (ir::Shape x : {ir::Shape{2, 3, 2, 3}, ir::Shape{4, 2}}) {
    SCOPED_TRACE(ir::shape_to_string(x));
    ir::Attrs eps{{"eps", 1e-3}};
    ir::Shape c = {x[1]};
    // bn_apply(X, M, V, G, B), each input on its own (M, V independent of X here).
    std::vector<Value> in = {rand(x), rand(c), rand(c, 0.2, 1.5), rand(c), rand(c)};
    auto apply = fn("bn_apply", eps);
    Value r = r_for(apply, in);
    std::vector<Value> args = {in[0], in[1], in[2], in[3], r};
    EXPECT_TRUE(matches_numeric(op("bn_apply_grad_input", args, eps), apply, in, 0, r));
    EXPECT_TRUE(matches_numeric(op("bn_apply_grad_mean", args, eps), apply, in, 1, r));
    EXPECT_TRUE(matches_numeric(op("bn_apply_grad_var", args, eps), apply, in, 2, r));
    EXPECT_TRUE(
        matches_numeric(op("bn_apply_grad_gamma", {in[0], in[1], in[2], r}, eps), apply, in, 3, r));
    EXPECT_TRUE(matches_numeric(op("bn_channel_sum", {r}), apply, in, 4, r));
    // bn_var(X, M) with M held fixed, and bn_mean(X).
    std::vector<Value> var_in = {in[0], in[1]};
    auto var = fn("bn_var");
    Value dv = r_for(var, var_in);
    EXPECT_TRUE(matches_numeric(op("bn_var_grad_input", {in[0], in[1], dv}), var, var_in, 0, dv));
    EXPECT_TRUE(matches_numeric(op("bn_var_grad_mean", {in[0], in[1], dv}), var, var_in, 1, dv));
    auto mean = fn("bn_mean");
    Value dm = r_for(mean, {in[0]});
    EXPECT_TRUE(matches_numeric(op("bn_mean_grad_input", {in[0], dm}), mean, {in[0]}, 0, dm));
  }
}

TEST_F(GradientOps, BatchNormThroughItsStatistics) {
  // The whole layer as autodiff sees it: M = bn_mean(X), V = bn_var(X, M), Y = bn_apply(...);
  // dX collects the direct term and the paths through V and M.
  ir::Attrs eps{{"eps", 1e-3}};
  ir::Shape x = {3, 2, 2, 2};
  Value g = rand({2}, 0.5, 1.5), b = rand({2});
  Function layer = [&](std::vector<Value> const& in) -> Expected<Value> {
    CLEAVE_TRY(Value m, op("bn_mean", {in[0]}));
    CLEAVE_TRY(Value v, op("bn_var", {in[0], m}));
    return op("bn_apply", {in[0], m, v, g, b}, eps);
  };
  std::vector<Value> in = {rand(x, -2, 2)};
  Value r = r_for(layer, in);
  auto grad = [&]() -> Expected<Value> {
    CLEAVE_TRY(Value m, op("bn_mean", {in[0]}));
    CLEAVE_TRY(Value v, op("bn_var", {in[0], m}));
    std::vector<Value> args = {in[0], m, v, g, r};
    CLEAVE_TRY(Value dx_direct, op("bn_apply_grad_input", args, eps));
    CLEAVE_TRY(Value dm_apply, op("bn_apply_grad_mean", args, eps));
    CLEAVE_TRY(Value dv, op("bn_apply_grad_var", args, eps));
    CLEAVE_TRY(Value dx_var, op("bn_var_grad_input", {in[0], m, dv}));
    CLEAVE_TRY(Value dm_var, op("bn_var_grad_mean", {in[0], m, dv}));
    CLEAVE_TRY(Value dm, op("add", {dm_apply, dm_var}));
    CLEAVE_TRY(Value dx_mean, op("bn_mean_grad_input", {in[0], dm}));
    CLEAVE_TRY(Value sum, op("add", {dx_direct, dx_var}));
    return op("add", {sum, dx_mean});
  };
  EXPECT_TRUE(matches_numeric(grad(), layer, in, 0, r));
}

TEST_F(GradientOps, CrossEntropy) {
  for (auto [batch, classes] : {std::pair{4, 3}, std::pair{1, 5}, std::pair{3, 2}}) {
    std::vector<Value> in = {rand({batch, classes}, -2, 2), random_ints({batch}, classes, rng_)};
    auto f = fn("cross_entropy");
    Value r = r_for(f, in);  // a scalar: dL
    EXPECT_TRUE(matches_numeric(op("cross_entropy_grad", {in[0], in[1], r}), f, in, 0, r));
  }
}

TEST_F(GradientOps, Embedding) {
  for (ir::Shape ids : {ir::Shape{2, 3}, ir::Shape{5}}) {
    std::int64_t vocab = 4;
    std::vector<Value> in = {rand({vocab, 3}), random_ints(ids, vocab, rng_)};
    auto f = fn("embedding");
    Value r = r_for(f, in);
    EXPECT_TRUE(matches_numeric(op("embedding_grad", {in[1], r}, {{"vocab", vocab}}), f, in, 0, r));
  }
}

TEST_F(GradientOps, Slice) {
  std::vector<std::pair<ir::Shape, ir::Attrs>> configs = {
      {{4, 9}, {{"starts", Ints{2}}, {"ends", Ints{7}}, {"axes", Ints{1}}}},
      {{4, 9}, {{"starts", Ints{1}}, {"ends", Ints{100}}, {"axes", Ints{1}}, {"steps", Ints{3}}}},
      {{5, 6, 3},
       {{"starts", Ints{-4, 0}},
        {"ends", Ints{5, 5}},
        {"axes", Ints{0, 1}},
        {"steps", Ints{2, 2}}}},
      {{3, 4}, {{"starts", Ints{0, 1}}, {"ends", Ints{2, 4}}}},
  };
  for (auto const& [x, attrs] : configs) {
    SCOPED_TRACE(attrs.to_string());
    std::vector<Value> in = {rand(x)};
    auto f = fn("slice", attrs);
    Value r = r_for(f, in);
    EXPECT_TRUE(matches_numeric(op("slice_grad", {r}, with(attrs, "input_shape", x)), f, in, 0, r));
  }
}

TEST_F(GradientOps, OptimizersFollowTheirFormulas) {
  ir::Shape s = {3, 4};
  Value w = rand(s), m = rand(s), v = rand(s, 0, 1), g = rand(s);
  auto expect_formula = [&](std::string const& type, std::vector<Value> const& in, ir::Attrs a,
                            auto formula) {
    auto y = op(type, in, a);
    ASSERT_TRUE(y.has_value()) << y.error().to_string();
    ASSERT_EQ(y->type, in[0].type);
    for (std::size_t i = 0; i < y->data.size(); ++i)
      EXPECT_NEAR(y->data[i], formula(i), 1e-12) << type << " element " << i;
  };
  expect_formula("sgd_momentum", {v, g}, {{"momentum", 0.7}},
                 [&](std::size_t i) { return 0.7 * v.data[i] + g.data[i]; });
  expect_formula("sgd_momentum", {v, g}, {},
                 [&](std::size_t i) { return 0.9 * v.data[i] + g.data[i]; });
  expect_formula("sgd_update", {w, g}, {{"lr", 0.05}},
                 [&](std::size_t i) { return w.data[i] - 0.05 * g.data[i]; });
  expect_formula("sgd_update", {w, g}, {},
                 [&](std::size_t i) { return w.data[i] - 0.01 * g.data[i]; });
  expect_formula("adam_moment1", {m, g}, {{"beta1", 0.8}},
                 [&](std::size_t i) { return 0.8 * m.data[i] + 0.2 * g.data[i]; });
  expect_formula("adam_moment2", {v, g}, {},
                 [&](std::size_t i) { return 0.999 * v.data[i] + 0.001 * g.data[i] * g.data[i]; });
  for (std::int64_t step : {1, 2, 10}) {
    double lr = 0.003, b1 = 0.85, b2 = 0.99, eps = 1e-6;
    expect_formula("adam_update", {w, m, v},
                   {{"lr", lr}, {"beta1", b1}, {"beta2", b2}, {"eps", eps}, {"step", step}},
                   [&](std::size_t i) {
                     double mhat = m.data[i] / (1 - std::pow(b1, static_cast<double>(step)));
                     double vhat = v.data[i] / (1 - std::pow(b2, static_cast<double>(step)));
                     return w.data[i] - lr * mhat / (std::sqrt(vhat) + eps);
                   });
  }
  expect_formula("adam_update", {w, m, v}, {}, [&](std::size_t i) {
    return w.data[i] - 0.001 * (m.data[i] / 0.1) / (std::sqrt(v.data[i] / 0.001) + 1e-8);
  });
}

TEST_F(GradientOps, FillMakesConstantsWithoutInputs) {
  auto y = op("fill", {}, {{"shape", Ints{2, 3}}, {"value", 1.5}});
  ASSERT_TRUE(y.has_value()) << y.error().to_string();
  EXPECT_EQ(y->type, f32({2, 3}));
  EXPECT_EQ(y->data, std::vector<double>(6, 1.5));
  auto scalar = op("fill", {}, {{"shape", Ints{}}, {"dtype", std::string("int64")}});
  ASSERT_TRUE(scalar.has_value()) << scalar.error().to_string();
  EXPECT_EQ(scalar->type, i64({}));
  EXPECT_EQ(scalar->data, std::vector<double>{0});
  auto inferred =
      registry_->infer("fill", {{"shape", Ints{4}}, {"dtype", std::string("bf16")}}, {});
  ASSERT_TRUE(inferred.has_value()) << inferred.error().to_string();
  EXPECT_EQ(inferred->at(0), (ir::TensorType{{4}, ir::DType::bf16}));
}

TEST_F(GradientOps, EveryGradientOpHasExamplesThatBind) {
  auto names = registry_->names();
  int checked = 0;
  for (auto const& name : names) {
    OpSchema const* schema = registry_->find(name);
    bool ours = name.find("_grad") != std::string::npos || name == "sum_to_shape" ||
                name == "bn_channel_sum" || name == "fill" || name.starts_with("sgd_") ||
                name.starts_with("adam_");
    if (!ours) continue;
    ++checked;
    EXPECT_FALSE(schema->summary.empty()) << name;
    auto bound = registry_->bind(name, schema->example_attrs, schema->example_inputs);
    EXPECT_TRUE(bound.has_value()) << name << ": " << bound.error().to_string();
  }
  EXPECT_EQ(checked, 40);  // with clip_grad, hardswish_grad, hardsigmoid_grad, conv3d_grad_*
}

TEST_F(GradientOps, ErrorsNameTheOpAndWhatDisagrees) {
  auto has = [](Error const& e, std::string const& text) {
    return e.message().find(text) != std::string::npos;
  };
  Error no_shape = error_of("conv2d_grad_input", {f32({1, 4, 3, 3}), f32({4, 3, 3, 3})});
  EXPECT_TRUE(has(no_shape, "input_shape")) << no_shape.to_string();
  Error wrong_dy = error_of("conv2d_grad_input", {f32({1, 4, 4, 4}), f32({4, 3, 3, 3})},
                            {{"input_shape", Ints{1, 3, 5, 5}}});
  EXPECT_EQ(wrong_dy.code(), ErrorCode::shape_mismatch);
  EXPECT_TRUE(has(wrong_dy, "conv2d_grad_input: dY is 1x4x4x4 but conv2d")) << wrong_dy.to_string();
  Error bad_groups = error_of("conv2d_grad_weight", {f32({1, 4, 3, 3}), f32({1, 3, 5, 5})},
                              {{"kernel", Ints{3, 3}}, {"groups", std::int64_t{2}}});
  EXPECT_TRUE(has(bad_groups, "conv2d_grad_weight: conv2d: groups=2")) << bad_groups.to_string();
  Error incompatible = error_of("sum_to_shape", {f32({2, 3, 4})}, {{"shape", Ints{2, 4}}});
  EXPECT_EQ(incompatible.code(), ErrorCode::shape_mismatch);
  EXPECT_TRUE(has(incompatible, "sum_to_shape: X 2x3x4 does not broadcast from 2x4"))
      << incompatible.to_string();
  Error larger = error_of("sum_to_shape", {f32({4})}, {{"shape", Ints{2, 4}}});
  EXPECT_TRUE(has(larger, "larger rank")) << larger.to_string();
  Error dtype = error_of("fill", {}, {{"shape", Ints{2}}, {"dtype", std::string("float")}});
  EXPECT_TRUE(has(dtype, "fill: dtype \"float\"")) << dtype.to_string();
  Error int_value =
      error_of("fill", {}, {{"shape", Ints{2}}, {"dtype", std::string("int32")}, {"value", 0.5}});
  EXPECT_TRUE(has(int_value, "not an integer")) << int_value.to_string();
  Error fill_input = error_of("fill", {f32({2})}, {{"shape", Ints{2}}});
  EXPECT_TRUE(has(fill_input, "takes 0 input(s)")) << fill_input.to_string();
  Error step = error_of("adam_update", {f32({2}), f32({2}), f32({2})}, {{"step", std::int64_t{0}}});
  EXPECT_TRUE(has(step, "adam_update: step")) << step.to_string();
  Error beta = error_of("adam_moment1", {f32({2}), f32({2})}, {{"beta1", 1.0}});
  EXPECT_TRUE(has(beta, "beta1 must be in [0, 1)")) << beta.to_string();
  Error unequal = error_of("sgd_update", {f32({2, 3}), f32({3, 2})});
  EXPECT_TRUE(has(unequal, "sgd_update: inputs must have equal shapes, but W is 2x3 and D is 3x2"))
      << unequal.to_string();
  Error labels = error_of("cross_entropy_grad", {f32({4, 3}), f32({4}), f32({})});
  EXPECT_TRUE(has(labels, "labels T")) << labels.to_string();
  Error pool =
      error_of("max_pool2d_grad", {f32({1, 1, 4, 4}), f32({1, 1, 2, 2}), f32({1, 1, 3, 3})},
               {{"kernel", Ints{2, 2}}});
  EXPECT_TRUE(has(pool, "max_pool2d_grad: dY is 1x1x3x3 but max_pool2d")) << pool.to_string();
  Error vocab = error_of("embedding_grad", {i64({2}), f32({2, 3})});
  EXPECT_TRUE(has(vocab, "vocab")) << vocab.to_string();
  Error bn = error_of("bn_apply_grad_mean",
                      {f32({2, 3, 2}), f32({3}), f32({4}), f32({3}), f32({2, 3, 2})});
  EXPECT_TRUE(has(bn, "bn_apply_grad_mean: V must be [3]")) << bn.to_string();
  Error div = error_of("div_grad_rhs", {f32({2, 3}), f32({3}), f32({3})});
  EXPECT_TRUE(has(div, "div_grad_rhs: dY is 3 but broadcasting")) << div.to_string();
}

}  // namespace
}  // namespace cleave::ops
