// The test that proves partitioning right: every algorithm's plan (search/search.h's table) for
// small configurations of every zoo model, on cpu clusters of 1, 2, 4 and 8 devices, runs on the
// runtime and matches the unpartitioned graph run on one device within the check's tolerance.
//
// The CNNs' channel counts are fixed (64 and up; ResNet's width key only widens) and AlexNet's,
// VGG's and Inception's adaptive pools bound the image from below (AlexNet >= 195, VGG >= 224,
// Inception >= 75), so even their smallest zoo configurations cost the reference interpreter
// tens of seconds a step (ResNet-18 on 16x16 images: 23 s): too slow for a unit test until the
// oneDNN kernels run them. They are stood in for by tiny graphs built from the same layers
// (models/layers.h): AlexNet's strided convolution, max pools, dropout and classifier; VGG's
// stacks of 3x3 convolutions; ResNet's basic blocks with batch norm and a strided 1x1 shortcut;
// Inception's parallel branches joined by concat; NASNet's separable convolution, pools with
// asymmetric SAME padding and factorized reduction (its smallest zoo configuration is as slow,
// and ill-conditioned: batch norm over 1-channel maps). mlp, rnn, nmt, gpt and bert are the zoo's.
//
// The sanitizer builds (ASan+UBSan, TSan; CI's Debug pass) run a subset: every model and
// algorithm on 2 and 4 devices (the full matrix there would pass CI's time).
#include <gtest/gtest.h>

#include "models/layers.h"
#include "runtime_test_util.h"

