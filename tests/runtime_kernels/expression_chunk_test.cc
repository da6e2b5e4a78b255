// The expression kernel evaluates a row a chunk at a time (its buffers stay in cache): rows longer
// than a chunk, merged over several dimensions (an optimizer update of a whole weight) or not
// (a transpose, whose reads step across the block), give what the interpreter gives, in every
// piece; and a sum of many terms keeps fp64's accuracy.
#include <omp.h>

#include <gtest/gtest.h>

#include "harness.h"
#include "runtime/kernels/kernel.h"
#include "runtime/kernels/onednn_kernels.h"
#include "tdl/piece.h"

namespace cleave::runtime {
namespace {

using namespace testing;

void expect_matches(std::string const& type, std::vector<ir::TensorType> const& inputs,
                    ir::Attrs const& attrs) {
  auto ops = ops::OpRegistry::with_builtins();
  // The expression kernel alone: SGD's updates have a kernel of their own (loop_sgd).
  KernelRegistry kernels;
  kernels.add(make_expression_kernel());
  std::mt19937_64 rng(7);
  std::vector<InputFill> fills(inputs.size());
  auto c = make_case(*ops, type, inputs, attrs, fills, rng);
  ASSERT_TRUE(c.has_value()) << c.error().to_string();
  auto pieces = random_pieces(*c->bound, rng, 6);
  for (auto const& piece : pieces) {
    PieceResult r = run_piece(kernels, *c, piece);
    EXPECT_EQ(r.kernel, "loop_expression") << type << " " << tdl::box_to_string(piece);
    EXPECT_LE(r.max_error, 2e-4) << type << " " << tdl::box_to_string(piece) << " " << r.message;
  }
}

ir::TensorType fp32(ir::Shape shape) {
  return {std::move(shape), ir::DType::fp32};
}

TEST(ExpressionKernel, RowsLongerThanAChunk) {
  ir::Attrs momentum;
  momentum.set("momentum", 0.9);
  expect_matches("sgd_momentum", {fp32({3, 2500, 3}), fp32({3, 2500, 3})}, momentum);
  ir::Attrs swap;
  swap.set("perm", std::vector<std::int64_t>{1, 0});
  expect_matches("transpose", {fp32({5, 4099})}, swap);
}

// With several OpenMP threads a large element-wise piece is cut among them (its outermost
// dimension; here the second when the first is too short): every piece, whole or not, still gives
// what the interpreter gives, on one thread and on three.
TEST(ExpressionKernel, ThreadsShareALargeElementWisePiece) {
  int before = omp_get_max_threads();
  ir::Attrs momentum;
  momentum.set("momentum", 0.9);
  ir::Attrs swap;
  swap.set("perm", std::vector<std::int64_t>{1, 0});
  for (int threads : {1, 3}) {
    omp_set_num_threads(threads);
    expect_matches("sgd_momentum", {fp32({64, 1100}), fp32({64, 1100})}, momentum);
    expect_matches("sgd_momentum", {fp32({2, 300, 130}), fp32({2, 300, 130})}, momentum);
    expect_matches("transpose", {fp32({257, 300})}, swap);
  }
  omp_set_num_threads(before);
}

// A sum over 262,144 short rows of terms in [-1, 1] (as a bias gradient over many positions, or
// batch norm's statistics where the channel is the innermost dimension): added row by row into an
// fp32 total it was 4.5e-7 off the interpreter's fp64; accumulated in double it is within fp32's
// rounding of the result (3.7e-8).
TEST(ExpressionKernel, ALongSumKeepsItsAccuracy) {
  auto ops = ops::OpRegistry::with_builtins();
  auto kernels = KernelRegistry::with_builtins();
  std::mt19937_64 rng(3);
  auto c = make_case(*ops, "sum_to_shape", {fp32({262144, 4})},
                     {{"shape", std::vector<std::int64_t>{1, 4}}}, {{-1, 1}}, rng);
  ASSERT_TRUE(c.has_value()) << c.error().to_string();
  PieceResult r = run_piece(*kernels, *c, tdl::full_box(*c->bound));
  EXPECT_EQ(r.kernel, "loop_expression");
  EXPECT_LE(r.max_error, 1e-7) << r.message;  // fp32's rounding: 2^-24 = 6e-8
}

}  // namespace
}  // namespace cleave::runtime
