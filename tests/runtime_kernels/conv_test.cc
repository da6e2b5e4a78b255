// Convolutions at ResNet-like geometries (3x3 stride 1 and 2, 1x1 stride 2, 7x7 stride 2, dilated,
// grouped, depthwise), split where plans split them: along the batch, along output rows (halos,
// with padding only at the tensor's borders), along input channels (partial sums) and along kernel
// taps; every piece through the conv kernel must match the interpreter. And kernels run
// concurrently from several threads.
#include <cmath>
#include <gtest/gtest.h>
#include <thread>

#include "harness.h"

namespace cleave::runtime {
namespace {

using namespace testing;

struct Geometry {
  std::int64_t n, c, h, co, k, stride, pad, dilation, groups;
};

std::vector<Geometry> const geometries = {
    {2, 4, 9, 6, 3, 1, 1, 1, 1},
    {2, 4, 10, 6, 3, 2, 1, 1, 1},
    {1, 6, 9, 4, 1, 2, 0, 1, 1},
    {1, 3, 15, 4, 7, 2, 3, 1, 1},
    {1, 4, 11, 4, 3, 1, 2, 2, 1},
    {2, 4, 8, 6, 3, 1, 1, 1, 2},
    {1, 6, 9, 6, 3, 2, 1, 1, 6},
    {1, 2, 7, 3, 5, 1, 0, 1, 1},
    {2, 6, 8, 4, 1, 2, 0, 1, 1},
    // ResNet's last stage on 32x32 images: 3x3 padded convolutions of 1x1 and 2x2 maps.
    {2, 32, 1, 32, 3, 1, 1, 1, 1},
    {2, 32, 2, 32, 3, 1, 1, 1, 1},
    {2, 16, 2, 32, 3, 2, 1, 1, 1},
};

ir::Attrs conv_attrs(Geometry const& g) {
  ir::Attrs a;
  a.set("stride", std::vector<std::int64_t>{g.stride, g.stride});
  a.set("padding", std::vector<std::int64_t>{g.pad, g.pad});
  a.set("dilation", std::vector<std::int64_t>{g.dilation, g.dilation});
  a.set("groups", g.groups);
  return a;
}

// Timed (the first call of a shape runs every variant; the last leaves the result) and fixed (the
// blocked variant on every call).
KernelChoice const choices[] = {KernelChoice::fastest, KernelChoice::deterministic};

std::int64_t out_size(Geometry const& g) {
  return (g.h + 2 * g.pad - g.dilation * (g.k - 1) - 1) / g.stride + 1;
}

// Pieces of op: whole, and each named dimension cut into 3 (or its extent) parts.
std::vector<tdl::Box> named_splits(tdl::BoundOp const& op, std::vector<std::string> const& names) {
  std::vector<tdl::Box> out = {tdl::full_box(op)};
  for (auto const& name : names)
    for (std::size_t d = 0; d < op.dims().size(); ++d)
      if (op.dims()[d].name == name && op.dims()[d].extent > 1)
        for (auto const& b : tdl::split_evenly(tdl::full_box(op), static_cast<int>(d),
                                               std::min<std::int64_t>(3, op.dims()[d].extent)))
          out.push_back(b);
  // Two dims at once: rows and channels.
  if (names.size() >= 2) {
    std::vector<tdl::Box> both;
    for (std::size_t d = 0; d < op.dims().size(); ++d)
      if (op.dims()[d].name == names[0] && op.dims()[d].extent > 1)
        both = tdl::split_evenly(tdl::full_box(op), static_cast<int>(d), 2);
    for (auto const& b : both)
      for (std::size_t d = 0; d < op.dims().size(); ++d)
        if (op.dims()[d].name == names[1] && b[d].size() > 1)
          for (auto const& p : tdl::split_evenly(b, static_cast<int>(d), 2))
            out.push_back(p);
  }
  return out;
}

void check(std::string const& type, std::vector<ir::TensorType> const& inputs, ir::Attrs attrs,
           std::vector<std::string> const& split, KernelChoice choice) {
  auto ops = ops::OpRegistry::with_builtins();
  auto kernels = KernelRegistry::with_builtins(choice);
  std::mt19937_64 rng(7);
  auto c = make_case(*ops, type, inputs, attrs, {}, rng);
  ASSERT_TRUE(c.has_value()) << c.error().to_string();
  int handled = 0;
  auto pieces = named_splits(*c->bound, split);
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    auto const& p = pieces[i];
    PieceResult r = run_piece(*kernels, *c, p);
    if (i == 0) {
      EXPECT_EQ(r.kernel, "onednn_conv") << type << " " << attrs.to_string() << ": whole op";
    }
    if (r.kernel != "onednn_conv") continue;
    ++handled;
    EXPECT_LE(r.max_error, 2e-4) << type << " piece " << tdl::box_to_string(p) << " " << r.message;
  }
  EXPECT_GT(handled, 0) << type << " " << attrs.to_string() << ": no piece ran on onednn_conv";
  std::cout << "[conv] " << type << " " << attrs.to_string() << ": " << handled << "/"
            << pieces.size() << " pieces on onednn_conv\n";
}

TEST(ConvKernel, ForwardPiecesMatchInterpreter) {
  for (auto const& g : geometries) {
    ir::Attrs a = conv_attrs(g);
    for (auto choice : choices)
      check("conv2d",
            {{{g.n, g.c, g.h, g.h}, ir::DType::fp32},
             {{g.co, g.c / g.groups, g.k, g.k}, ir::DType::fp32}},
            a, {"y", "x", "n", "ci", "co", "dy"}, choice);
  }
}

TEST(ConvKernel, BackwardDataPiecesMatchInterpreter) {
  for (auto const& g : geometries) {
    ir::Attrs a = conv_attrs(g);
    a.set("input_shape", std::vector<std::int64_t>{g.n, g.c, g.h, g.h});
    std::int64_t o = out_size(g);
    for (auto choice : choices)
      check("conv2d_grad_input",
            {{{g.n, g.co, o, o}, ir::DType::fp32},
             {{g.co, g.c / g.groups, g.k, g.k}, ir::DType::fp32}},
            a, {"h", "w", "n", "co", "ci"}, choice);
  }
}

TEST(ConvKernel, BackwardWeightsPiecesMatchInterpreter) {
  for (auto const& g : geometries) {
    ir::Attrs a = conv_attrs(g);
    a.set("kernel", std::vector<std::int64_t>{g.k, g.k});
    std::int64_t o = out_size(g);
    for (auto choice : choices)
      check("conv2d_grad_weight",
            {{{g.n, g.co, o, o}, ir::DType::fp32}, {{g.n, g.c, g.h, g.h}, ir::DType::fp32}}, a,
            {"y", "n", "co", "ci", "dy"}, choice);
  }
}

// conv3d and its gradients: E3D-LSTM's 2x5x5 "same" gate convolution (asymmetric depth padding),
// and a strided, dilated, grouped one; split along depth, rows, channels and kernel taps.
TEST(ConvKernel, Conv3dPiecesMatchInterpreter) {
  using Ints = std::vector<std::int64_t>;
  struct Case3d {
    Ints x, w;
    ir::Attrs attrs;
  };
  Case3d const cases[] = {
      {{1, 3, 2, 6, 6}, {4, 3, 2, 5, 5}, {{"padding", Ints{0, 2, 2, 1, 2, 2}}}},
      {{1, 4, 4, 7, 6},
       {4, 2, 3, 3, 2},
       {{"stride", Ints{2, 2, 1}},
        {"padding", Ints{1, 1, 0}},
        {"dilation", Ints{1, 1, 2}},
        {"groups", std::int64_t{2}}}},
  };
  auto ops = ops::OpRegistry::with_builtins();
  for (auto const& c : cases) {
    ir::TensorType x{c.x, ir::DType::fp32}, w{c.w, ir::DType::fp32};
    auto y = ops->infer("conv3d", c.attrs, std::vector{x, w});
    ASSERT_TRUE(y.has_value()) << y.error().to_string();
    ir::TensorType dy = y->at(0);
    ir::Attrs dx_attrs = c.attrs, dw_attrs = c.attrs;
    dx_attrs.set("input_shape", c.x);
    dw_attrs.set("kernel", Ints(c.w.begin() + 2, c.w.end()));
    for (auto choice : choices) {
      check("conv3d", {x, w}, c.attrs, {"z", "y", "ci", "dz"}, choice);
      check("conv3d_grad_input", {dy, w}, dx_attrs, {"t", "h", "co"}, choice);
      check("conv3d_grad_weight", {dy, x}, dw_attrs, {"z", "y", "ci"}, choice);
    }
  }
}

TEST(Kernels, RunConcurrentlyFromSeveralThreads) {
  auto ops = ops::OpRegistry::with_builtins();
  auto kernels = KernelRegistry::with_builtins();
  std::mt19937_64 rng(3);
  Geometry g{2, 8, 12, 8, 3, 1, 1, 1, 1};
  auto conv =
      make_case(*ops, "conv2d",
                {{{g.n, g.c, g.h, g.h}, ir::DType::fp32}, {{g.co, g.c, g.k, g.k}, ir::DType::fp32}},
                conv_attrs(g), {}, rng);
  auto mm = make_case(*ops, "matmul", {{{33, 17}, ir::DType::fp32}, {{17, 29}, ir::DType::fp32}},
                      {}, {}, rng);
  ASSERT_TRUE(conv.has_value() && mm.has_value());
  // Each piece checked once against the interpreter, then run by four threads at once, each
  // result compared with the checked one.
  struct Job {
    OpCase const* c;
    tdl::Box piece;
    std::vector<float> want;
  };
  std::vector<Job> jobs;
  for (auto const& [c, names] :
       {std::pair{&*conv, std::vector<std::string>{"y", "co"}}, {&*mm, {"i", "k"}}})
    for (auto const& p : named_splits(*c->bound, names)) {
      ASSERT_LE(run_piece(*kernels, *c, p).max_error, 2e-4);
      auto want = kernel_output(*kernels, *c, p);
      ASSERT_TRUE(want.has_value()) << want.error().to_string();
      jobs.push_back({c, p, *want});
    }
  std::vector<double> worst(4, 0);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < worst.size(); ++t)
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 3; ++rep)
        for (auto const& job : jobs) {
          auto got = kernel_output(*kernels, *job.c, job.piece);
          if (!got) {
            worst[t] = INFINITY;
            continue;
          }
          for (std::size_t i = 0; i < got->size(); ++i)
            worst[t] = std::max(worst[t], std::abs((*got)[i] - job.want[i]) /
                                              std::max(1.0, std::abs(double{job.want[i]})));
        }
    });
  for (auto& th : threads)
    th.join();
  for (double w : worst)
    EXPECT_LE(w, 1e-5);
}

}  // namespace
}  // namespace cleave::runtime
