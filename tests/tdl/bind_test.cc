#include <gtest/gtest.h>

#include "tdl_test_util.h"

namespace cleave::tdl {
namespace {

using testing::f32;
using testing::must_bind;
using testing::try_bind;

BindContext matmul_ctx(ir::Shape a, ir::Shape b) {
  BindContext ctx;
  ctx.inputs = {{"A", f32(std::move(a))}, {"B", f32(std::move(b))}};
  return ctx;
}

TEST(Bind, MatmulSpaceAndOutput) {
  auto op = must_bind("Y[i,j] = sum(k) A[i,k] * B[k,j]", matmul_ctx({64, 32}, {32, 16}));
  ASSERT_TRUE(op);
  ASSERT_EQ(op->dims().size(), 3u);
  EXPECT_EQ(op->num_parallel(), 2);
  EXPECT_EQ(op->dims()[0].name, "i");
  EXPECT_EQ(op->dims()[0].extent, 64);
  EXPECT_EQ(op->dims()[1].extent, 16);
  EXPECT_EQ(op->dims()[2].name, "k");
  EXPECT_EQ(op->dims()[2].kind, DimKind::reduction);
  EXPECT_EQ(op->dims()[2].extent, 32);
  EXPECT_EQ(op->reducer(), Reducer::sum);
  EXPECT_EQ(op->output_type(), f32({64, 16}));
  EXPECT_EQ(op->describe_space(), "parallel i=64 j=16 | reduction(sum) k=32");
}

TEST(Bind, ShapeMismatchNamesBothSources) {
  auto op = try_bind("Y[i,j] = sum(k) A[i,k] * B[k,j]", matmul_ctx({64, 32}, {31, 16}));
  ASSERT_FALSE(op.has_value());
  EXPECT_EQ(op.error().code(), ErrorCode::shape_mismatch);
  std::string msg = op.error().message();
  EXPECT_NE(msg.find("'k' has extent 32 from dim 1 of A (64x32) but 31 from dim 0 of B (31x16)"),
            std::string::npos)
      << msg;
}

TEST(Bind, NonAffineIndexIsRejectedWithColumn) {
  BindContext ctx;
  ctx.inputs = {{"X", f32({8, 8})}};
  ctx.output = f32({4});
  auto op = try_bind("Y[y] = sum(dy:2) X[0, y*dy]", ctx);
  ASSERT_FALSE(op.has_value());
  EXPECT_NE(op.error().message().find("non-affine index"), std::string::npos);
  EXPECT_NE(op.error().message().find("(column 25)"), std::string::npos) << op.error().message();
}

TEST(Bind, UnknownTensorNameFunctionAndDim) {
  auto ctx = matmul_ctx({4, 4}, {4, 4});
  auto t = try_bind("Y[i,j] = sum(k) A[i,k] * Z[k,j]", ctx);
  ASSERT_FALSE(t.has_value());
  EXPECT_NE(t.error().message().find("unknown tensor 'Z'; the op's inputs are A, B"),
            std::string::npos)
      << t.error().message();
  auto n = try_bind("Y[i,j] = A[i,j] * alpha", ctx);
  ASSERT_FALSE(n.has_value());
  EXPECT_NE(n.error().message().find("unknown name 'alpha'"), std::string::npos);
  auto f = try_bind("Y[i,j] = frob(A[i,j])", ctx);
  ASSERT_FALSE(f.has_value());
  EXPECT_NE(f.error().message().find("unknown function 'frob'"), std::string::npos);
  auto d = try_bind("Y[i,j] = A[i,j] ; nosplit(q)", ctx);
  ASSERT_FALSE(d.has_value());
  EXPECT_NE(d.error().message().find("'q' is not a dimension of the iteration space"),
            std::string::npos);
  auto r = try_bind("Y[i,j] = A[i,j,0]", ctx);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), ErrorCode::shape_mismatch);
  EXPECT_NE(r.error().message().find("'A' has rank 2 (4x4) but is read with 3 indices"),
            std::string::npos);
}

TEST(Bind, ExtentThatNothingDeterminesIsAnError) {
  BindContext ctx;
  ctx.inputs = {{"X", f32({8})}};
  auto op = try_bind("Y[y] = X[y*2]", ctx);
  ASSERT_FALSE(op.has_value());
  EXPECT_NE(op.error().message().find("cannot infer the extent of 'y'"), std::string::npos);
  ctx.output = f32({4});
  EXPECT_TRUE(try_bind("Y[y] = X[y*2]", ctx).has_value());
}

TEST(Bind, ParamsAreFoldedAndMustBeIntegralInIndices) {
  BindContext ctx;
  ctx.inputs = {{"X", f32({8})}};
  ctx.output = f32({4});
  ctx.params = {{"s", 2}};
  auto op = must_bind("Y[y] = X[y*s]", ctx);
  ASSERT_TRUE(op);
  ctx.params = {{"s", 2.5}};
  auto bad = try_bind("Y[y] = X[y*s]", ctx);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("not an integer"), std::string::npos);
}

TEST(Bind, OutputMustBeCoveredOneToOne) {
  BindContext ctx;
  ctx.inputs = {{"X", f32({8})}};
  auto op = try_bind("Y[2*i] = X[i]", ctx);
  ASSERT_FALSE(op.has_value());
  EXPECT_NE(op.error().message().find("one-to-one"), std::string::npos);
  ctx.output = f32({9});
  auto given = try_bind("Y[i] = X[i]", ctx);
  ASSERT_FALSE(given.has_value());
  EXPECT_EQ(given.error().code(), ErrorCode::shape_mismatch);
}

