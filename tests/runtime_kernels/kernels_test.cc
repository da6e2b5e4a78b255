// Every kernel against the reference interpreter: for random instances of every op type (the ops
// tests' generators), the whole op and random pieces of it (splits along parallel dimensions,
// along reduction dimensions, which make partial results, and windows with halos and border
// padding) must give what tdl::evaluate gives on the same inputs, up to fp32 rounding. Also which
// kernel takes each op type's whole piece, printed, with the big ones asserted.
#include <cmath>
#include <gtest/gtest.h>
#include <iostream>
#include <map>
#include <set>

#include "harness.h"
#include "ops/generators.h"
#include "runtime/kernels/kernel.h"

namespace cleave::runtime {
namespace {

using namespace testing;

constexpr double tolerance = 2e-4;

// The kernel that must take an op type's whole piece (in every trial).
std::map<std::string, std::string> const expected_kernels = {
    {"matmul", "onednn_matmul"},
    {"batch_matmul", "onednn_matmul"},
    {"linear", "onednn_matmul"},
    {"linear_grad_input", "onednn_matmul"},
    {"linear_grad_weight", "onednn_matmul"},
    {"batch_matmul_grad_shared", "onednn_matmul"},
    {"conv2d", "onednn_conv"},
    {"conv2d_grad_weight", "onednn_conv"},
    {"max_pool2d", "onednn_pool"},
    {"avg_pool2d", "onednn_pool"},
    {"relu", "onednn_eltwise"},
    {"tanh", "onednn_eltwise"},
    {"sigmoid", "onednn_eltwise"},
    {"gelu", "onednn_eltwise"},
    {"softmax", "onednn_softmax"},
    {"softmax_grad", "onednn_softmax"},
    {"layer_norm", "onednn_layer_norm"},
    {"layer_norm_grad_input", "loop_rows"},
    {"layer_norm_grad_gamma", "loop_rows"},
    {"cross_entropy", "onednn_cross_entropy"},
    {"cross_entropy_grad", "onednn_cross_entropy"},
    {"gelu_grad", "onednn_eltwise"},
    {"relu_grad", "onednn_eltwise"},
    {"sgd_momentum", "loop_sgd"},
    {"sgd_update", "loop_sgd"},
    {"bn_mean", "loop_batch_norm"},
    {"bn_var", "loop_batch_norm"},
    {"bn_apply", "loop_batch_norm"},
    {"bn_channel_sum", "loop_batch_norm"},
    {"bn_apply_grad_input", "loop_batch_norm"},
    {"bn_apply_grad_mean", "loop_batch_norm"},
    {"bn_apply_grad_var", "loop_batch_norm"},
    {"bn_apply_grad_gamma", "loop_batch_norm"},
    {"bn_var_grad_input", "loop_batch_norm"},
    {"bn_var_grad_mean", "loop_batch_norm"},
    {"bn_mean_grad_input", "loop_batch_norm"},
    {"pad", "loop_copy"},
    {"embedding_grad", "loop_embedding_grad"},
    {"max_pool2d_grad", "loop_max_pool_grad"},
};

struct Coverage {
  int trials = 0;
  int whole_handled = 0;
  std::map<std::string, int> pieces_by_kernel;
  int pieces = 0;
};

class KernelsMatchInterpreter : public ::testing::TestWithParam<std::string> {};

TEST_P(KernelsMatchInterpreter, RandomPieces) {
  auto ops = ops::OpRegistry::with_builtins();
  auto kernels = KernelRegistry::with_builtins();
  auto gens = ops::testing::all_generators();
  std::string const& type = GetParam();
  auto const& gen = gens.at(type);
  Coverage cov;
  for (int trial = 0; trial < 30; ++trial) {
    std::mt19937_64 rng(std::hash<std::string>{}(type) + static_cast<std::uint64_t>(trial));
    ops::testing::Case gc = gen(rng);
    std::vector<InputFill> fills;
    for (auto const& f : gc.fills)
      fills.push_back({f.lo, f.hi, f.int_hi});
    auto c = make_case(*ops, type, gc.inputs, gc.attrs, fills, rng);
    ASSERT_TRUE(c.has_value()) << c.error().to_string();
    SCOPED_TRACE(type + " trial " + std::to_string(trial) + " attrs " + gc.attrs.to_string() + " " +
                 c->bound->describe_space());
    ++cov.trials;
    auto pieces = random_pieces(*c->bound, rng, 8);
    for (std::size_t p = 0; p < pieces.size(); ++p) {
      PieceResult r = run_piece(*kernels, *c, pieces[p]);
      if (r.kernel.empty()) continue;
      ++cov.pieces;
      ++cov.pieces_by_kernel[r.kernel];
      if (p == 0) {
        ++cov.whole_handled;
        // A transposed A splits the batch_matmul_grad_shared's reduction (b.., i) around k: not
        // one GEMM (docs/runtime_kernels.md).
        bool one_gemm = type != "batch_matmul_grad_shared" || !gc.attrs.get_int("transpose_a", 0);
        if (auto it = expected_kernels.find(type); it != expected_kernels.end() && one_gemm) {
          EXPECT_EQ(r.kernel, it->second) << "whole piece";
        }
      }
      EXPECT_LE(r.max_error, tolerance) << "kernel " << r.kernel << " piece "
                                        << tdl::box_to_string(pieces[p]) << " " << r.message;
    }
  }
  // Every op type's whole piece has a kernel (none falls back to the interpreter,
  // docs/runtime_kernels.md), so every type compares kernels with the interpreter, not only those
  // whose kernel is named above.
  EXPECT_EQ(cov.whole_handled, cov.trials) << "the whole op must always have a kernel";
  if (expected_kernels.contains(type)) {
    EXPECT_GT(cov.pieces_by_kernel[expected_kernels.at(type)], 0);
  }
  std::string by;
  for (auto const& [k, n] : cov.pieces_by_kernel)
    by += " " + k + "=" + std::to_string(n);
  std::cout << "[coverage] " << type << ": whole op handled in " << cov.whole_handled << "/"
            << cov.trials << " trials; pieces run by kernels:" << by << "\n";
}

std::vector<std::string> op_types() {
  std::vector<std::string> out;
  for (auto const& [name, gen] : ops::testing::all_generators())
    out.push_back(name);
  return out;
}

INSTANTIATE_TEST_SUITE_P(AllOps, KernelsMatchInterpreter, ::testing::ValuesIn(op_types()),
                         [](auto const& info) { return info.param; });

}  // namespace
}  // namespace cleave::runtime
