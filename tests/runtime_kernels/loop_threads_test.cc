// The loop kernels split a large piece among the worker's OpenMP threads: batch norm's (a channel
// sum by channels, an X-shaped op by planes), SGD's updates (contiguous ranges) and max-pool's
// gradient (planes). Every op, on whole pieces and random ones, gives what the interpreter gives
// on one thread and on three, and the same bits on both (each channel's sum adds the same terms in
// the same order whatever the threads).
#include <omp.h>

#include <gtest/gtest.h>
#include <tuple>

#include "harness.h"
#include "runtime/kernels/kernel.h"
#include "tdl/piece.h"

namespace cleave::runtime {
namespace {

using namespace testing;

ir::TensorType fp32(ir::Shape shape) {
  return {std::move(shape), ir::DType::fp32};
}

// Runs each piece on 1 and on 3 threads: the kernel named, within `tolerance` of the
// interpreter, the same bits both times.
void expect_thread_independent(OpCase const& c, std::vector<tdl::Box> const& pieces,
                               std::string const& kernel, double tolerance) {
  int before = omp_get_max_threads();
  auto kernels = KernelRegistry::with_builtins();
  for (auto const& piece : pieces) {
    SCOPED_TRACE(c.op->type + " " + tdl::box_to_string(piece));
    std::vector<float> outputs[2];
    for (int t : {0, 1}) {
      omp_set_num_threads(t == 0 ? 1 : 3);
      PieceResult r = run_piece(*kernels, c, piece);
      EXPECT_EQ(r.kernel, kernel);
      EXPECT_LE(r.max_error, tolerance) << r.message;
      auto out = kernel_output(*kernels, c, piece);
      ASSERT_TRUE(out.has_value()) << out.error().to_string();
      outputs[t] = std::move(*out);
    }
    EXPECT_EQ(outputs[0], outputs[1]) << "one thread and three differ";
  }
  omp_set_num_threads(before);
}

TEST(LoopKernelThreads, BatchNorm) {
  auto ops = ops::OpRegistry::with_builtins();
  // 4 x 24 x 16 x 16 = 24,576 elements: past the kernel's 16K threshold as a whole piece.
  ir::TensorType x = fp32({4, 24, 16, 16}), c = fp32({24});
  InputFill any{-1, 1, 0}, positive{0.1, 2, 0};
  // Each op's inputs by letter (docs/tdl.md): X and D X-shaped, V positive, the others [C].
  std::pair<char const*, char const*> const types[] = {{"bn_mean", "X"},
                                                       {"bn_var", "XM"},
                                                       {"bn_apply", "XMVGB"},
                                                       {"bn_channel_sum", "D"},
                                                       {"bn_apply_grad_input", "XMVGD"},
                                                       {"bn_apply_grad_mean", "XMVGD"},
                                                       {"bn_apply_grad_var", "XMVGD"},
                                                       {"bn_apply_grad_gamma", "XMVD"},
                                                       {"bn_var_grad_input", "XMv"},
                                                       {"bn_var_grad_mean", "XMv"},
                                                       {"bn_mean_grad_input", "Xm"}};
  for (auto const& [type, letters] : types) {
    std::vector<ir::TensorType> inputs;
    std::vector<InputFill> fills;
    for (char const* l = letters; *l; ++l) {
      inputs.push_back(*l == 'X' || *l == 'D' ? x : c);
      fills.push_back(*l == 'V' ? positive : any);
    }
    ir::Attrs attrs;
    if (std::string_view(letters).find('V') != std::string_view::npos) attrs.set("eps", 1e-5);
    std::mt19937_64 rng(11);
    auto made = make_case(*ops, type, inputs, attrs, fills, rng);
    ASSERT_TRUE(made.has_value()) << type << ": " << made.error().to_string();
    expect_thread_independent(*made, random_pieces(*made->bound, rng, 5), "loop_batch_norm", 1e-5);
  }
}

// 40,000 elements (past the kernel's 32K threshold, not a multiple of 3 x 16, the parts' bounds)
// and 300,300 (past 256K: non-temporal stores, and a tail of 3 elements past the last 4).
TEST(LoopKernelThreads, SgdUpdates) {
  auto ops = ops::OpRegistry::with_builtins();
  for (ir::Shape shape : {ir::Shape{25, 1600}, ir::Shape{300, 1001}})
    for (auto const& [type, attr, value] :
         {std::tuple{"sgd_momentum", "momentum", 0.9}, std::tuple{"sgd_update", "lr", 0.01}}) {
      ir::Attrs attrs;
      attrs.set(attr, value);
      std::mt19937_64 rng(5);
      auto made =
          make_case(*ops, type, {fp32(shape), fp32(shape)}, attrs, {{-1, 1, 0}, {-1, 1, 0}}, rng);
      ASSERT_TRUE(made.has_value()) << type << ": " << made.error().to_string();
      expect_thread_independent(*made, random_pieces(*made->bound, rng, 4), "loop_sgd", 1e-6);
    }
}

}  // namespace
}  // namespace cleave::runtime
