// The CNN zoo models (alexnet, vgg, resnet, inception, wrn): parameter counts equal torchvision's
// (wrn: the closed form, WRN-28-10's published count and ParDNN's),
// key feature maps have the right shapes, op counts follow from the architectures, WResNet grows
// with width as Tofu's Table 2 does, and bad values are errors that list what is accepted.
#include <chrono>
#include <cstdio>
#include <gtest/gtest.h>
#include <map>

#include "models/model_zoo.h"
#include "models/zoo_test_util.h"

namespace cleave::models {
namespace {

using testing::parameters;

std::int64_t parameter_bytes(ir::Graph const& g) {
  std::int64_t n = 0;
  for (auto const& t : g.tensors())
    if (t.role == ir::TensorRole::weight)
      n += ir::num_elements(t.type.shape) * ir::dtype_bytes(t.type.dtype);
  return n;
}

std::map<std::string, int> op_types(ir::Graph const& g) {
  std::map<std::string, int> count;
  for (auto const& op : g.ops())
    ++count[op.type];
  return count;
}

class CnnModels : public ::testing::Test {
 protected:
  ir::Graph build(std::string const& spec) {
    auto g = zoo_.build(spec, *registry_);
    EXPECT_TRUE(g.has_value()) << spec << ": " << (g ? "" : g.error().to_string());
    if (!g) throw std::runtime_error("build failed: " + spec);
    return *std::move(g);
  }
  ir::Shape shape(ir::Graph const& g, std::string const& tensor) {
    auto id = g.find_tensor(tensor);
    EXPECT_TRUE(id.has_value()) << "no tensor " << tensor;
    return id ? g.tensor(*id).type.shape : ir::Shape{};
  }

