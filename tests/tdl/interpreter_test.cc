#include <cmath>
#include <gtest/gtest.h>

#include "tdl/interpreter.h"
#include "tdl_test_util.h"

namespace cleave::tdl {
namespace {

using testing::f32;
using testing::must_bind;

// [[1,2,3],[4,5,6]] x [[7,8],[9,10],[11,12]] = [[58,64],[139,154]].
std::shared_ptr<BoundOp const> small_matmul() {
  BindContext ctx;
  ctx.inputs = {{"A", f32({2, 3})}, {"B", f32({3, 2})}};
  return must_bind("Y[i,j] = sum(k) A[i,k] * B[k,j]", ctx);
}
std::vector<TensorData> small_matmul_inputs() {
  return {TensorData::whole({2, 3}, {1, 2, 3, 4, 5, 6}),
          TensorData::whole({3, 2}, {7, 8, 9, 10, 11, 12})};
}

TEST(Interpreter, MatmulWhole) {
  auto op = small_matmul();
  ASSERT_TRUE(op);
  std::vector<TensorData> const in = small_matmul_inputs();
  auto y = evaluate(*op, full_box(*op), in);
  ASSERT_TRUE(y.has_value()) << y.error().to_string();
  EXPECT_EQ(y->values, (std::vector<double>{58, 64, 139, 154}));
}

TEST(Interpreter, PartialSumsCombineToTheWhole) {
  auto op = small_matmul();
  ASSERT_TRUE(op);
  std::vector<TensorData> const in = small_matmul_inputs();
  TensorData total = TensorData::zeros({2, 2}, Box{{0, 2}, {0, 2}});
  for (auto const& box : split_evenly(full_box(*op), 2, 2)) {
    auto part = evaluate(*op, box, in);
    ASSERT_TRUE(part.has_value());
    reduce_into(total, *part, Reducer::sum);
  }
  EXPECT_EQ(total.values, (std::vector<double>{58, 64, 139, 154}));
}

TEST(Interpreter, ReadingOutsideTheGivenRegionIsAnError) {
  BindContext ctx;
  ctx.inputs = {{"A", f32({4})}};
  auto op = must_bind("Y[i] = A[i] + A[i+1]", ctx);
  ASSERT_TRUE(op);
  TensorData whole = TensorData::whole({4}, {1, 2, 3, 4});
  // The piece i in [0,2) needs A[0..2]; give it only [0,2).
  std::vector<TensorData> in = {extract(whole, Box{{0, 2}})};
  auto y = evaluate(*op, Box{{0, 2}}, in);
  ASSERT_FALSE(y.has_value());
  EXPECT_NE(y.error().message().find("reads A[2], outside the region it was given [0,2)"),
            std::string::npos)
      << y.error().message();
  // With the region analysis' answer it works, and the last element reads padding (0).
  auto info = analyze_piece(*op, Box{{2, 4}});
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->inputs[0].box, (Box{{2, 4}}));
  EXPECT_EQ(info->inputs[0].pad_hi[0], 1);
  std::vector<TensorData> right = {extract(whole, info->inputs[0].box)};
  auto r = evaluate(*op, Box{{2, 4}}, right);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->values, (std::vector<double>{7, 4}));
}

TEST(Interpreter, MaxPoolPadsWithMinusInfinity) {
  BindContext ctx;
  ctx.inputs = {{"X", f32({3})}};
  ctx.output = f32({2});
  auto op = must_bind("Y[y] = max(d:3) X[y*2+d-1] ; pad(X=-inf)", ctx);
  ASSERT_TRUE(op);
  std::vector<TensorData> in = {TensorData::whole({3}, {-5, -6, -7})};
  auto y = evaluate(*op, full_box(*op), in);
  ASSERT_TRUE(y.has_value());
  EXPECT_EQ(y->values, (std::vector<double>{-5, -6}));  // zero padding would give 0
}

TEST(Interpreter, Fp32ModeRoundsLikeAFloatKernel) {
  BindContext ctx;
  ctx.inputs = {{"X", f32({3})}};
  auto op = must_bind("L[] = sum(i) X[i]", ctx);
  ASSERT_TRUE(op);
  std::vector<TensorData> in = {TensorData::whole({3}, {1e8, 1, -1e8})};
  auto exact = evaluate(*op, full_box(*op), in, {.fp64 = true});
  auto rounded = evaluate(*op, full_box(*op), in, {.fp64 = false});
  ASSERT_TRUE(exact.has_value() && rounded.has_value());
  EXPECT_EQ(exact->values[0], 1.0);
  EXPECT_EQ(rounded->values[0], 0.0);  // 1e8 + 1 is 1e8 in fp32
}

TEST(Interpreter, GatherAndCrossEntropy) {
  BindContext ctx;
  ctx.inputs = {{"X", f32({2, 3})}, {"T", {{2}, ir::DType::int64}}};
  auto op = must_bind(
      "L[] = sum(b) (log(sum(j) exp(X[b,j] - max(k) X[b,k])) + max(k) X[b,k] - X[b,T[b]]) * 0.5",
      ctx);
  ASSERT_TRUE(op);
  std::vector<double> x = {1, 2, 3, 0, 0, 5};
  std::vector<TensorData> in = {TensorData::whole({2, 3}, x), TensorData::whole({2}, {2, 0})};
  auto l = evaluate(*op, full_box(*op), in);
  ASSERT_TRUE(l.has_value());
  auto lse = [](double a, double b, double c) {
    return std::log(std::exp(a) + std::exp(b) + std::exp(c));
  };
  double want = 0.5 * ((lse(1, 2, 3) - 3) + (lse(0, 0, 5) - 0));
  EXPECT_NEAR(l->values[0], want, 1e-12);
}

TEST(Interpreter, ValueModuloIsFloored) {
  BindContext ctx;
  ctx.inputs = {{"X", f32({6})}};
  ctx.params = {{"s", 3}};
  // Variables as numbers: (i - 4) % 3 for i = 0..5 is 2 0 1 2 0 1 (floored, never negative).
  auto op = must_bind("Y[i] = X[i] * ((i - 4) % s) + (-7.5 % -2)", ctx);
  ASSERT_TRUE(op);
  std::vector<TensorData> in = {TensorData::whole({6}, {1, 1, 1, 1, 1, 1})};
  auto y = evaluate(*op, full_box(*op), in);
  ASSERT_TRUE(y.has_value()) << y.error().to_string();
  EXPECT_EQ(y->values, (std::vector<double>{0.5, -1.5, -0.5, 0.5, -1.5, -0.5}));
}

TEST(Interpreter, OpaqueOpsCannotBeEvaluated) {
  BindContext ctx;
  ctx.inputs = {{"X", f32({4})}};
  auto op = must_bind("Y[b] = opaque(X[b]) ; split(b)", ctx);
  ASSERT_TRUE(op);
  std::vector<TensorData> in = {TensorData::whole({4}, {1, 2, 3, 4})};
  auto y = evaluate(*op, full_box(*op), in);
  ASSERT_FALSE(y.has_value());
  EXPECT_EQ(y.error().code(), ErrorCode::unsupported);
}

}  // namespace
}  // namespace cleave::tdl