namespace cleave::runtime {
namespace {

using namespace testing;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr int device_counts[] = {2, 4};
#else
constexpr int device_counts[] = {1, 2, 4, 8};
#endif

ir::Graph alexnet_like(ops::OpRegistry const& r) {
  ops::OpBuilder b(r);
  auto x = b.input("input", {4, 3, 12, 12});
  models::Conv c1{.out_channels = 4,
                  .kernel_h = 5,
                  .kernel_w = 5,
                  .stride_h = 2,
                  .stride_w = 2,
                  .pad_h = 2,
                  .pad_w = 2,
                  .bias = true};
  x = b.op("relu", {models::conv2d(b, x, c1, "features.0")}, {}, "features.1");
  x = models::max_pool(b, x, 3, 2, 0, "features.2");
  models::Conv c2{
      .out_channels = 6, .kernel_h = 3, .kernel_w = 3, .pad_h = 1, .pad_w = 1, .bias = true};
  x = b.op("relu", {models::conv2d(b, x, c2, "features.3")}, {}, "features.4");
  x = models::flatten(b, x, "flatten");
  x = models::dropout(b, x, 0.5, "classifier.0");
  x = b.op("relu", {models::linear(b, x, 8, "classifier.1")}, {}, "classifier.2");
  models::classification_loss(b, models::linear(b, x, 3, "classifier.3"));
  return *b.finish();
}

ir::Graph vgg_like(ops::OpRegistry const& r) {
  ops::OpBuilder b(r);
  auto x = b.input("input", {4, 3, 8, 8});
  int index = 0;
  for (std::int64_t channels : {4, 4, 6}) {
    models::Conv c{.out_channels = channels,
                   .kernel_h = 3,
                   .kernel_w = 3,
                   .pad_h = 1,
                   .pad_w = 1,
                   .bias = true};
    auto name = "features." + std::to_string(index++);
    x = b.op("relu", {models::conv2d(b, x, c, name)}, {}, name + ".relu");
    if (channels != 4 || index == 2) x = models::max_pool(b, x, 2, 2, 0, name + ".pool");
  }
  x = models::flatten(b, x, "flatten");
  x = b.op("relu", {models::linear(b, x, 8, "classifier.0")}, {}, "classifier.1");
  models::classification_loss(b, models::linear(b, x, 3, "classifier.2"));
  return *b.finish();
}

ir::Graph inception_like(ops::OpRegistry const& r) {
  ops::OpBuilder b(r);
  auto x = b.input("input", {4, 3, 6, 6});
  auto conv_bn = [&](ir::TensorId in, std::int64_t out, std::int64_t k, std::string const& name) {
    models::Conv c{
        .out_channels = out, .kernel_h = k, .kernel_w = k, .pad_h = k / 2, .pad_w = k / 2};
    return b.op("relu", {models::batch_norm(b, models::conv2d(b, in, c, name), name + ".bn", 1e-3)},
                {}, name + ".relu");
  };
  auto stem = conv_bn(x, 4, 3, "stem");
  auto b1 = conv_bn(stem, 2, 1, "branch1x1");
  auto b3 = conv_bn(conv_bn(stem, 2, 1, "branch3x3_1"), 3, 3, "branch3x3_2");
  auto pool = conv_bn(models::avg_pool(b, stem, 3, 1, 1, "branch_pool.avg"), 2, 1, "branch_pool");
  auto joined = b.op("concat", {b1, b3, pool}, {{"axis", std::int64_t{1}}}, "concat");
  x = models::avg_pool(b, joined, 6, 6, 0, "avgpool");
  models::classification_loss(b, models::linear(b, models::flatten(b, x, "flatten"), 3, "fc"));
  return *b.finish();
}

// The pieces of NASNet's reduction cell (models/nasnet.cc) over an 8x8 map halved to 4x4: a
// depthwise-separable convolution and max and average pools with TensorFlow's SAME padding at
// stride 2 (asymmetric: the odd pad after; the average excludes it from its divisor), and the
// factorized reduction's shifted path (pad, crop, 1x1 pool at stride 2).
ir::Graph nasnet_like(ops::OpRegistry const& r) {
  using Ints = std::vector<std::int64_t>;
  ops::OpBuilder b(r);
  auto x = b.op("relu", {b.input("input", {4, 3, 8, 8})}, {}, "act");
  models::Conv depthwise{.out_channels = 3,
                         .kernel_h = 3,
                         .kernel_w = 3,
                         .stride_h = 2,
                         .stride_w = 2,
                         .pad_after = std::array<std::int64_t, 2>{1, 1},
                         .groups = 3};
  auto sep = models::conv2d(b, models::conv2d(b, x, depthwise, "sep.depthwise"),
                            models::Conv{.out_channels = 4}, "sep.pointwise");
  sep = models::batch_norm(b, sep, "sep.bn", 1e-3);
  ir::Attrs same{{"kernel", Ints{3, 3}}, {"stride", Ints{2, 2}}, {"padding", Ints{0, 0, 1, 1}}};
  auto max = b.op("max_pool2d", {x}, same, "max_pool");
  same.set("count_include_pad", std::int64_t{0});
  auto pools = b.op("add", {max, b.op("avg_pool2d", {x}, same, "avg_pool")}, {}, "pools");
  auto shifted = b.op("pad", {x}, {{"pads", Ints{0, 0, 0, 0, 0, 0, 1, 1}}}, "shift.pad");
  shifted =
      b.op("slice", {shifted}, {{"starts", Ints{1, 1}}, {"ends", Ints{9, 9}}, {"axes", Ints{2, 3}}},
           "shift.crop");
  shifted =
      b.op("avg_pool2d", {shifted},
           {{"kernel", Ints{1, 1}}, {"stride", Ints{2, 2}}, {"count_include_pad", std::int64_t{0}}},
           "shift.avgpool");
  auto joined = b.op("concat", {sep, pools, shifted}, {{"axis", std::int64_t{1}}}, "concat");
  x = models::avg_pool(b, joined, 4, 4, 0, "avgpool");
  models::classification_loss(b, models::linear(b, models::flatten(b, x, "flatten"), 3, "fc"));
  return *b.finish();
}

ir::Graph resnet_like(ops::OpRegistry const& r) {
  ops::OpBuilder b(r);
  auto x = b.input("input", {2, 3, 8, 8});
  auto conv_bn = [&](ir::TensorId in, std::int64_t out, std::int64_t k, std::int64_t stride,
                     std::string const& name) {
    models::Conv c{.out_channels = out,
                   .kernel_h = k,
                   .kernel_w = k,
                   .stride_h = stride,
                   .stride_w = stride,
                   .pad_h = k / 2,
                   .pad_w = k / 2};
    return models::batch_norm(b, models::conv2d(b, in, c, name), name + ".bn");
  };
  x = b.op("relu", {conv_bn(x, 4, 3, 1, "conv1")}, {}, "relu");
  // A basic block keeping the shape, then one halving the map with a 1x1 strided shortcut.
  auto y = b.op("relu", {conv_bn(x, 4, 3, 1, "layer1.0.conv1")}, {}, "layer1.0.relu1");
  y = b.op("add", {conv_bn(y, 4, 3, 1, "layer1.0.conv2"), x}, {}, "layer1.0.add");
  x = b.op("relu", {y}, {}, "layer1.0.relu2");
  y = b.op("relu", {conv_bn(x, 6, 3, 2, "layer2.0.conv1")}, {}, "layer2.0.relu1");
  y = b.op("add", {conv_bn(y, 6, 3, 1, "layer2.0.conv2"), conv_bn(x, 6, 1, 2, "layer2.0.down")}, {},
           "layer2.0.add");
  x = b.op("relu", {y}, {}, "layer2.0.relu2");
  x = models::avg_pool(b, x, 4, 4, 0, "avgpool");
  models::classification_loss(b, models::linear(b, models::flatten(b, x, "flatten"), 3, "fc"));
  return *b.finish();
}

struct ModelCase {
  std::string name;  // the zoo model it stands for
  std::string spec;  // zoo spec; empty: a stand-in
  std::int64_t batch = 0;
};

// The test's name in ctest's list: the model, not the struct's bytes.
void PrintTo(ModelCase const& m, std::ostream* os) {
  *os << m.name;
}

ir::Graph forward_graph(ModelCase const& m, ops::OpRegistry const& r) {
  if (!m.spec.empty()) return *models::ModelZoo::with_builtins().build(m.spec, r);
  if (m.name == "alexnet") return alexnet_like(r);
  if (m.name == "vgg") return vgg_like(r);
  if (m.name == "resnet") return resnet_like(r);
  if (m.name == "nasnet") return nasnet_like(r);
  return inception_like(r);
}

class Matrix : public ::testing::TestWithParam<ModelCase> {};

TEST_P(Matrix, EveryAlgorithmOnEveryClusterMatchesTheUnpartitionedGraph) {
  auto const& m = GetParam();
  auto registry = ops::OpRegistry::with_builtins();
  auto forward = forward_graph(m, *registry);
  auto g = autodiff::build_training_graph(forward, *registry);
  ASSERT_TRUE(g.has_value()) << g.error().to_string();
  auto tensors = checked_tensors(*g, "loss");
  TrainingConfig config;
  config.exec.capture = tensors;
  config.exec.threads_per_device = 1;
  InProcessBackend backend;
  config.exec.backend = &backend;
  // The reference: the undivided plan on one device, once for every plan below.
  auto single = plan::single_device_plan(*g, *registry);
  auto reference_cluster = *cluster::load_cluster("cpu:devices=1");
  auto reference = executor_for(*g, single, *registry, reference_cluster);
  ASSERT_TRUE(reference.has_value()) << reference.error().to_string();
  auto ref = run_training(*reference, config);
  ASSERT_TRUE(ref.has_value()) << ref.error().to_string();
  int runs = 0;
  for (int devices : device_counts) {
    std::string spec = "cpu:devices=" + std::to_string(devices);
    auto cluster = *cluster::load_cluster(spec);
    for (auto const& algo : search::algorithms()) {
      std::string where = m.name + " " + algo + " on " + spec;
      auto p = make_plan(*g, *registry, cluster, spec, algo, m.batch);
      ASSERT_TRUE(p.has_value()) << where << ": " << p.error().to_string();
      auto exec = executor_for(*g, *p, *registry, cluster);
      ASSERT_TRUE(exec.has_value()) << where << ": " << exec.error().to_string();
      auto run = run_training(*exec, config);
      ASSERT_TRUE(run.has_value()) << where << ": " << run.error().to_string();
      auto report = compare(*g, tensors, run->last, ref->last, default_tolerance);
      ASSERT_TRUE(report.has_value()) << where << ": " << report.error().to_string();
      for (auto const& t : report->tensors)
        if (t.tensor == report->worst && !report->passed)
          std::cerr << t.tensor << " abs " << t.max_abs_error << " ref " << t.max_abs_reference
                    << "\n";
      EXPECT_TRUE(report->passed) << where << ": max relative error " << report->max_relative_error
                                  << " in " << report->worst;
      ++runs;
    }
  }
  EXPECT_EQ(runs, static_cast<int>(std::size(device_counts) * search::algorithms().size()));
}

INSTANTIATE_TEST_SUITE_P(
    Zoo, Matrix,
    ::testing::Values(ModelCase{"mlp", "mlp:layers=2,hidden=8,input=6,classes=3,batch=8", 8},
                      ModelCase{"alexnet", "", 4}, ModelCase{"vgg", "", 4},
                      ModelCase{"resnet", "", 2}, ModelCase{"inception", "", 4},
                      ModelCase{"nasnet", "", 4},
                      ModelCase{"rnn", "rnn:layers=1,hidden=6,steps=3,batch=4,vocab=7", 4},
                      ModelCase{"nmt", "nmt:layers=1,hidden=6,steps=2,vocab=7,batch=4", 4},
                      ModelCase{"gpt", "gpt:layers=1,hidden=8,heads=2,seq=4,vocab=7,batch=2", 2},
                      ModelCase{"bert", "bert:layers=1,hidden=8,heads=2,seq=4,vocab=7,batch=2", 2}),
    [](auto const& info) { return info.param.name; });

}  // namespace
}  // namespace cleave::runtime
