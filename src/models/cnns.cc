// alexnet and vgg: torchvision's AlexNet and VGG-11/13/16/19 (configurations A, B, D, E, without
// batch norm), the plain convolutional classifiers of FlexFlow's evaluation (PAPERS.md §2).
// Weights and ops are named after torchvision's modules ("features.0.weight",
// "classifier.6.bias"), so a state dict lines up with our weights one to one.
#include <vector>

#include "models/layers.h"
#include "models/model_zoo.h"
#include "support/assert.h"

namespace cleave::models {
namespace {

// Output size of a window (convolution or pooling, floor mode) along one axis; 0 when the window
// does not fit.
std::int64_t window_out(std::int64_t in, std::int64_t kernel, std::int64_t stride,
                        std::int64_t pad) {
  std::int64_t span = in + 2 * pad - kernel;
  return span < 0 ? 0 : span / stride + 1;
}

// Side of AlexNet's last feature map for a square image of side `image`.
std::int64_t alexnet_map(std::int64_t image) {
  std::int64_t s = window_out(image, /*kernel=*/11, /*stride=*/4, /*pad=*/2);
  s = window_out(s, 3, 2, 0);  // the 5x5 convolution (pad 2) keeps the size
  s = window_out(s, 3, 2, 0);  // as do the three 3x3 convolutions (pad 1)
  return window_out(s, 3, 2, 0);
}

// Side of VGG's last feature map: five 2x2 max pools; the 3x3 convolutions (pad 1) keep the size.
std::int64_t vgg_map(std::int64_t image) {
  for (int i = 0; i < 5; ++i)
    image = window_out(image, 2, 2, 0);
  return image;
}

// torchvision ends the features with AdaptiveAvgPool2d((target, target)). With a map of side
// `map` that is the identity when map == target and an avg_pool2d of kernel = stride =
// map / target when target divides it; other sizes pool uneven windows, which one pooling op
// cannot express. Fails with the images that work (the first two ranges of them).
bool check_adaptive_pool(ops::OpBuilder& b, std::string const& model, std::int64_t image,
                         std::int64_t (*map_of)(std::int64_t), std::int64_t target) {
  std::int64_t map = map_of(image);
  if (map >= target && map % target == 0) return true;
  std::string ranges;
  int found = 0;
  for (std::int64_t i = 1; i < 4096 && found < 2; ++i) {
    std::int64_t m = map_of(i);
    if (m < target || m % target != 0) continue;
    std::int64_t j = i;
    while (map_of(j + 1) == m)
      ++j;
    ranges += (found ? ", " : "") + std::to_string(i) + "-" + std::to_string(j) + " (" +
              std::to_string(m) + "x" + std::to_string(m) + ")";
    ++found;
    i = j;
  }
  std::string t = std::to_string(target);
  b.fail(Error(ErrorCode::invalid_argument,
               "model '" + model + "': image=" + std::to_string(image) + " gives a " +
                   std::to_string(map) + "x" + std::to_string(map) +
                   " feature map, but the adaptive average pool to " + t + "x" + t +
                   " is supported only for maps whose side is a multiple of " + t +
                   "; accepted images include " + ranges));
  return false;
}

ir::TensorId adaptive_avg_pool(ops::OpBuilder& b, ir::TensorId x, std::int64_t target) {
  std::int64_t map = b.shape_of(x).size() == 4 ? b.shape_of(x)[2] : target;
  if (map == target) return x;  // the common case (224 inputs): no op, as no work is done
  return avg_pool(b, x, map / target, map / target, /*pad=*/0, "avgpool");
}

// torchvision's Conv2d (with bias) followed by ReLU at features[index], features[index + 1].
ir::TensorId conv_relu(ops::OpBuilder& b, ir::TensorId x, std::int64_t out, std::int64_t kernel,
                       std::int64_t stride, std::int64_t pad, int index) {
  x = conv2d(b, x,
             Conv{.out_channels = out,
                  .kernel_h = kernel,
                  .kernel_w = kernel,
                  .stride_h = stride,
                  .stride_w = stride,
                  .pad_h = pad,
                  .pad_w = pad,
                  .bias = true},
             std::to_string(index));
  return b.op("relu", {x}, {}, std::to_string(index + 1) + ".relu");
}

void build_alexnet(ops::OpBuilder& b, ModelArgs const& a) {
  std::int64_t image = a.integer("image");
  if (!check_adaptive_pool(b, "alexnet", image, alexnet_map, 6)) return;
  auto x = b.input("input", {a.integer("batch"), 3, image, image}, a.dtype());
  {
    auto s = b.scope("features");
    x = conv_relu(b, x, 64, /*kernel=*/11, /*stride=*/4, /*pad=*/2, /*index=*/0);
    x = max_pool(b, x, /*kernel=*/3, /*stride=*/2, /*pad=*/0, "2.max_pool");
    x = conv_relu(b, x, 192, 5, 1, 2, 3);
    x = max_pool(b, x, 3, 2, 0, "5.max_pool");
    x = conv_relu(b, x, 384, 3, 1, 1, 6);
    x = conv_relu(b, x, 256, 3, 1, 1, 8);
    x = conv_relu(b, x, 256, 3, 1, 1, 10);
    x = max_pool(b, x, 3, 2, 0, "12.max_pool");
  }
  x = flatten(b, adaptive_avg_pool(b, x, 6), "flatten");
  {
    auto s = b.scope("classifier");
    x = dropout(b, x, 0.5, "0");
    x = b.op("relu", {linear(b, x, 4096, "1")}, {}, "2.relu");
    x = dropout(b, x, 0.5, "3");
    x = b.op("relu", {linear(b, x, 4096, "4")}, {}, "5.relu");
    x = linear(b, x, a.integer("classes"), "6");
  }
  classification_loss(b, x);
}

// torchvision's cfgs: output channels of each 3x3 convolution, 0 for a 2x2 max pool.
std::vector<std::int64_t> vgg_config(std::int64_t depth) {
  switch (depth) {
  case 11:  // A
    return {64, 0, 128, 0, 256, 256, 0, 512, 512, 0, 512, 512, 0};
  case 13:  // B
    return {64, 64, 0, 128, 128, 0, 256, 256, 0, 512, 512, 0, 512, 512, 0};
  case 16:  // D
    return {64, 64, 0, 128, 128, 0, 256, 256, 256, 0, 512, 512, 512, 0, 512, 512, 512, 0};
  case 19:  // E
    return {64,  64,  0,   128, 128, 0,   256, 256, 256, 256, 0,
            512, 512, 512, 512, 0,   512, 512, 512, 512, 0};
  }
  return {};
}

void build_vgg(ops::OpBuilder& b, ModelArgs const& a) {
  std::int64_t image = a.integer("image");
  auto config = vgg_config(a.integer("depth"));
  CLEAVE_ASSERT(!config.empty(), "the depth key is a choice of 11, 13, 16, 19");
  if (!check_adaptive_pool(b, "vgg", image, vgg_map, 7)) return;
  auto x = b.input("input", {a.integer("batch"), 3, image, image}, a.dtype());
  {
    auto s = b.scope("features");
    int index = 0;
    for (std::int64_t channels : config) {
      if (channels == 0) {
        x = max_pool(b, x, /*kernel=*/2, /*stride=*/2, /*pad=*/0,
                     std::to_string(index) + ".max_pool");
        index += 1;
      } else {
        x = conv_relu(b, x, channels, /*kernel=*/3, /*stride=*/1, /*pad=*/1, index);
        index += 2;
      }
    }
  }
  x = flatten(b, adaptive_avg_pool(b, x, 7), "flatten");
  {
    auto s = b.scope("classifier");
    x = b.op("relu", {linear(b, x, 4096, "0")}, {}, "1.relu");
    x = dropout(b, x, 0.5, "2");
    x = b.op("relu", {linear(b, x, 4096, "3")}, {}, "4.relu");
    x = dropout(b, x, 0.5, "5");
    x = linear(b, x, a.integer("classes"), "6");
  }
  classification_loss(b, x);
}

}  // namespace

void add_cnns(ModelZoo& zoo) {
  ModelDef alexnet;
  alexnet.name = "alexnet";
  alexnet.summary = "AlexNet as in torchvision: five convolutions (64-192-384-256-256) with max "
                    "pools, then a 4096-4096 classifier with dropout 0.5";
  alexnet.keys = {
      {"batch", KeyKind::integer, "256", "samples per step (FlexFlow's, per GPU)", 1, {}},
      {"classes", KeyKind::integer, "1000", "output classes", 2, {}},
      {"image",
       KeyKind::integer,
       "224",
       "side of the square input image; the last feature map must be a multiple of 6 (224: 6x6)",
       1,
       {}}};
  alexnet.build = build_alexnet;
  auto st = zoo.add(std::move(alexnet));
  CLEAVE_ASSERT(st.is_ok(), "duplicate model");

  ModelDef vgg;
  vgg.name = "vgg";
  vgg.summary = "VGG-11/13/16/19 as in torchvision (configurations A/B/D/E, no batch norm): 3x3 "
                "convolutions and max pools, then a 4096-4096 classifier with dropout 0.5";
  vgg.keys = {
      {"depth",
       KeyKind::choice,
       "16",
       "weight layers (A: 11, B: 13, D: 16, E: 19)",
       1,
       {"11", "13", "16", "19"}},
      {"batch", KeyKind::integer, "64", "samples per step (FlexFlow's batch per GPU)", 1, {}},
      {"classes", KeyKind::integer, "1000", "output classes", 2, {}},
      {"image",
       KeyKind::integer,
       "224",
       "side of the square input image; image/32 must be a multiple of 7 (224: 7x7)",
       1,
       {}}};
  vgg.build = build_vgg;
  st = zoo.add(std::move(vgg));
  CLEAVE_ASSERT(st.is_ok(), "duplicate model");
}

}  // namespace cleave::models
