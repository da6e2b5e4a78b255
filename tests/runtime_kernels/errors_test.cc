// Kernels fail with a Status, never an exception or a crash: a call without its data, and a call
// no kernel of that type can run.
#include <gtest/gtest.h>

#include "harness.h"

namespace cleave::runtime {
namespace {

using namespace testing;

TEST(KernelErrors, MissingDataIsAStatusError) {
  auto ops = ops::OpRegistry::with_builtins();
  auto kernels = KernelRegistry::with_builtins();
  std::mt19937_64 rng(5);
  struct Op {
    std::string type;
    std::vector<ir::TensorType> inputs;
    ir::Attrs attrs;
  };
  ir::Attrs pad;
  pad.set("padding", std::vector<std::int64_t>{1, 1});
  ir::TensorType x{{2, 4, 6, 6}, ir::DType::fp32}, w{{4, 4, 3, 3}, ir::DType::fp32};
  ir::TensorType m{{5, 7}, ir::DType::fp32}, n{{7, 3}, ir::DType::fp32};
  for (Op const& op : {Op{"matmul", {m, n}, {}}, Op{"conv2d", {x, w}, pad}, Op{"relu", {m}, {}},
                       Op{"sgd_momentum", {m, m}, {}}}) {
    auto c = make_case(*ops, op.type, op.inputs, op.attrs, {}, rng);
    ASSERT_TRUE(c.has_value()) << c.error().to_string();
    auto piece = tdl::analyze_piece(*c->bound, tdl::full_box(*c->bound));
    ASSERT_TRUE(piece.has_value());
    KernelCall call{&c->graph, c->op, c->bound.get(), &*piece, {}, {nullptr, piece->output}};
    for (auto const& region : piece->inputs)
      call.inputs.push_back({nullptr, region.box});
    Kernel const* k = kernels->find(call);
    ASSERT_NE(k, nullptr) << op.type;
    Status s = k->run(call);
    EXPECT_FALSE(s.is_ok()) << op.type << " ran without data";
  }
}

TEST(KernelErrors, AKernelAskedForAnotherOpRefuses) {
  auto ops = ops::OpRegistry::with_builtins();
  auto kernels = KernelRegistry::with_builtins();
  std::mt19937_64 rng(6);
  auto c = make_case(*ops, "softmax", {{{3, 5}, ir::DType::fp32}}, {}, {}, rng);
  ASSERT_TRUE(c.has_value());
  auto piece = tdl::analyze_piece(*c->bound, tdl::full_box(*c->bound));
  ASSERT_TRUE(piece.has_value());
  std::vector<float> in(15, 0.5f), out(15);
  KernelCall call{&c->graph,
                  c->op,
                  c->bound.get(),
                  &*piece,
                  {{in.data(), piece->inputs[0].box}},
                  {out.data(), piece->output}};
  for (Kernel const* k : kernels->kernels()) {
    if (k->handles(call)) continue;
    Status s = k->run(call);
    EXPECT_FALSE(s.is_ok()) << k->name() << " ran a softmax it does not handle";
  }
}

}  // namespace
}  // namespace cleave::runtime