  std::unique_ptr<ops::OpRegistry> registry_ = ops::OpRegistry::with_builtins();
  ModelZoo zoo_ = ModelZoo::with_builtins();
};

// torchvision's counts (sum of numel over parameters(); batch norm running statistics are
// buffers, not parameters).
TEST_F(CnnModels, ParameterCountsEqualTorchvision) {
  struct Case {
    char const* spec;
    std::int64_t params;
  } cases[] = {
      {"alexnet", 61'100'840},          {"vgg:depth=11", 132'863'336},
      {"vgg:depth=13", 133'047'848},    {"vgg", 138'357'544},
      {"vgg:depth=19", 143'667'240},    {"resnet:depth=18", 11'689'512},
      {"resnet:depth=34", 21'797'672},  {"resnet", 25'557'032},
      {"resnet:depth=101", 44'549'160}, {"resnet:depth=152", 60'192'808},
      {"inception", 23'834'568},        {"inception:version=4", 42'679'816},  // timm's
  };
  for (auto const& c : cases)
    EXPECT_EQ(parameters(build(c.spec)), c.params) << c.spec;
}

TEST_F(CnnModels, ClassesAndDtypeChangeTheHeadAndTheBytes) {
  // The classifier is the only layer that depends on classes: 2048 * 10 + 10 instead of
  // 2048 * 1000 + 1000.
  EXPECT_EQ(parameters(build("resnet:classes=10")), 25'557'032 - 2048 * 990 - 990);
  EXPECT_EQ(parameter_bytes(build("alexnet:dtype=fp16")), 2 * 61'100'840);
  EXPECT_EQ(parameter_bytes(build("alexnet")), 4 * 61'100'840);
}

TEST_F(CnnModels, FeatureMapShapes) {
  auto alexnet = build("alexnet");
  EXPECT_EQ(shape(alexnet, "features.12.max_pool"), (ir::Shape{256, 256, 6, 6}));
  EXPECT_EQ(shape(alexnet, "flatten"), (ir::Shape{256, 9216}));
  EXPECT_FALSE(alexnet.find_tensor("avgpool").has_value()) << "6x6 already: no pooling op";

  auto vgg = build("vgg");
  EXPECT_EQ(shape(vgg, "features.30.max_pool"), (ir::Shape{64, 512, 7, 7}));
  EXPECT_EQ(shape(vgg, "classifier.6.add_bias"), (ir::Shape{64, 1000}));

  auto resnet50 = build("resnet");
  EXPECT_EQ(shape(resnet50, "maxpool"), (ir::Shape{32, 64, 56, 56}));
  EXPECT_EQ(shape(resnet50, "layer1.2.relu"), (ir::Shape{32, 256, 56, 56}));
  EXPECT_EQ(shape(resnet50, "layer2.0.conv2.conv"), (ir::Shape{32, 128, 28, 28}))
      << "v1.5: the stride is on the 3x3";
  EXPECT_EQ(shape(resnet50, "layer4.2.relu"), (ir::Shape{32, 2048, 7, 7}));
  EXPECT_EQ(shape(resnet50, "flatten"), (ir::Shape{32, 2048}));

  auto resnet18 = build("resnet:depth=18,batch=4");
  EXPECT_EQ(shape(resnet18, "layer4.1.relu"), (ir::Shape{4, 512, 7, 7}));

  auto wide = build("resnet:depth=50,width=2,batch=2");
  EXPECT_EQ(shape(wide, "layer1.0.relu1"), (ir::Shape{2, 128, 56, 56}));
  EXPECT_EQ(shape(wide, "layer4.2.relu"), (ir::Shape{2, 4096, 7, 7}));

  auto inception = build("inception:batch=2");
  EXPECT_EQ(shape(inception, "maxpool2"), (ir::Shape{2, 192, 35, 35}));
  EXPECT_EQ(shape(inception, "Mixed_5d.concat"), (ir::Shape{2, 288, 35, 35}));
  EXPECT_EQ(shape(inception, "Mixed_6e.concat"), (ir::Shape{2, 768, 17, 17}));
  EXPECT_EQ(shape(inception, "Mixed_7c.concat"), (ir::Shape{2, 2048, 8, 8}));
  EXPECT_EQ(shape(inception, "flatten"), (ir::Shape{2, 2048}));

  auto v4 = build("inception:version=4,batch=2");
  EXPECT_EQ(shape(v4, "features.5.concat"), (ir::Shape{2, 384, 35, 35}));
  EXPECT_EQ(shape(v4, "features.10.concat"), (ir::Shape{2, 1024, 17, 17}));
  EXPECT_EQ(shape(v4, "features.17.concat"), (ir::Shape{2, 1024, 17, 17}));
  EXPECT_EQ(shape(v4, "features.21.concat"), (ir::Shape{2, 1536, 8, 8}));
  // Wide: every convolution's channels doubled, so every concat's too.
  auto wide_v4 = build("inception:version=4,width=2,batch=2");
  EXPECT_EQ(shape(wide_v4, "features.21.concat"), (ir::Shape{2, 3072, 8, 8}));
}

TEST_F(CnnModels, WeightNamesFollowTorchvision) {
  auto has = [](ir::Graph const& g, char const* name) {
    auto id = g.find_tensor(name);
    return id && g.tensor(*id).role == ir::TensorRole::weight;
  };
  auto alexnet = build("alexnet");
  EXPECT_TRUE(has(alexnet, "features.10.weight"));
  EXPECT_TRUE(has(alexnet, "classifier.6.bias"));
  auto vgg = build("vgg:depth=19");
  EXPECT_TRUE(has(vgg, "features.34.weight"));
  auto resnet = build("resnet:depth=101");
  EXPECT_TRUE(has(resnet, "bn1.bias"));
  EXPECT_TRUE(has(resnet, "layer3.22.conv3.weight"));
  EXPECT_TRUE(has(resnet, "layer2.0.downsample.0.weight"));
  EXPECT_TRUE(has(resnet, "layer2.0.downsample.1.weight"));
  EXPECT_TRUE(has(resnet, "fc.weight"));
  auto inception = build("inception");
  EXPECT_TRUE(has(inception, "Conv2d_1a_3x3.conv.weight"));
  EXPECT_TRUE(has(inception, "Mixed_7c.branch3x3dbl_3b.bn.bias"));
  EXPECT_FALSE(inception.find_tensor("AuxLogits.fc.weight").has_value());
  auto v4 = build("inception:version=4");  // timm's names
  EXPECT_TRUE(has(v4, "features.11.branch2.3.conv.weight"));
  EXPECT_TRUE(has(v4, "features.21.branch2_3b.bn.bias"));
  EXPECT_TRUE(has(v4, "last_linear.weight"));
}

// Op counts from the architectures: a convolution with bias is 2 ops (conv2d, add), a batch
// norm 3 (bn_mean, bn_var, bn_apply), a linear layer with bias 2, a dropout 1 (its mask is an
// input), the loss 1.
TEST_F(CnnModels, OpCountsFollowTheArchitecture) {
  // 5 x (conv, bias, relu) + 3 pools; flatten; 2 dropouts + 3 x (linear, bias) + 2 relus; loss.
  EXPECT_EQ(build("alexnet").num_ops(), 15u + 3 + 1 + 10 + 1);
  // VGG-16: 13 x (conv, bias, relu) + 5 pools; flatten; the same classifier; loss.
  EXPECT_EQ(build("vgg").num_ops(), 39u + 5 + 1 + 10 + 1);
  // Stem: conv, 3 bn, relu, max pool; a basic block: 2 x (conv + bn) + relu + add + relu = 11, a
  // bottleneck 3 x 4 + 2 relus + add + relu = 16; a projection shortcut 4 (stages 2-4, and stage
  // 1 of the bottleneck nets); head: global pool, flatten, linear, bias, loss.
  auto resnet_ops = [](std::size_t blocks, std::size_t per_block, std::size_t projections) {
    return 6 + blocks * per_block + 4 * projections + 5;
  };
  EXPECT_EQ(build("resnet:depth=18").num_ops(), resnet_ops(8, 11, 3));
  EXPECT_EQ(build("resnet:depth=34").num_ops(), resnet_ops(16, 11, 3));
  EXPECT_EQ(build("resnet").num_ops(), resnet_ops(16, 16, 4));
  EXPECT_EQ(build("resnet:depth=101").num_ops(), resnet_ops(33, 16, 4));
  EXPECT_EQ(build("resnet:depth=152").num_ops(), resnet_ops(50, 16, 4));
  EXPECT_EQ(build("resnet:depth=152,width=10").num_ops(), resnet_ops(50, 16, 4));

  // Inception-v3: 94 BasicConv2d (5 ops each), 4 max pools, 9 avg pools (blocks A, C, E),
  // 11 block concats + 4 inside blocks E; head: global pool, dropout, flatten, linear, bias, loss.
  auto inception = build("inception");
  auto types = op_types(inception);
  EXPECT_EQ(types["conv2d"], 94);
  EXPECT_EQ(types["bn_apply"], 94);
  EXPECT_EQ(types["max_pool2d"], 4);
  EXPECT_EQ(types["avg_pool2d"], 9);
  EXPECT_EQ(types["concat"], 15);
  EXPECT_EQ(inception.num_ops(), 94u * 5 + 4 + 9 + 15 + 6);

  // Inception-v4: 149 BasicConv2d (stem 11, 4 A x 7, reduction A 4, 7 B x 10, reduction B 6,
  // 3 C x 10), 4 max pools (stem 2, reductions 2), 14 avg pools (blocks A, B, C), 19 concats
  // (stem 3, one per block and reduction); head: global pool, flatten, linear, bias, loss.
  auto v4 = build("inception:version=4");
  types = op_types(v4);
  EXPECT_EQ(types["conv2d"], 149);
  EXPECT_EQ(types["max_pool2d"], 4);
  EXPECT_EQ(types["avg_pool2d"], 14);
  EXPECT_EQ(types["concat"], 19);
  EXPECT_EQ(v4.num_ops(), 149u * 5 + 4 + 14 + 19 + 5);
}

TEST_F(CnnModels, WideResnetGrowsWithWidth) {
  // Widening every stage makes nearly every weight grow with width^2 (the stem, the layers
  // that read its 64 channels and the classifier's 1000 rows grow less: 92-94% of width^2 times
  // ResNet-50's). Tofu's Table 2 WResNet-50 grows 4.2 -> 26.7 GB (x6.4) from width 4 to 10.
  std::int64_t previous = parameters(build("resnet:depth=50,batch=1"));
  for (int width : {2, 4, 6, 8, 10}) {
    std::int64_t p = parameters(build("resnet:depth=50,batch=1,width=" + std::to_string(width)));
    EXPECT_GT(p, previous);
    EXPECT_GT(p, 0.9 * width * width * 25'557'032) << width;
    EXPECT_LT(p, 1.0 * width * width * 25'557'032) << width;
    previous = p;
  }
  // Exact values (docs/zoo_cnn_notes.md has the whole table).
  EXPECT_EQ(parameters(build("resnet:depth=50,width=4,batch=1")), 383'296'808);
  EXPECT_EQ(parameters(build("resnet:depth=101,width=6,batch=1")), 1'538'190'120);
  EXPECT_EQ(parameters(build("resnet:depth=152,width=10,batch=1")), 5'818'457'896);
}

TEST_F(CnnModels, WResNet152Width10BuildsQuickly) {
  auto start = std::chrono::steady_clock::now();
  auto g = build("resnet:depth=152,width=10,batch=64");
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("resnet:depth=152,width=10,batch=64 built in %.3f s: %zu ops, %lld parameters\n",
              seconds, g.num_ops(), static_cast<long long>(parameters(g)));
  RecordProperty("build_seconds", std::to_string(seconds));
  EXPECT_LT(seconds, 2.0);
  EXPECT_EQ(shape(g, "layer4.2.relu"), (ir::Shape{64, 20480, 7, 7}));
}

// WRN-depth-width: a 3x3 stem to 16 channels; per group g of n = (depth - 4) / 6 blocks, width
// 16 x 2^g x width, two 3x3 convolutions and two batch norms per block, a 1x1 projection where
// the width changes; a final batch norm and the classifier.
std::int64_t wrn(std::int64_t depth, std::int64_t width, std::int64_t classes) {
  std::int64_t n = (depth - 4) / 6, p = 3 * 9 * 16, in = 16;
  for (std::int64_t g = 0; g < 3; ++g) {
    std::int64_t c = (16 << g) * width;
    p += (2 * in + 9 * in * c) + (2 * c + 9 * c * c);  // the first block
    p += (n - 1) * 2 * (2 * c + 9 * c * c);            // the others
    if (in != c) p += in * c;                          // its projection
    in = c;
  }
  return p + 2 * in + in * classes + classes;
}

// Wide ResNets: WRN-28-10's published 36.5M (36,479,194 in PyTorch implementations), ParDNN's WRN
// (610 layers, width 14: 1.91B) and WRN-2 (304, width 28: 3.77B); 11 ops per block (2 x (3 bn ops,
// relu, conv) + add), a 1x1 projection per group, stem 1, head 9.
TEST_F(CnnModels, WideResnetsOfParDnn) {
  EXPECT_EQ(parameters(build("wrn")), 36'479'194);
  EXPECT_EQ(parameters(build("wrn")), wrn(28, 10, 10));
  EXPECT_EQ(parameters(build("wrn:depth=16,width=4,classes=100")), wrn(16, 4, 100));
  auto big = build("wrn:depth=610,width=14");
  EXPECT_EQ(parameters(big), wrn(610, 14, 10));
  EXPECT_NEAR(static_cast<double>(parameters(big)), 1.91e9, 0.01e9);
  EXPECT_EQ(big.num_ops(), 1u + 303 * 11 + 3 + 9);
  EXPECT_NEAR(static_cast<double>(parameters(build("wrn:depth=304,width=28"))), 3.77e9, 0.01e9);
  EXPECT_EQ(shape(build("wrn:depth=10,width=2,batch=4"), "group3.0.residual"),
            (ir::Shape{4, 128, 8, 8}));
}

TEST_F(CnnModels, BadValuesListWhatIsAccepted) {
  testing::BadSpec const cases[] = {
      {"vgg:depth=12", "depth (default 16): weight layers (A: 11, B: 13, D: 16, E: 19); one of 11 "
                       "13 16 19"},
      {"resnet:depth=20", "depth=20 is not accepted; accepted keys:"},
      {"resnet:depth=20", "one of 18 34 50 101 152"},
      {"resnet:width=0", "width=0 is below the smallest accepted value 1"},
      {"resnet:width=5000", "accepted widths are 1 to 1024"},
      {"inception:version=5", "one of 3 4"},
      {"inception:width=2", "width=2 widens only version 4"},
      {"inception:image=74", "accepted images are 75 or larger"},
      {"alexnet:image=256", "image=256 gives a 7x7 feature map"},
      {"alexnet:image=256", "accepted images include 223-254 (6x6), 415-446 (12x12)"},
      {"vgg:image=100", "accepted images include 224-255 (7x7), 448-479 (14x14)"},
      {"alexnet:depth=8", "model 'alexnet' has no key 'depth'"},
      {"wrn:depth=30", "depth=30, width=10: depth must be 6n + 4 with n >= 1"},
      {"wrn:depth=4", "depth=4 is below the smallest accepted value 10"},
  };
  testing::expect_errors(zoo_, *registry_, cases);
}

TEST_F(CnnModels, OtherImageSizes) {
  // 227 (the AlexNet paper's size) also ends in 6x6; 416 pools a 12x12 map to 6x6.
  EXPECT_EQ(shape(build("alexnet:image=227,batch=1"), "flatten"), (ir::Shape{1, 9216}));
  auto big = build("alexnet:image=416,batch=1");
  EXPECT_EQ(shape(big, "avgpool"), (ir::Shape{1, 256, 6, 6}));
  EXPECT_EQ(parameters(big), 61'100'840);
  EXPECT_EQ(shape(build("vgg:image=448,batch=1"), "avgpool"), (ir::Shape{1, 512, 7, 7}));
  EXPECT_EQ(shape(build("resnet:image=32,batch=1"), "layer4.2.relu"), (ir::Shape{1, 2048, 1, 1}));
  EXPECT_EQ(shape(build("inception:image=75,batch=1"), "Mixed_7c.concat"),
            (ir::Shape{1, 2048, 1, 1}));
  EXPECT_EQ(shape(build("inception:version=4,image=75,batch=1"), "features.21.concat"),
            (ir::Shape{1, 1536, 1, 1}));
}

// Every model at its defaults: forward ops, parameters and parameter bytes, printed for the zoo
// notes (docs/zoo_cnn_notes.md) and recorded as test properties.
TEST_F(CnnModels, DefaultsSummary) {
  for (char const* spec : {"alexnet", "vgg", "resnet", "inception", "resnet:depth=152,width=10"}) {
    auto g = build(spec);
    auto canonical = zoo_.resolve(*parse_model_spec(spec))->canonical();
    std::printf("%-70s %5zu ops %13lld parameters %14lld bytes\n", canonical.c_str(), g.num_ops(),
                static_cast<long long>(parameters(g)), static_cast<long long>(parameter_bytes(g)));
    RecordProperty(std::string(spec) + ".ops", static_cast<int>(g.num_ops()));
    auto loss = g.find_tensor("loss");
    ASSERT_TRUE(loss.has_value()) << spec;
    EXPECT_TRUE(g.tensor(*loss).type.shape.empty()) << spec;
  }
}

}  // namespace
}  // namespace cleave::models
