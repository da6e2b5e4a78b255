// max_pool2d_grad's loop kernel against the interpreter at pooling geometries (kernel 1, 2 and 3,
// stride 1 and 2, padding 0 and 1, symmetric or not, dilation 1 and 2, non-square, ceil mode), on
// pieces split the way plans split them: along the batch and channels, and along rows and columns
// (halos, windows cut by the piece's border, padding at the tensor's border, rows no window
// reads). Every such piece must run on the kernel; a piece that splits the window (dy, dx) is a
// partial sum the kernel leaves to the expression kernel. X and Y are small integers so that X
// equals its window's max often, ties included.
#include <omp.h>

#include <gtest/gtest.h>
#include <optional>

#include "harness.h"

namespace cleave::runtime {
namespace {

using namespace testing;

constexpr char const* kernel_name = "loop_max_pool_grad";
constexpr double tolerance = 1e-5;  // sums of a few fp32 values against fp64

struct Geometry {
  std::int64_t n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw;
  bool ceil = false;
  std::optional<std::int64_t> pb = {}, pr = {};  // bottom and right padding; ph and pw when absent
};

std::vector<Geometry> const geometries = {
    {2, 3, 8, 8, 2, 2, 2, 2, 0, 0, 1, 1},
    {2, 3, 9, 9, 3, 3, 2, 2, 1, 1, 1, 1},
    {1, 4, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1},
    {2, 2, 10, 9, 3, 3, 1, 1, 1, 1, 2, 2},
    {1, 3, 11, 11, 3, 3, 2, 2, 1, 1, 2, 2},
    {2, 2, 8, 8, 2, 2, 1, 1, 0, 0, 1, 1},
    {1, 2, 9, 8, 3, 2, 2, 1, 1, 0, 1, 2},
    {2, 2, 10, 10, 3, 3, 2, 2, 1, 1, 1, 1, true},
    {1, 2, 9, 9, 1, 1, 2, 2, 0, 0, 1, 1},               // 1x1 stride 2: odd rows get nothing
    {1, 2, 8, 9, 3, 3, 2, 2, 1, 0, 1, 1, false, 0, 1},  // (top, left, bottom, right) padding
};

std::int64_t out_size(std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t p0,
                      std::int64_t p1, std::int64_t d, bool ceil) {
  std::int64_t span = in + p0 + p1 - d * (k - 1) - 1;
  std::int64_t o = (ceil ? (span + s - 1) / s : span / s) + 1;
  if (ceil && (o - 1) * s >= in + p0) --o;
  return o;
}

Expected<OpCase> pool_case(ops::OpRegistry const& ops, Geometry const& g, std::mt19937_64& rng) {
  ir::Attrs a;
  a.set("kernel", std::vector<std::int64_t>{g.kh, g.kw});
  a.set("stride", std::vector<std::int64_t>{g.sh, g.sw});
  std::int64_t pb = g.pb.value_or(g.ph), pr = g.pr.value_or(g.pw);
  a.set("padding", std::vector<std::int64_t>{g.ph, g.pw, pb, pr});
  a.set("dilation", std::vector<std::int64_t>{g.dh, g.dw});
  a.set("ceil_mode", std::int64_t{g.ceil});
  ir::Shape x = {g.n, g.c, g.h, g.w};
  ir::Shape y = {g.n, g.c, out_size(g.h, g.kh, g.sh, g.ph, pb, g.dh, g.ceil),
                 out_size(g.w, g.kw, g.sw, g.pw, pr, g.dw, g.ceil)};
  InputFill small{0, 0, /*int_hi=*/3};
  return make_case(ops, "max_pool2d_grad",
                   {{x, ir::DType::fp32}, {y, ir::DType::fp32}, {y, ir::DType::fp32}}, a,
                   {small, small, {}}, rng);
}

// Pieces with the whole window: each of n, c, h, w cut in 3 (or its extent), h row by row, and
// h x w and n x c in 2 x 2.
std::vector<tdl::Box> parallel_pieces(tdl::BoundOp const& op) {
  tdl::Box whole = tdl::full_box(op);
  std::vector<tdl::Box> out = {whole};
  auto add_split = [](tdl::Box const& box, int d, std::int64_t parts) {
    return tdl::split_evenly(box, d, std::min(parts, box[static_cast<std::size_t>(d)].size()));
  };
  for (int d = 0; d < 4; ++d)
    for (auto const& b : add_split(whole, d, 3))
      out.push_back(b);
  for (auto const& b : add_split(whole, 2, whole[2].size()))
    out.push_back(b);
  for (auto [d0, d1] : {std::pair{2, 3}, std::pair{0, 1}})
    for (auto const& b : add_split(whole, d0, 2))
      for (auto const& p : add_split(b, d1, 2))
        out.push_back(p);
  return out;
}

TEST(MaxPoolGradKernel, MatchesInterpreterOnParallelPieces) {
  auto ops = ops::OpRegistry::with_builtins();
  auto kernels = KernelRegistry::with_builtins();
  for (std::size_t gi = 0; gi < geometries.size(); ++gi) {
    std::mt19937_64 rng(11 + gi);
    auto c = pool_case(*ops, geometries[gi], rng);
    ASSERT_TRUE(c.has_value()) << c.error().to_string();
    for (auto const& piece : parallel_pieces(*c->bound)) {
      SCOPED_TRACE("geometry " + std::to_string(gi) + " " + c->op->attrs.to_string() + " piece " +
                   tdl::box_to_string(piece));
      PieceResult r = run_piece(*kernels, *c, piece);
      EXPECT_EQ(r.kernel, kernel_name);
      EXPECT_LE(r.max_error, tolerance) << r.message;
    }
  }
}

// A piece of 16K elements or more is split among the worker's OpenMP threads by planes: on one
// thread and on three, every piece matches the interpreter, and the two give the same bits.
TEST(MaxPoolGradKernel, ThreadsSplitALargePieceByPlanes) {
  int before = omp_get_max_threads();
  auto ops = ops::OpRegistry::with_builtins();
  auto kernels = KernelRegistry::with_builtins();
  std::mt19937_64 rng(3);
  auto c = pool_case(*ops, {2, 16, 32, 32, 3, 3, 2, 2, 1, 1, 1, 1}, rng);  // 32,768 elements
  ASSERT_TRUE(c.has_value()) << c.error().to_string();
  tdl::Box whole = tdl::full_box(*c->bound);
  std::vector<tdl::Box> pieces = tdl::split_evenly(whole, 2, 2);  // halves of 16K: rows, halos
  pieces.push_back(whole);
  for (auto const& piece : pieces) {
    SCOPED_TRACE("piece " + tdl::box_to_string(piece));
    std::vector<float> outputs[2];
    for (int t : {0, 1}) {
      omp_set_num_threads(t == 0 ? 1 : 3);
      PieceResult r = run_piece(*kernels, *c, piece);
      EXPECT_EQ(r.kernel, kernel_name);
      EXPECT_LE(r.max_error, tolerance) << r.message;
      auto out = kernel_output(*kernels, *c, piece);
      ASSERT_TRUE(out.has_value()) << out.error().to_string();
      outputs[t] = std::move(*out);
    }
    EXPECT_EQ(outputs[0], outputs[1]) << "one thread and three differ";
  }
  omp_set_num_threads(before);
}

TEST(MaxPoolGradKernel, LeavesWindowSplitsToTheExpressionKernel) {
  auto ops = ops::OpRegistry::with_builtins();
  auto kernels = KernelRegistry::with_builtins();
  std::mt19937_64 rng(5);
  auto c = pool_case(*ops, geometries[1], rng);
  ASSERT_TRUE(c.has_value()) << c.error().to_string();
  tdl::Box whole = tdl::full_box(*c->bound);
  for (int d : {4, 5})
    for (auto const& piece : tdl::split_evenly(whole, d, 2)) {
      SCOPED_TRACE("piece " + tdl::box_to_string(piece));
      PieceResult r = run_piece(*kernels, *c, piece);
      EXPECT_EQ(r.kernel, "loop_expression");
      EXPECT_LE(r.max_error, tolerance) << r.message;
    }
}

// Ties: a 2x2 window whose four values are all its max gives dY to each of them, and a 3x3
// stride-1 map where two windows share their max position sums both gradients there.
TEST(MaxPoolGradKernel, TiesAllReceiveTheGradient) {
  auto ops = ops::OpRegistry::with_builtins();
  auto kernels = KernelRegistry::with_builtins();
  std::mt19937_64 rng(1);
  auto c = pool_case(*ops, {1, 1, 2, 2, 2, 2, 2, 2, 0, 0, 1, 1}, rng);
  ASSERT_TRUE(c.has_value()) << c.error().to_string();
  c->inputs[0].values = {1, 1, 1, 1};
  c->inputs[1].values = {1};
  c->inputs[2].values = {5};
  auto dx = kernel_output(*kernels, *c, tdl::full_box(*c->bound));
  ASSERT_TRUE(dx.has_value()) << dx.error().to_string();
  EXPECT_EQ(*dx, (std::vector<float>{5, 5, 5, 5}));

  auto shared = pool_case(*ops, {1, 1, 3, 3, 2, 2, 1, 1, 0, 0, 1, 1}, rng);
  ASSERT_TRUE(shared.has_value()) << shared.error().to_string();
  shared->inputs[0].values = {0, 0, 0, 0, 9, 0, 0, 0, 0};  // the centre is every window's max
  shared->inputs[1].values = {9, 9, 9, 9};
  shared->inputs[2].values = {1, 2, 3, 4};
  dx = kernel_output(*kernels, *shared, tdl::full_box(*shared->bound));
  ASSERT_TRUE(dx.has_value()) << dx.error().to_string();
  EXPECT_EQ(*dx, (std::vector<float>{0, 0, 0, 0, 10, 0, 0, 0, 0}));
}

}  // namespace
}  // namespace cleave::runtime