TEST(Bind, GatherNeedsAnIntegerTensor) {
  BindContext ctx;
  ctx.inputs = {{"W", f32({10, 4})}, {"I", f32({3})}};
  auto op = try_bind("Y[s,h] = W[I[s],h]", ctx);
  ASSERT_FALSE(op.has_value());
  EXPECT_NE(op.error().message().find("gathers need an int32 or int64 tensor"), std::string::npos);
  ctx.inputs[1].second.dtype = ir::DType::int64;
  auto ok = must_bind("Y[s,h] = W[I[s],h]", ctx);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->output_type(), f32({3, 4}));
}

TEST(Bind, SplittabilityReasons) {
  BindContext ctx;
  ctx.inputs = {{"X", f32({4, 1, 6})}};
  auto op = must_bind("Y[b,u,i] = exp(X[b,u,i]) / sum(j) exp(X[b,u,j]) ; nosplit(i)", ctx);
  ASSERT_TRUE(op);
  EXPECT_TRUE(op->dims()[0].splittable);
  EXPECT_FALSE(op->dims()[1].splittable);
  EXPECT_EQ(op->dims()[1].unsplittable_reason, "extent 1");
  EXPECT_FALSE(op->dims()[2].splittable);
  EXPECT_EQ(op->dims()[2].unsplittable_reason, "marked nosplit");
  // The nested reduction's variable is not a dimension of the space.
  EXPECT_EQ(op->dims().size(), 3u);
  EXPECT_EQ(op->num_slots(), 4);
}

TEST(Bind, GroupedOutputIndexIsSplittableOnlyWhereRectangular) {
  // 2 groups of 3 channels: splitting the group is fine, splitting channels within a group
  // would write channels {0,1} and {3,4}: not a box.
  BindContext ctx;
  ctx.inputs = {{"X", f32({6})}};
  ctx.extents = {{"g", 2}, {"c", 3}};
  auto op = must_bind("Y[g*3+c] = X[g*3+c]", ctx);
  ASSERT_TRUE(op);
  EXPECT_TRUE(op->dims()[0].splittable);
  EXPECT_FALSE(op->dims()[1].splittable);
  EXPECT_EQ(op->dims()[1].unsplittable_reason, "a split writes a non-rectangular output region");
}

TEST(Bind, OpaqueOpsSplitOnlyWhereListed) {
  BindContext ctx;
  ctx.inputs = {{"X", f32({8, 16})}, {"W", f32({4, 16})}};
  auto op = must_bind("Y[b,o] = opaque(X[b,i], W[o,i]) ; split(b)", ctx);
  ASSERT_TRUE(op);
  EXPECT_TRUE(op->opaque());
  EXPECT_TRUE(op->dims()[0].splittable);
  EXPECT_FALSE(op->dims()[1].splittable);
  auto no_list = must_bind("Y[b,o] = opaque(X[b,i], W[o,i])", ctx);
  ASSERT_TRUE(no_list);
  EXPECT_FALSE(no_list->dims()[0].splittable);
}

}  // namespace
}  // namespace cleave::tdl

namespace cleave::tdl {
namespace {

TEST(Bind, DeclaredOutputExtent) {
  BindContext ctx;
  ctx.inputs = {{"X", testing::f32({2, 9})}};
  ctx.params = {{"OH", 5}};
  auto op = testing::must_bind("Y[n, y:OH] = X[n, y*2]", ctx);
  ASSERT_TRUE(op);
  EXPECT_EQ(op->output_type(), testing::f32({2, 5}));
  ctx.params = {{"OH", 0}};
  auto bad = testing::try_bind("Y[n, y:OH] = X[n, y*2]", ctx);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("must be a positive constant"), std::string::npos);
}

// Issue 23, found by fuzz/tdl_fuzz.cc: the output's element count, an index's folded constants
// and an index's range over the iteration space are computed with checked arithmetic; each
// overflow is an error that says so, never a wrapped number.
TEST(Bind, OverflowingSizesAndIndicesAreErrors) {
  BindContext ctx = matmul_ctx({4'000'000'000, 4}, {4, 4'000'000'000});
  auto wide = testing::try_bind("Y[i,j] = sum(k) A[i,k] * B[k,j]", ctx);
  ASSERT_FALSE(wide.has_value());
  EXPECT_NE(wide.error().message().find("output's elements (the product of the extents of the "
                                        "parallel dimensions) overflow 64-bit counts"),
            std::string::npos)
      << wide.error().message();

  BindContext x;
  x.inputs = {{"X", testing::f32({8})}};
  for (auto const& [text, message] :
       {std::pair{"Y[i] = X[i * 3000000000000000 * 3000000000000000]",
                  "this index's constants overflow"},
        {"Y[i] = X[i - 3000000000000000 * 3000 - 3000000000000000 * 3000]",
         "this index's constants overflow"},
        {"Y[i:8] = X[i * 3000000000000000 * 3000]",
         "overflows 64-bit integers over the iteration space"},
        {"Y[i * 3000000000000000 * 3000] = X[i]",
         "overflows 64-bit integers over the iteration space"}}) {
    auto op = testing::try_bind(text, x);
    ASSERT_FALSE(op.has_value()) << text;
    EXPECT_NE(op.error().message().find(message), std::string::npos) << op.error().message();
  }
}

}  // namespace
}  // namespace cleave::tdl
