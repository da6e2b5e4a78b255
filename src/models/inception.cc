// inception: torchvision's Inception3 (Inception-v3, the CNN with the widest fan-out in
// FlexFlow's evaluation, PAPERS.md §2), or Inception-v4 (version=4, below), without the auxiliary
// classifier: a training step's loss is
// the main head's alone, and torchvision's 27,161,264 parameters with the aux head become
// 23,834,568. transform_input only rescales the input's channels, so it is left out. Weights are
// named as in torchvision ("Mixed_6b.branch7x7_2.conv.weight", "fc.bias").
#include <vector>

#include "models/layers.h"
#include "models/model_zoo.h"
#include "support/assert.h"

namespace cleave::models {
namespace {

// The smallest image whose Mixed_7a still has a 3x3 input (torchvision asks for 75 as well).
constexpr std::int64_t min_image = 75;

struct Window {
  std::int64_t kh = 1, kw = 1;
  std::int64_t stride = 1;
  std::int64_t ph = 0, pw = 0;
};
Window square(std::int64_t k, std::int64_t stride = 1, std::int64_t pad = 0) {
  return {k, k, stride, pad, pad};
}
// 1xk and kx1 windows that keep the size (the factored 7x7 and 3x3 convolutions).
Window row(std::int64_t k) {
  return {1, k, 1, 0, k / 2};
}
Window column(std::int64_t k) {
  return {k, 1, 1, k / 2, 0};
}

// torchvision's BasicConv2d: convolution without bias, batch norm (eps 0.001), relu.
ir::TensorId basic_conv(ops::OpBuilder& b, ir::TensorId x, std::int64_t out, Window w,
                        std::string const& name) {
  auto s = b.scope(name);
  x = conv2d(b, x,
             Conv{.out_channels = out,
                  .kernel_h = w.kh,
                  .kernel_w = w.kw,
                  .stride_h = w.stride,
                  .stride_w = w.stride,
                  .pad_h = w.ph,
                  .pad_w = w.pw},
             "conv");
  x = batch_norm(b, x, "bn", /*eps=*/1e-3);
  return b.op("relu", {x}, {}, "relu");
}

ir::TensorId concat(ops::OpBuilder& b, std::vector<ir::TensorId> parts, std::string const& name) {
  return b.op("concat", std::move(parts), {{"axis", std::int64_t{1}}}, name);
}

// The average-pool branch of blocks A, C and E: a 3x3 pool (stride 1, pad 1), then a 1x1.
ir::TensorId pool_branch(ops::OpBuilder& b, ir::TensorId x, std::int64_t out) {
  x = avg_pool(b, x, /*kernel=*/3, /*stride=*/1, /*pad=*/1, "pool");
  return basic_conv(b, x, out, square(1), "branch_pool");
}

// 35x35 grid: 1x1, 5x5 and double-3x3 branches and a pool branch.
ir::TensorId inception_a(ops::OpBuilder& b, ir::TensorId x, std::int64_t pool_features,
                         std::string const& name) {
  auto s = b.scope(name);
  auto b1 = basic_conv(b, x, 64, square(1), "branch1x1");
  auto b5 = basic_conv(b, x, 48, square(1), "branch5x5_1");
  b5 = basic_conv(b, b5, 64, square(5, 1, 2), "branch5x5_2");
  auto b3 = basic_conv(b, x, 64, square(1), "branch3x3dbl_1");
  b3 = basic_conv(b, b3, 96, square(3, 1, 1), "branch3x3dbl_2");
  b3 = basic_conv(b, b3, 96, square(3, 1, 1), "branch3x3dbl_3");
  return concat(b, {b1, b5, b3, pool_branch(b, x, pool_features)}, "concat");
}

// 35x35 -> 17x17: strided 3x3 and double-3x3 branches and a max pool.
ir::TensorId inception_b(ops::OpBuilder& b, ir::TensorId x, std::string const& name) {
  auto s = b.scope(name);
  auto b3 = basic_conv(b, x, 384, square(3, 2), "branch3x3");
  auto bd = basic_conv(b, x, 64, square(1), "branch3x3dbl_1");
  bd = basic_conv(b, bd, 96, square(3, 1, 1), "branch3x3dbl_2");
  bd = basic_conv(b, bd, 96, square(3, 2), "branch3x3dbl_3");
  auto pool = max_pool(b, x, /*kernel=*/3, /*stride=*/2, /*pad=*/0, "pool");
  return concat(b, {b3, bd, pool}, "concat");
}

// 17x17 grid: 7x7 convolutions factored into 1x7 and 7x1, `c7` channels inside.
ir::TensorId inception_c(ops::OpBuilder& b, ir::TensorId x, std::int64_t c7,
                         std::string const& name) {
  auto s = b.scope(name);
  auto b1 = basic_conv(b, x, 192, square(1), "branch1x1");
  auto b7 = basic_conv(b, x, c7, square(1), "branch7x7_1");
  b7 = basic_conv(b, b7, c7, row(7), "branch7x7_2");
  b7 = basic_conv(b, b7, 192, column(7), "branch7x7_3");
  auto bd = basic_conv(b, x, c7, square(1), "branch7x7dbl_1");
  bd = basic_conv(b, bd, c7, column(7), "branch7x7dbl_2");
  bd = basic_conv(b, bd, c7, row(7), "branch7x7dbl_3");
  bd = basic_conv(b, bd, c7, column(7), "branch7x7dbl_4");
  bd = basic_conv(b, bd, 192, row(7), "branch7x7dbl_5");
  return concat(b, {b1, b7, bd, pool_branch(b, x, 192)}, "concat");
}

// 17x17 -> 8x8: strided 3x3 and 7x7-then-3x3 branches and a max pool.
ir::TensorId inception_d(ops::OpBuilder& b, ir::TensorId x, std::string const& name) {
  auto s = b.scope(name);
  auto b3 = basic_conv(b, x, 192, square(1), "branch3x3_1");
  b3 = basic_conv(b, b3, 320, square(3, 2), "branch3x3_2");
  auto b7 = basic_conv(b, x, 192, square(1), "branch7x7x3_1");
  b7 = basic_conv(b, b7, 192, row(7), "branch7x7x3_2");
  b7 = basic_conv(b, b7, 192, column(7), "branch7x7x3_3");
  b7 = basic_conv(b, b7, 192, square(3, 2), "branch7x7x3_4");
  auto pool = max_pool(b, x, /*kernel=*/3, /*stride=*/2, /*pad=*/0, "pool");
  return concat(b, {b3, b7, pool}, "concat");
}

// 8x8 grid: the 3x3 branches end in parallel 1x3 and 3x1 convolutions, concatenated.
ir::TensorId inception_e(ops::OpBuilder& b, ir::TensorId x, std::string const& name) {
  auto s = b.scope(name);
  auto b1 = basic_conv(b, x, 320, square(1), "branch1x1");
  auto b3 = basic_conv(b, x, 384, square(1), "branch3x3_1");
  b3 = concat(b,
              {basic_conv(b, b3, 384, row(3), "branch3x3_2a"),
               basic_conv(b, b3, 384, column(3), "branch3x3_2b")},
              "branch3x3_concat");
  auto bd = basic_conv(b, x, 448, square(1), "branch3x3dbl_1");
  bd = basic_conv(b, bd, 384, square(3, 1, 1), "branch3x3dbl_2");
  bd = concat(b,
              {basic_conv(b, bd, 384, row(3), "branch3x3dbl_3a"),
               basic_conv(b, bd, 384, column(3), "branch3x3dbl_3b")},
              "branch3x3dbl_concat");
  return concat(b, {b1, b3, bd, pool_branch(b, x, 192)}, "concat");
}

// Inception-v4 (Szegedy et al. 2016) as timm's `inception_v4` builds it (42,679,816 parameters
// at width 1), every convolution's channels times `w` (SwapAdvisor's wide Inception-v4, PAPERS.md
// §4). Names follow timm's ("features.11.branch2.3.conv.weight", "last_linear.bias").
struct V4 {
  ops::OpBuilder& b;
  std::int64_t w;

