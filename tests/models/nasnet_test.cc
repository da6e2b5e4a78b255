// nasnet (NASNet-A): parameter counts equal the published ones (timm's and Keras's trainable
// counts of NASNet-A Large and Mobile, the paper's 88.9M and 5.3M), feature maps have TF-slim's
// shapes, windows use TensorFlow's SAME padding (asymmetric at stride 2 over an even side), the
// average pools exclude padding, op counts follow from the cells, and bad values are errors.
#include <gtest/gtest.h>
#include <map>

#include "models/model_zoo.h"
#include "models/zoo_test_util.h"

namespace cleave::models {
namespace {

using testing::parameters;
using Ints = std::vector<std::int64_t>;

class NasNetModel : public ::testing::Test {
 protected:
  ir::Graph build(std::string const& spec) {
    auto g = zoo_.build(spec, *registry_);
    EXPECT_TRUE(g.has_value()) << spec << ": " << (g ? "" : g.error().to_string());
    if (!g) throw std::runtime_error("build failed: " + spec);
    return *std::move(g);
  }
  static ir::Shape shape(ir::Graph const& g, std::string const& tensor) {
    auto id = g.find_tensor(tensor);
    EXPECT_TRUE(id.has_value()) << "no tensor " << tensor;
    return id ? g.tensor(*id).type.shape : ir::Shape{};
  }
  static ir::Attrs op_attrs(ir::Graph const& g, std::string const& name) {
    auto id = g.find_op(name);
    EXPECT_TRUE(id.has_value()) << "no op " << name;
    return id ? g.op(*id).attrs : ir::Attrs{};
  }

