// Golden tests of derived regions: conv (halo, stride, padding), matmul (reduction split gives
// partial sums), softmax (axis unsplittable), broadcasting add.
#include <gtest/gtest.h>

#include "tdl/piece.h"
#include "tdl_test_util.h"

namespace cleave::tdl {
namespace {

using testing::f32;
using testing::must_bind;

PieceInfo piece(BoundOp const& op, Box const& box) {
  auto p = analyze_piece(op, box);
  EXPECT_TRUE(p.has_value()) << (p ? "" : p.error().to_string());
  return p ? *p : PieceInfo{};
}

TEST(Piece, ConvHaloStrideAndPadding) {
  BindContext ctx;
  ctx.inputs = {{"X", f32({2, 3, 8, 8})}, {"W", f32({4, 3, 3, 3})}};
  ctx.output = f32({2, 4, 4, 4});
  auto op =
      must_bind("Y[n,co,y,x] = sum(ci,dy,dx) X[n,ci,y*2+dy-1,x*2+dx-1] * W[co,ci,dy,dx]", ctx);
  ASSERT_TRUE(op);
  Box full = full_box(*op);
  auto halves = split_evenly(full, /*dim=*/2, 2);  // split y
  PieceInfo top = piece(*op, halves[0]);
  // y in [0,2): rows 2y+dy-1 span [-1, 3]: clipped to [0,4) with one row of top padding.
  EXPECT_EQ(top.inputs[0].box, (Box{{0, 2}, {0, 3}, {0, 4}, {0, 8}}));
  EXPECT_EQ(top.inputs[0].pad_lo, (std::vector<std::int64_t>{0, 0, 1, 1}));
  EXPECT_EQ(top.inputs[0].pad_hi, (std::vector<std::int64_t>{0, 0, 0, 0}));
  PieceInfo bottom = piece(*op, halves[1]);
  // y in [2,4): rows span [3, 7]: row 3 is the halo both halves read.
  EXPECT_EQ(bottom.inputs[0].box, (Box{{0, 2}, {0, 3}, {3, 8}, {0, 8}}));
  EXPECT_EQ(bottom.inputs[0].pad_lo[2], 0);
  EXPECT_EQ(bottom.inputs[0].pad_hi[2], 0);
  // Weights are read whole; outputs are disjoint halves; no reduction.
  EXPECT_EQ(top.inputs[1].box, (Box{{0, 4}, {0, 3}, {0, 3}, {0, 3}}));
  EXPECT_EQ(top.output, (Box{{0, 2}, {0, 4}, {0, 2}, {0, 4}}));
  EXPECT_EQ(bottom.output, (Box{{0, 2}, {0, 4}, {2, 4}, {0, 4}}));
  EXPECT_FALSE(top.partial);
  // FLOPs: 2 per multiply-add over the piece's points.
  EXPECT_EQ(top.flops.value(), 2 * 2 * 4 * 2 * 4 * 3 * 3 * 3);
  EXPECT_EQ(top.bytes_read.value(), (2 * 3 * 4 * 8 + 4 * 3 * 3 * 3) * 4);
  EXPECT_EQ(top.bytes_written.value(), 2 * 4 * 2 * 4 * 4);
}

TEST(Piece, MatmulReductionSplitGivesPartialSums) {
  BindContext ctx;
  ctx.inputs = {{"A", f32({64, 32})}, {"B", f32({32, 16})}};
  auto op = must_bind("Y[i,j] = sum(k) A[i,k] * B[k,j]", ctx);
  ASSERT_TRUE(op);
  auto halves = split_evenly(full_box(*op), /*dim=*/2, 2);
  PieceInfo p = piece(*op, halves[1]);
  EXPECT_TRUE(p.partial);
  EXPECT_EQ(p.reducer, Reducer::sum);
  EXPECT_EQ(p.inputs[0].box, (Box{{0, 64}, {16, 32}}));
  EXPECT_EQ(p.inputs[1].box, (Box{{16, 32}, {0, 16}}));
  EXPECT_EQ(p.output, (Box{{0, 64}, {0, 16}}));
  EXPECT_EQ(p.flops.value(), 2 * 64 * 16 * 16);
  PieceInfo rows = piece(*op, split_evenly(full_box(*op), 0, 2)[0]);
  EXPECT_FALSE(rows.partial);
  EXPECT_EQ(rows.inputs[0].box, (Box{{0, 32}, {0, 32}}));
  EXPECT_EQ(rows.inputs[1].box, (Box{{0, 32}, {0, 16}}));
}

TEST(Piece, SoftmaxAxisUnsplittableRowsReadWhole) {
  BindContext ctx;
  ctx.inputs = {{"X", f32({8, 10})}};
  auto op = must_bind(
      "Y[b,i] = exp(X[b,i] - max(k) X[b,k]) / sum(j) exp(X[b,j] - max(k) X[b,k]) ; nosplit(i)",
      ctx);
  ASSERT_TRUE(op);
  EXPECT_TRUE(op->dims()[0].splittable);
  EXPECT_FALSE(op->dims()[1].splittable);
  PieceInfo p = piece(*op, split_evenly(full_box(*op), 0, 2)[1]);
  EXPECT_EQ(p.inputs[0].box, (Box{{4, 8}, {0, 10}}));
  EXPECT_FALSE(p.partial);
  // Row statistics are computed once per row, not once per element: max (10 per row, twice as
  // written), the subtractions and exps (10 each, twice), the sum (10), the division (10).
  EXPECT_EQ(p.flops.value(), 4 * (10 + 10 + 10 + 10 + 10 + 10 + 10 + 10));
}

TEST(Piece, BroadcastAddReadsTheBroadcastOperandWholeOrSplit) {
  BindContext ctx;
  ctx.inputs = {{"A", f32({4, 8})}, {"B", f32({8})}};
  auto op = must_bind("Y[d0,d1] = A[d0,d1] + B[d1]", ctx);
  ASSERT_TRUE(op);
  PieceInfo rows = piece(*op, split_evenly(full_box(*op), 0, 2)[0]);
  EXPECT_EQ(rows.inputs[1].box, (Box{{0, 8}}));
  PieceInfo cols = piece(*op, split_evenly(full_box(*op), 1, 2)[1]);
  EXPECT_EQ(cols.inputs[0].box, (Box{{0, 4}, {4, 8}}));
  EXPECT_EQ(cols.inputs[1].box, (Box{{4, 8}}));
  EXPECT_EQ(cols.flops.value(), 4 * 4);
}

TEST(Piece, ShiftedReadOutsideBoundsReadsNothing) {
  // concat as a sum of shifted reads: the second half of the axis reads only X1.
  BindContext ctx;
  ctx.inputs = {{"X0", f32({2, 3})}, {"X1", f32({2, 5})}};
  ctx.extents = {{"j", 8}};
  auto op = must_bind("Y[i,j] = X0[i,j] + X1[i,j-3]", ctx);
  ASSERT_TRUE(op);
  PieceInfo right = piece(*op, Box{{0, 2}, {4, 8}});
  EXPECT_TRUE(right.inputs[0].empty());
  EXPECT_EQ(right.inputs[1].box, (Box{{0, 2}, {1, 5}}));
  EXPECT_FALSE(right.inputs[1].has_padding());
}

TEST(Piece, BadBoxesAreErrors) {
  BindContext ctx;
  ctx.inputs = {{"A", f32({4, 4})}};
  auto op = must_bind("Y[i,j] = A[i,j]", ctx);
  ASSERT_TRUE(op);
  EXPECT_FALSE(analyze_piece(*op, Box{{0, 4}}).has_value());
  EXPECT_FALSE(analyze_piece(*op, Box{{0, 5}, {0, 4}}).has_value());
  EXPECT_FALSE(analyze_piece(*op, Box{{2, 2}, {0, 4}}).has_value());
}

}  // namespace
}  // namespace cleave::tdl