  ir::TensorId conv(ir::TensorId x, std::int64_t out, Window win, std::string const& name) {
    return basic_conv(b, x, out * w, win, name);
  }
  // Convolutions one after another, named prefix.0, prefix.1, ...
  ir::TensorId chain(ir::TensorId x, std::vector<std::pair<std::int64_t, Window>> const& convs,
                     std::string const& prefix) {
    for (std::size_t i = 0; i < convs.size(); ++i)
      x = conv(x, convs[i].first, convs[i].second, prefix + "." + std::to_string(i));
    return x;
  }
  ir::TensorId pool_then_conv(ir::TensorId x, std::int64_t out, std::string const& prefix) {
    x = avg_pool(b, x, /*kernel=*/3, /*stride=*/1, /*pad=*/1, prefix + ".0");
    return conv(x, out, square(1), prefix + ".1");
  }
  ir::TensorId max_branch(ir::TensorId x, std::string const& name) {
    return max_pool(b, x, /*kernel=*/3, /*stride=*/2, /*pad=*/0, name);
  }

  ir::TensorId stem(ir::TensorId x) {
    x = conv(x, 32, square(3, 2), "features.0");
    x = conv(x, 32, square(3), "features.1");
    x = conv(x, 64, square(3, 1, 1), "features.2");
    {
      auto s = b.scope("features.3");
      x = concat(b, {max_branch(x, "maxpool"), conv(x, 96, square(3, 2), "conv")}, "concat");
    }
    {
      auto s = b.scope("features.4");
      auto b0 = chain(x, {{64, square(1)}, {96, square(3)}}, "branch0");
      auto b1 =
          chain(x, {{64, square(1)}, {64, row(7)}, {64, column(7)}, {96, square(3)}}, "branch1");
      x = concat(b, {b0, b1}, "concat");
    }
    auto s = b.scope("features.5");
    return concat(b, {conv(x, 192, square(3, 2), "conv"), max_branch(x, "maxpool")}, "concat");
  }

