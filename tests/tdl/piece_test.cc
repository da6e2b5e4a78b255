// Golden tests of derived regions: conv (halo, stride, padding), matmul (reduction split gives
// partial sums), softmax (axis unsplittable), broadcasting add, gathers and one-hot scatters.
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

// embedding's statement: a gather reads the whole vocabulary (which rows is data), but only a row
// per position counts as traffic.
TEST(Piece, GatherReadsOneRowPerPositionOfAWholeTable) {
  BindContext ctx;
  ctx.inputs = {{"W", f32({5000, 64})}, {"I", {{8, 128}, ir::DType::int64}}};
  auto op = must_bind("Y[d0,d1,h] = W[I[d0,d1],h]", ctx);
  ASSERT_TRUE(op);
  PieceInfo whole = piece(*op, full_box(*op));
  EXPECT_EQ(whole.inputs[0].box, (Box{{0, 5000}, {0, 64}}));  // the region: the table, whole
  EXPECT_EQ(whole.bytes_read.value(), (8 * 128 * 64) * 4 + 8 * 128 * 8);  // not 5000 x 64 x 4
  PieceInfo half = piece(*op, split_evenly(full_box(*op), 2, 2)[0]);      // half the width
  EXPECT_EQ(half.inputs[0].box, (Box{{0, 5000}, {0, 32}}));
  EXPECT_EQ(half.bytes_read.value(), (8 * 128 * 32) * 4 + 8 * 128 * 8);
  // A table smaller than the rows looked up is read once.
  ctx.inputs[0].second = f32({100, 64});
  auto small = must_bind("Y[d0,d1,h] = W[I[d0,d1],h]", ctx);
  ASSERT_TRUE(small);
  EXPECT_EQ(piece(*small, full_box(*small)).bytes_read.value(), 100 * 64 * 4 + 8 * 128 * 8);
}

// embedding_grad's statement, a one-hot contraction: the comparison selects one row per position,
// so the work is the scatter-add's positions x width, not vocabulary x positions x width; how
// the op splits (its space, its regions) does not change.
TEST(Piece, OneHotSelectorCountsTheScatterAddsWork) {
  BindContext ctx;
  ctx.inputs = {{"I", {{8, 128}, ir::DType::int64}}, {"dY", f32({8, 128, 64})}};
  ctx.params = {{"V", 5000}};
  auto op = must_bind("dW[v:V,h] = sum(d0,d1) (I[d0,d1] == v) * dY[d0,d1,h]", ctx);
  ASSERT_TRUE(op);
  std::int64_t positions = 8 * 128;
  PieceInfo whole = piece(*op, full_box(*op));
  // Per position: a comparison; per position and column: the product and its add.
  EXPECT_EQ(whole.flops.value(), positions + 2 * positions * 64);
  EXPECT_EQ(whole.bytes_written.value(), 5000 * 64 * 4);
  // A piece of the vocabulary still reads every position and counts at most all of them.
  PieceInfo rows = piece(*op, split_evenly(full_box(*op), 0, 2)[1]);
  EXPECT_EQ(rows.output, (Box{{2500, 5000}, {0, 64}}));
  EXPECT_EQ(rows.inputs[1].box, (Box{{0, 8}, {0, 128}, {0, 64}}));
  EXPECT_EQ(rows.flops.value(), positions + 2 * positions * 64);
  // A split of the positions gives partial sums, each of its positions' work.
  PieceInfo batch = piece(*op, split_evenly(full_box(*op), 2, 2)[0]);
  EXPECT_TRUE(batch.partial);
  EXPECT_EQ(batch.flops.value(), (positions + 2 * positions * 64) / 2);
}

// Only a product selects, and only on an integer lookup: cross_entropy_grad's `- (c == T[b])` is
// a value at every class, and a comparison with a floating value selects nothing.
TEST(Piece, ComparisonsOutsideAProductOrOnFloatsSelectNothing) {
  BindContext ctx;
  ctx.inputs = {{"X", f32({4, 10})}, {"T", {{4}, ir::DType::int64}}};
  auto sub = must_bind("dX[b,c] = X[b,c] - (c == T[b])", ctx);
  ASSERT_TRUE(sub);
  EXPECT_EQ(piece(*sub, full_box(*sub)).flops.value(), 2 * 4 * 10);
  ctx.inputs[1].second = f32({4});
  auto floats = must_bind("dX[b,c] = X[b,c] * (c == T[b])", ctx);
  ASSERT_TRUE(floats);
  EXPECT_EQ(piece(*floats, full_box(*floats)).flops.value(), 2 * 4 * 10);
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
