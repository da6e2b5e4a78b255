// resnet: torchvision's ResNet-18/34/50/101/152 (v1.5: a bottleneck's stride is on its 3x3
// convolution), and the wide ResNets (WResNet) of Tofu and SwapAdvisor through `width`
// (PAPERS.md §1, §4). Weights are named as in torchvision ("layer3.4.conv2.weight",
// "layer2.0.downsample.0.weight").
//
// `width` multiplies the channels of every residual stage: both convolutions of a basic block,
// and a bottleneck's inner width and its expanded output alike; the 64-channel stem stays. This is
// the WResNet of Tofu's Table 2, whose weight sizes it reproduces within 2%
// (docs/zoo_cnn_notes.md). torchvision's wide_resnet50_2 widens only the bottleneck's inner width,
// which gives 51-62% of Tofu's sizes.
//
// wrn: Zagoruyko and Komodakis' wide ResNets on CIFAR-sized images, ParDNN's WRN and WRN-2
// (PAPERS.md §3).
#include <vector>

#include "models/layers.h"
#include "models/model_zoo.h"
#include "support/assert.h"

namespace cleave::models {
namespace {

// Channels beyond this would overflow tensor sizes long before they fit any machine.
constexpr std::int64_t max_width = 1024;

struct Stage {
  std::int64_t planes;  // torchvision's planes before widening: 64, 128, 256, 512
  std::int64_t blocks;
  std::int64_t stride;
};

struct Architecture {
  bool bottleneck = false;
  std::vector<std::int64_t> blocks;  // per stage
};

Architecture architecture(std::int64_t depth) {
  switch (depth) {
  case 18:
    return {false, {2, 2, 2, 2}};
  case 34:
    return {false, {3, 4, 6, 3}};
  case 50:
    return {true, {3, 4, 6, 3}};
  case 101:
    return {true, {3, 4, 23, 3}};
  case 152:
    return {true, {3, 8, 36, 3}};
  }
  return {};
}

Conv conv(std::int64_t out, std::int64_t kernel, std::int64_t stride = 1) {
  return Conv{.out_channels = out,
              .kernel_h = kernel,
              .kernel_w = kernel,
              .stride_h = stride,
              .stride_w = stride,
              .pad_h = kernel / 2,
              .pad_w = kernel / 2};
}

// conv<i> + bn<i> (+ relu<i>), the repeated unit of both block kinds.
ir::TensorId conv_bn(ops::OpBuilder& b, ir::TensorId x, Conv const& c, int i, bool relu) {
  std::string n = std::to_string(i);
  x = batch_norm(b, conv2d(b, x, c, "conv" + n), "bn" + n);
  return relu ? b.op("relu", {x}, {}, "relu" + n) : x;
}

// The shortcut: the identity, or a strided 1x1 projection + batch norm when the shape changes.
ir::TensorId shortcut(ops::OpBuilder& b, ir::TensorId x, std::int64_t out, std::int64_t stride) {
  std::int64_t in = b.shape_of(x).size() == 4 ? b.shape_of(x)[1] : out;
  if (stride == 1 && in == out) return x;
  auto s = b.scope("downsample");
  return batch_norm(b, conv2d(b, x, conv(out, /*kernel=*/1, stride), "0"), "1");
}

// relu(block(x) + shortcut(x)); the output is "<block>.relu".
ir::TensorId residual(ops::OpBuilder& b, ir::TensorId x, ir::TensorId y, std::int64_t out,
                      std::int64_t stride) {
  auto sum = b.op("add", {y, shortcut(b, x, out, stride)}, {}, "residual");
  return b.op("relu", {sum}, {}, "relu");
}

// Two 3x3 convolutions of `planes` channels (ResNet-18/34); stride on the first.
ir::TensorId basic_block(ops::OpBuilder& b, ir::TensorId x, std::int64_t planes,
                         std::int64_t stride) {
  auto y = conv_bn(b, x, conv(planes, /*kernel=*/3, stride), 1, /*relu=*/true);
  y = conv_bn(b, y, conv(planes, 3), 2, /*relu=*/false);
  return residual(b, x, y, planes, stride);
}

// 1x1 to `planes`, 3x3 (strided, v1.5), 1x1 to 4 * planes (ResNet-50/101/152).
ir::TensorId bottleneck(ops::OpBuilder& b, ir::TensorId x, std::int64_t planes,
                        std::int64_t stride) {
  auto y = conv_bn(b, x, conv(planes, /*kernel=*/1), 1, /*relu=*/true);
  y = conv_bn(b, y, conv(planes, 3, stride), 2, /*relu=*/true);
  y = conv_bn(b, y, conv(4 * planes, 1), 3, /*relu=*/false);
  return residual(b, x, y, 4 * planes, stride);
}

void build_resnet(ops::OpBuilder& b, ModelArgs const& a) {
  Architecture arch = architecture(a.integer("depth"));
  CLEAVE_ASSERT(!arch.blocks.empty(), "the depth key is a choice of 18, 34, 50, 101, 152");
  std::int64_t width = a.integer("width");
  if (width > max_width) {
    b.fail(Error(ErrorCode::invalid_argument, "model 'resnet': width=" + std::to_string(width) +
                                                  " is too large; accepted widths are 1 to " +
                                                  std::to_string(max_width) +
                                                  " (Tofu's WResNets use 4 to 10)"));
    return;
  }
  std::int64_t image = a.integer("image");
  auto x = b.input("input", {a.integer("batch"), 3, image, image}, a.dtype());
  x = conv_bn(b, x, conv(64, /*kernel=*/7, /*stride=*/2), 1, /*relu=*/false);
  x = b.op("relu", {x}, {}, "relu");
  x = max_pool(b, x, /*kernel=*/3, /*stride=*/2, /*pad=*/1, "maxpool");
  Stage const stages[] = {{64, arch.blocks[0], 1},
                          {128, arch.blocks[1], 2},
                          {256, arch.blocks[2], 2},
                          {512, arch.blocks[3], 2}};
  for (std::size_t i = 0; i < 4; ++i) {
    auto s = b.scope("layer" + std::to_string(i + 1));
    for (std::int64_t j = 0; j < stages[i].blocks; ++j) {
      auto block = b.scope(std::to_string(j));
      std::int64_t stride = j == 0 ? stages[i].stride : 1;
      std::int64_t planes = stages[i].planes * width;
      x = arch.bottleneck ? bottleneck(b, x, planes, stride) : basic_block(b, x, planes, stride);
    }
  }
  x = flatten(b, b.op("global_avg_pool", {x}, {}, "avgpool"), "flatten");
  classification_loss(b, linear(b, x, a.integer("classes"), "fc"));
}

// A pre-activation basic block of a wide ResNet (Zagoruyko and Komodakis): bn, relu, 3x3 conv
// (strided), bn, relu, 3x3 conv, plus the input, or a strided 1x1 projection of the activated
// input where the shape changes.
ir::TensorId wide_block(ops::OpBuilder& b, ir::TensorId x, std::int64_t planes,
                        std::int64_t stride) {
  auto a = b.op("relu", {batch_norm(b, x, "bn1")}, {}, "relu1");
  auto y = conv2d(b, a, conv(planes, /*kernel=*/3, stride), "conv1");
  y = b.op("relu", {batch_norm(b, y, "bn2")}, {}, "relu2");
  y = conv2d(b, y, conv(planes, 3), "conv2");
  bool same = stride == 1 && b.shape_of(x).size() == 4 && b.shape_of(x)[1] == planes;
  auto skip = same ? x : conv2d(b, a, conv(planes, /*kernel=*/1, stride), "shortcut");
  return b.op("add", {y, skip}, {}, "residual");
}

// WRN-depth-width on CIFAR-sized images: a 16-channel 3x3 stem, three groups of
// (depth - 4) / 6 wide blocks of 16, 32 and 64 x width channels (strides 1, 2, 2), then bn,
// relu, global average pool and the classifier. ParDNN's WRN is WRN-610-14, its WRN-2 WRN-304-28.
void build_wrn(ops::OpBuilder& b, ModelArgs const& a) {
  std::int64_t depth = a.integer("depth"), width = a.integer("width");
  if ((depth - 4) % 6 != 0 || width > max_width) {
    b.fail(Error(ErrorCode::invalid_argument, "model 'wrn': depth=" + std::to_string(depth) +
                                                  ", width=" + std::to_string(width) +
                                                  ": depth must be 6n + 4 with n >= 1 (10, 16, 22, "
                                                  "28, ...) and width at most " +
                                                  std::to_string(max_width)));
    return;
  }
  std::int64_t image = a.integer("image");
  auto x = b.input("input", {a.integer("batch"), 3, image, image}, a.dtype());
  x = conv2d(b, x, conv(16, /*kernel=*/3), "conv1");
  for (std::int64_t g = 0; g < 3; ++g) {
    auto s = b.scope("group" + std::to_string(g + 1));
    for (std::int64_t j = 0; j < (depth - 4) / 6; ++j) {
      auto block = b.scope(std::to_string(j));
      x = wide_block(b, x, (16 << g) * width, j == 0 && g > 0 ? 2 : 1);
    }
  }
  x = b.op("relu", {batch_norm(b, x, "bn")}, {}, "relu");
  x = flatten(b, b.op("global_avg_pool", {x}, {}, "avgpool"), "flatten");
  classification_loss(b, linear(b, x, a.integer("classes"), "fc"));
}

}  // namespace

void add_resnet(ModelZoo& zoo) {
  ModelDef def;
  def.name = "resnet";
  def.summary = "ResNet as in torchvision (basic blocks for 18/34, v1.5 bottlenecks for 50+); "
                "width > 1 gives Tofu's and SwapAdvisor's wide ResNets (WResNet-152-10: "
                "depth=152,width=10)";
  def.keys = {
      {"depth", KeyKind::choice, "50", "weight layers", 1, {"18", "34", "50", "101", "152"}},
      {"width",
       KeyKind::integer,
       "1",
       "widening factor of every residual stage (WResNet); the 64-channel stem stays",
       1,
       {}},
      {"batch", KeyKind::integer, "32", "samples per step", 1, {}},
      {"classes", KeyKind::integer, "1000", "output classes", 2, {}},
      {"image", KeyKind::integer, "224", "side of the square input image", 1, {}}};
  def.build = build_resnet;
  auto st = zoo.add(std::move(def));
  CLEAVE_ASSERT(st.is_ok(), "duplicate model");

  ModelDef wrn;
  wrn.name = "wrn";
  wrn.summary = "wide ResNet (Zagoruyko and Komodakis' WRN-depth-width, pre-activation basic "
                "blocks, CIFAR-sized images); ParDNN's WRN: depth=610,width=14, WRN-2: "
                "depth=304,width=28";
  wrn.keys = {
      {"depth", KeyKind::integer, "28", "weight layers, 6n + 4 (n blocks per group)", 10, {}},
      {"width", KeyKind::integer, "10", "widening factor of the three groups", 1, {}},
      {"batch", KeyKind::integer, "128", "samples per step", 1, {}},
      {"classes", KeyKind::integer, "10", "output classes (CIFAR-10)", 2, {}},
      {"image", KeyKind::integer, "32", "side of the square input image", 4, {}}};
  wrn.build = build_wrn;
  st = zoo.add(std::move(wrn));
  CLEAVE_ASSERT(st.is_ok(), "duplicate model");
}

}  // namespace cleave::models