  ir::TensorId block_a(ir::TensorId x, std::string const& name) {
    auto s = b.scope(name);
    auto b0 = conv(x, 96, square(1), "branch0");
    auto b1 = chain(x, {{64, square(1)}, {96, square(3, 1, 1)}}, "branch1");
    auto b2 = chain(x, {{64, square(1)}, {96, square(3, 1, 1)}, {96, square(3, 1, 1)}}, "branch2");
    return concat(b, {b0, b1, b2, pool_then_conv(x, 96, "branch3")}, "concat");
  }
  ir::TensorId reduction_a(ir::TensorId x, std::string const& name) {
    auto s = b.scope(name);
    auto b0 = conv(x, 384, square(3, 2), "branch0");
    auto b1 = chain(x, {{192, square(1)}, {224, square(3, 1, 1)}, {256, square(3, 2)}}, "branch1");
    return concat(b, {b0, b1, max_branch(x, "branch2")}, "concat");
  }
  ir::TensorId block_b(ir::TensorId x, std::string const& name) {
    auto s = b.scope(name);
    auto b0 = conv(x, 384, square(1), "branch0");
    auto b1 = chain(x, {{192, square(1)}, {224, row(7)}, {256, column(7)}}, "branch1");
    auto b2 = chain(
        x, {{192, square(1)}, {192, column(7)}, {224, row(7)}, {224, column(7)}, {256, row(7)}},
        "branch2");
    return concat(b, {b0, b1, b2, pool_then_conv(x, 128, "branch3")}, "concat");
  }
  ir::TensorId reduction_b(ir::TensorId x, std::string const& name) {
    auto s = b.scope(name);
    auto b0 = chain(x, {{192, square(1)}, {192, square(3, 2)}}, "branch0");
    auto b1 = chain(x, {{256, square(1)}, {256, row(7)}, {320, column(7)}, {320, square(3, 2)}},
                    "branch1");
    return concat(b, {b0, b1, max_branch(x, "branch2")}, "concat");
  }
  // The 3x3 branches end in parallel 1x3 and 3x1 convolutions, each of 256.
  ir::TensorId block_c(ir::TensorId x, std::string const& name) {
    auto s = b.scope(name);
    auto b0 = conv(x, 256, square(1), "branch0");
    auto b1 = conv(x, 384, square(1), "branch1_0");
    auto b2 = conv(x, 384, square(1), "branch2_0");
    b2 = conv(b2, 448, column(3), "branch2_1");
    b2 = conv(b2, 512, row(3), "branch2_2");
    return concat(b,
                  {b0, conv(b1, 256, row(3), "branch1_1a"), conv(b1, 256, column(3), "branch1_1b"),
                   conv(b2, 256, row(3), "branch2_3a"), conv(b2, 256, column(3), "branch2_3b"),
                   pool_then_conv(x, 256, "branch3")},
                  "concat");
  }