  std::unique_ptr<ops::OpRegistry> registry_ = ops::OpRegistry::with_builtins();
  ModelZoo zoo_ = ModelZoo::with_builtins();
};

// timm's `nasnetalarge` has 88,753,150 parameters; Keras's NASNetLarge and NASNetMobile report
// 88,753,150 and 5,289,978 trainable ones (their totals, 88,949,818 and 5,326,716, add batch
// norm's running statistics). The paper rounds them to 88.9M and 5.3M (its Table 2).
TEST_F(NasNetModel, ParameterCountsEqualThePublishedOnes) {
  EXPECT_EQ(parameters(build("nasnet:batch=1")), 88'753'150);
  EXPECT_EQ(parameters(build("nasnet:cells=4,filters=1056,stem=32,image=224,batch=1")), 5'289'978);
}

TEST_F(NasNetModel, FeatureMapsHaveTfSlimsShapes) {
  auto g = build("nasnet:batch=2");
  EXPECT_EQ(shape(g, "conv0.bn.normalize"), (ir::Shape{2, 96, 165, 165}));
  EXPECT_EQ(shape(g, "cell_stem_0.concat"), (ir::Shape{2, 168, 83, 83}));
  EXPECT_EQ(shape(g, "cell_stem_1.concat"), (ir::Shape{2, 336, 42, 42}));
  EXPECT_EQ(shape(g, "cell_0.final_path_bn.normalize"), (ir::Shape{2, 168, 42, 42}));
  EXPECT_EQ(shape(g, "cell_5.concat"), (ir::Shape{2, 1008, 42, 42}));
  EXPECT_EQ(shape(g, "reduction_cell_0.concat"), (ir::Shape{2, 1344, 21, 21}));
  EXPECT_EQ(shape(g, "cell_11.concat"), (ir::Shape{2, 2016, 21, 21}));
  EXPECT_EQ(shape(g, "reduction_cell_1.concat"), (ir::Shape{2, 2688, 11, 11}));
  EXPECT_EQ(shape(g, "cell_17.concat"), (ir::Shape{2, 4032, 11, 11}));
  EXPECT_EQ(shape(g, "flatten"), (ir::Shape{2, 4032}));
  // Mobile at 224: 111, 56, 28, 14, 7.
  auto mobile = build("nasnet:cells=4,filters=1056,stem=32,image=224,batch=1");
  EXPECT_EQ(shape(mobile, "cell_stem_1.concat"), (ir::Shape{1, 88, 28, 28}));
  EXPECT_EQ(shape(mobile, "cell_11.concat"), (ir::Shape{1, 1056, 7, 7}));
}

TEST_F(NasNetModel, WindowsUseSamePaddingAndPoolsExcludeIt) {
  auto g = build("nasnet:batch=1");
  auto padding = [&](std::string const& name) { return op_attrs(g, name).get_ints("padding", {}); };
  // reduction_cell_0 halves 42: SAME puts the odd row after (5x5: 1 + 2; 3x3 pools: 0 + 1).
  EXPECT_EQ(padding("reduction_cell_0.comb_iter_0_left.separable_1.depthwise_conv2d.conv"),
            (Ints{1, 1, 2, 2}));
  EXPECT_EQ(padding("reduction_cell_0.comb_iter_0_right.separable_1.depthwise_conv2d.conv"),
            (Ints{2, 2, 3, 3}));
  EXPECT_EQ(padding("reduction_cell_0.comb_iter_1_left"), (Ints{0, 0, 1, 1}));
  EXPECT_EQ(padding("reduction_cell_0.comb_iter_2_left"), (Ints{0, 0, 1, 1}));
  // The unstrided second separable keeps the symmetric 2-value form; 83 and 21 are odd sides.
  EXPECT_EQ(padding("reduction_cell_0.comb_iter_0_left.separable_2.depthwise_conv2d.conv"),
            (Ints{2, 2}));
  EXPECT_EQ(padding("cell_stem_1.comb_iter_0_right.separable_1.depthwise_conv2d.conv"),
            (Ints{3, 3}));
  EXPECT_EQ(padding("reduction_cell_1.comb_iter_1_left"), (Ints{1, 1, 1, 1}));
  EXPECT_EQ(op_attrs(g, "cell_3.comb_iter_3_left").get_int("count_include_pad", 1), 0);
  EXPECT_EQ(op_attrs(g, "reduction_cell_1.comb_iter_2_left").get_int("count_include_pad", 1), 0);
  // A depthwise convolution has one group per channel.
  EXPECT_EQ(
      op_attrs(g, "cell_9.comb_iter_4_left.separable_1.depthwise_conv2d.conv").get_int("groups", 1),
      336);
  // The factorized reduction's shifted path: the side grows by the pad and shrinks by the crop.
  EXPECT_EQ(shape(g, "cell_0.path_2.pad"), (ir::Shape{1, 168, 84, 84}));
  EXPECT_EQ(shape(g, "cell_0.path_2.crop"), (ir::Shape{1, 168, 83, 83}));
  EXPECT_EQ(shape(g, "cell_0.path_2.avgpool"), (ir::Shape{1, 168, 42, 42}));
}

TEST_F(NasNetModel, OpCountsFollowTheCells) {
  // act-conv-bn 5 ops (relu, conv, 3 batch norm); a separable branch 12 (2 x (relu, depthwise,
  // pointwise, 3 bn)); a factorized reduction 11 (relu; pool + conv; pad + crop + pool + conv;
  // concat; 3 bn). Normal cell: 1x1 (5) + previous (5, or 11 in a stage's first cell) + 5
  // branches + 3 avg pools + 5 adds + concat = 79 (85); reduction cell: 2 x 5 + 5 branches +
  // 4 pools + 5 adds + concat = 80; stem cell 0: 5 + 70 = 75, stem cell 1: 5 + 11 + 70 = 86;
  // conv0 with its bn 4; head: relu, global pool, flatten, linear, bias, loss = 6.
  auto expected = [](std::size_t n) { return 4 + 75 + 86 + 3 * (79 * n + 6) + 2 * 80 + 6; };
  EXPECT_EQ(build("nasnet:batch=1").num_ops(), expected(6));
  EXPECT_EQ(build("nasnet:cells=1,batch=1").num_ops(), expected(1));
  std::map<std::string, int> types;
  auto const graph = build("nasnet:batch=1");  // held: a temporary's ops() would dangle
  for (auto const& o : graph.ops())
    ++types[o.type];
  // 22 cells (2 stem, 18 normal, 2 reduction) x 5 branches x 2 separables x 2 convolutions;
  // 1x1s: stem cells 1 and 1 + 2 (factorized), reduction cells 2, normal cells 2 or, in the 3
  // that factorize, 1 + 2; conv0.
  EXPECT_EQ(types["conv2d"], 22 * 5 * 4 + 1 + 3 + 2 * 2 + 15 * 2 + 3 * 3 + 1);
  // Pools: 2 max and 2 avg in each of the 4 reduction-type cells, 3 avg per normal cell, 2 (1x1)
  // per factorized reduction (cell_stem_1 and each stage's first cell).
  EXPECT_EQ(types["max_pool2d"], 4 * 2);
  EXPECT_EQ(types["avg_pool2d"], 18 * 3 + 4 * 2 + 4 * 2);
  EXPECT_EQ(types["pad"], 4);
  EXPECT_EQ(types["slice"], 4);
}

TEST_F(NasNetModel, BadValuesListWhatIsAccepted) {
  testing::BadSpec const cases[] = {
      {"nasnet:filters=1000", "must be a multiple of 96"},
      {"nasnet:filters=48", "below the smallest accepted value 96"},
      {"nasnet:image=18", "accepted images are 19 or larger"},
      {"nasnet:cells=0", "below the smallest accepted value 1"},
  };
  testing::expect_errors(zoo_, *registry_, cases);
}

TEST_F(NasNetModel, SmallestImageBuilds) {
  auto g = build("nasnet:cells=1,filters=96,stem=8,image=19,batch=1");
  EXPECT_EQ(shape(g, "cell_2.concat"), (ir::Shape{1, 96, 1, 1}));
  auto loss = g.find_tensor("loss");
  ASSERT_TRUE(loss.has_value());
  EXPECT_TRUE(g.tensor(*loss).type.shape.empty());
}

}  // namespace
}  // namespace cleave::models