  ir::TensorId features(ir::TensorId x) {
    x = stem(x);
    int i = 6;
    for (int k = 0; k < 4; ++k, ++i)
      x = block_a(x, "features." + std::to_string(i));
    x = reduction_a(x, "features." + std::to_string(i++));
    for (int k = 0; k < 7; ++k, ++i)
      x = block_b(x, "features." + std::to_string(i));
    x = reduction_b(x, "features." + std::to_string(i++));
    for (int k = 0; k < 3; ++k, ++i)
      x = block_c(x, "features." + std::to_string(i));
    return x;
  }
};

void build_inception(ops::OpBuilder& b, ModelArgs const& a) {
  bool v4 = a.text("version") == "4";
  std::int64_t width = a.integer("width");
  if (!v4 && width != 1) {
    b.fail(Error(ErrorCode::invalid_argument,
                 "model 'inception': width=" + std::to_string(width) +
                     " widens only version 4 (SwapAdvisor's wide Inception-v4); version 3 is "
                     "torchvision's"));
    return;
  }
  std::int64_t image = a.integer("image");
  if (image < min_image) {
    b.fail(Error(ErrorCode::invalid_argument,
                 "model 'inception': image=" + std::to_string(image) +
                     " is too small for the stride-2 stages; accepted images are " +
                     std::to_string(min_image) + " or larger (default 299)"));
    return;
  }
  auto x = b.input("input", {a.integer("batch"), 3, image, image}, a.dtype());
  if (v4) {
    x = V4{b, width}.features(x);
    x = flatten(b, b.op("global_avg_pool", {x}, {}, "global_pool"), "flatten");
    classification_loss(b, linear(b, x, a.integer("classes"), "last_linear"));
    return;
  }
  x = basic_conv(b, x, 32, square(3, 2), "Conv2d_1a_3x3");
  x = basic_conv(b, x, 32, square(3), "Conv2d_2a_3x3");
  x = basic_conv(b, x, 64, square(3, 1, 1), "Conv2d_2b_3x3");
  x = max_pool(b, x, /*kernel=*/3, /*stride=*/2, /*pad=*/0, "maxpool1");
  x = basic_conv(b, x, 80, square(1), "Conv2d_3b_1x1");
  x = basic_conv(b, x, 192, square(3), "Conv2d_4a_3x3");
  x = max_pool(b, x, 3, 2, 0, "maxpool2");
  x = inception_a(b, x, /*pool_features=*/32, "Mixed_5b");
  x = inception_a(b, x, 64, "Mixed_5c");
  x = inception_a(b, x, 64, "Mixed_5d");
  x = inception_b(b, x, "Mixed_6a");
  x = inception_c(b, x, /*c7=*/128, "Mixed_6b");
  x = inception_c(b, x, 160, "Mixed_6c");
  x = inception_c(b, x, 160, "Mixed_6d");
  x = inception_c(b, x, 192, "Mixed_6e");
  x = inception_d(b, x, "Mixed_7a");
  x = inception_e(b, x, "Mixed_7b");
  x = inception_e(b, x, "Mixed_7c");
  x = b.op("global_avg_pool", {x}, {}, "avgpool");
  x = flatten(b, dropout(b, x, 0.5, "dropout"), "flatten");
  classification_loss(b, linear(b, x, a.integer("classes"), "fc"));
}

}  // namespace

void add_inception(ModelZoo& zoo) {
  ModelDef def;
  def.name = "inception";
  def.summary = "Inception-v3 as in torchvision (Inception3 without the auxiliary classifier), "
                "or Inception-v4 as in timm (widened for SwapAdvisor): factored convolutions in "
                "parallel branches joined by concat";
  def.keys = {
      {"version", KeyKind::choice, "3", "Inception version", 1, {"3", "4"}},
      {"width",
       KeyKind::integer,
       "1",
       "channel multiplier of every convolution (version 4)",
       1,
       {}},
      {"batch", KeyKind::integer, "64", "samples per step (FlexFlow's batch per GPU)", 1, {}},
      {"classes", KeyKind::integer, "1000", "output classes", 2, {}},
      {"image", KeyKind::integer, "299", "side of the square input image (75 or more)", 1, {}}};
  def.build = build_inception;
  auto st = zoo.add(std::move(def));
  CLEAVE_ASSERT(st.is_ok(), "duplicate model");
}

}  // namespace cleave::models
