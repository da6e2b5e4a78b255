#include <filesystem>
#include <fstream>
#include <limits>
#include <gtest/gtest.h>

#include "ir/graph_builder.h"
#include "ops/op_registry.h"
#include "ops/split.h"
#include "tdl/piece.h"

namespace cleave::ops {
namespace {

ir::TensorType f32(ir::Shape s) {
  return {std::move(s), ir::DType::fp32};
}
using Ints = std::vector<std::int64_t>;

ir::Attrs with_shape(ir::Attrs a, std::string const& key, Ints v) {
  a.set(key, std::move(v));
  return a;
}

class Registry : public ::testing::Test {
 protected:
  std::unique_ptr<OpRegistry> registry_ = OpRegistry::with_builtins();

  ir::Shape out_shape(std::string const& type, std::vector<ir::TensorType> in,
                      ir::Attrs attrs = {}) {
    auto out = registry_->infer(type, attrs, in);
    EXPECT_TRUE(out.has_value()) << (out ? "" : out.error().to_string());
    return out ? out->at(0).shape : ir::Shape{};
  }

  Error error_of(std::string const& type, std::vector<ir::TensorType> in, ir::Attrs attrs = {}) {
    auto out = registry_->infer(type, attrs, in);
    EXPECT_FALSE(out.has_value()) << type;
    return out ? Error(ErrorCode::invalid_argument, "") : out.error();
  }
};

TEST_F(Registry, EveryIssueOpIsBuiltIn) {
  auto names = registry_->names();
  for (char const* op : {"matmul",
                         "batch_matmul",
                         "linear",
                         "conv2d",
                         "max_pool2d",
                         "avg_pool2d",
                         "global_avg_pool",
                         "global_max_pool",
                         "bn_mean",
                         "bn_var",
                         "bn_apply",
                         "layer_norm",
                         "relu",
                         "gelu",
                         "tanh",
                         "sigmoid",
                         "add",
                         "sub",
                         "mul",
                         "div",
                         "softmax",
                         "embedding",
                         "concat",
                         "slice",
                         "transpose",
                         "reshape",
                         "dropout",
                         "cross_entropy"})
    EXPECT_TRUE(registry_->find(op)) << op;
}

// conv3d: the output size per axis, 2*N*CO*CI*KD*KH*KW*OD*OH*OW FLOPs (a multiply and an add per
// tap, as conv2d), the same count for its two gradients (stride 1), every axis but the kernel's
// splittable, and a split's pieces summing to the whole op's FLOPs.
TEST_F(Registry, Conv3dShapesFlopsAndSplits) {
  // E3D-LSTM's gate convolution: kernel 2x5x5, "same" padding (0 before and 1 after in depth).
  ir::Attrs same{{"padding", Ints{0, 2, 2, 1, 2, 2}}};
  std::vector<ir::TensorType> in = {f32({2, 16, 2, 16, 16}), f32({64, 16, 2, 5, 5})};
  EXPECT_EQ(out_shape("conv3d", in, same), (ir::Shape{2, 64, 2, 16, 16}));
  EXPECT_EQ(out_shape("conv3d", in, {{"stride", Ints{2, 1, 2}}}), (ir::Shape{2, 64, 1, 12, 6}));
  double want = 2.0 * 2 * 64 * 16 * (2 * 5 * 5) * (2 * 16 * 16);
  auto op = registry_->bind("conv3d", same, in);
  ASSERT_TRUE(op.has_value()) << op.error().to_string();
  auto whole = tdl::analyze_piece(**op, tdl::full_box(**op));
  ASSERT_TRUE(whole.has_value());
  EXPECT_DOUBLE_EQ(whole->flops.value(), want);
  auto dx =
      registry_->bind("conv3d_grad_input", with_shape(same, "input_shape", {2, 16, 2, 16, 16}),
                      std::vector{f32({2, 64, 2, 16, 16}), in[1]});
  ASSERT_TRUE(dx.has_value()) << dx.error().to_string();
  EXPECT_DOUBLE_EQ(tdl::analyze_piece(**dx, tdl::full_box(**dx))->flops.value(), want);
  auto dw = registry_->bind("conv3d_grad_weight", with_shape(same, "kernel", {2, 5, 5}),
                            std::vector{f32({2, 64, 2, 16, 16}), in[0]});
  ASSERT_TRUE(dw.has_value()) << dw.error().to_string();
  EXPECT_DOUBLE_EQ(tdl::analyze_piece(**dw, tdl::full_box(**dw))->flops.value(), want);

  auto const& dims = (*op)->dims();
  for (std::size_t d = 0; d < dims.size(); ++d) {
    SCOPED_TRACE(dims[d].name);
    EXPECT_TRUE(dims[d].splittable);  // n, co, z, y, x, ci, dz, dy, dx: none of extent 1
    double sum = 0;
    for (auto const& box : tdl::split_evenly(tdl::full_box(**op), static_cast<int>(d), 2)) {
      auto piece = tdl::analyze_piece(**op, box);
      ASSERT_TRUE(piece.has_value());
      EXPECT_EQ(piece->partial, d >= 5);  // ci and the taps are reductions
      sum += piece->flops.value();
    }
    EXPECT_DOUBLE_EQ(sum, want);
  }
  auto rank = error_of("conv3d", {f32({1, 3, 8, 8}), f32({4, 3, 3, 3})});
  EXPECT_NE(rank.message().find("conv3d"), std::string::npos) << rank.message();
  auto pads = error_of("conv3d", in, {{"padding", Ints{1, 1}}});
  EXPECT_NE(pads.message().find("padding takes 3 (d, h, w) or 6"), std::string::npos)
      << pads.message();
}

TEST_F(Registry, OutputShapesFollowTheFrameworks) {
  // ResNet stem: 7x7/2 pad 3 on 224 -> 112; 3x3/2 max pool pad 1 -> 56.
  EXPECT_EQ(out_shape("conv2d", {f32({1, 3, 224, 224}), f32({64, 3, 7, 7})},
                      {{"stride", Ints{2, 2}}, {"padding", Ints{3, 3}}}),
            (ir::Shape{1, 64, 112, 112}));
  EXPECT_EQ(out_shape("max_pool2d", {f32({1, 64, 112, 112})},
                      {{"kernel", Ints{3, 3}}, {"stride", Ints{2, 2}}, {"padding", Ints{1, 1}}}),
            (ir::Shape{1, 64, 56, 56}));
  // ceil_mode: 5 wide, kernel 2, stride 2 -> 3 (floor gives 2).
  EXPECT_EQ(out_shape("max_pool2d", {f32({1, 1, 5, 5})},
                      {{"kernel", Ints{2, 2}}, {"ceil_mode", std::int64_t{1}}}),
            (ir::Shape{1, 1, 3, 3}));
  // Dilation 2 on a 3x3 kernel covers 5x5.
  EXPECT_EQ(out_shape("conv2d", {f32({1, 2, 9, 9}), f32({4, 2, 3, 3})}, {{"dilation", Ints{2, 2}}}),
            (ir::Shape{1, 4, 5, 5}));
  EXPECT_EQ(out_shape("add", {f32({4, 1, 8}), f32({3, 1})}), (ir::Shape{4, 3, 8}));
  EXPECT_EQ(out_shape("reshape", {f32({2, 3, 4})}, {{"shape", Ints{0, -1}}}), (ir::Shape{2, 12}));
  EXPECT_EQ(out_shape("slice", {f32({8, 10})},
                      {{"starts", Ints{-4}}, {"ends", Ints{100}}, {"axes", Ints{1}}}),
            (ir::Shape{8, 4}));
  EXPECT_EQ(
      out_shape("concat", {f32({2, 3}), f32({2, 5}), f32({2, 1})}, {{"axis", std::int64_t{-1}}}),
      (ir::Shape{2, 9}));
  EXPECT_EQ(out_shape("global_avg_pool", {f32({8, 64, 7, 7})}), (ir::Shape{8, 64, 1, 1}));
  EXPECT_EQ(out_shape("embedding", {f32({100, 16}), {{4, 7}, ir::DType::int32}}),
            (ir::Shape{4, 7, 16}));
  EXPECT_EQ(out_shape("cross_entropy", {f32({4, 10}), {{4}, ir::DType::int64}}), ir::Shape{});
  auto int_relu =
      registry_->infer("relu", {}, std::vector<ir::TensorType>{{{3}, ir::DType::int32}});
  ASSERT_TRUE(int_relu.has_value());
  EXPECT_EQ(int_relu->at(0).dtype, ir::DType::int32);
  auto cast = registry_->infer("cast", {{"dtype", std::string("bf16")}}, std::vector{f32({3})});
  ASSERT_TRUE(cast.has_value());
  EXPECT_EQ(cast->at(0).dtype, ir::DType::bf16);
}

TEST_F(Registry, ShapeErrorsSayWhatDisagrees) {
  auto mm = error_of("matmul", {f32({4, 5}), f32({4, 3})});
  EXPECT_EQ(mm.code(), ErrorCode::shape_mismatch);
  EXPECT_NE(
      mm.to_string().find("'k' has extent 5 from dim 1 of A (4x5) but 4 from dim 0 of B (4x3)"),
      std::string::npos)
      << mm.to_string();
  auto bc = error_of("add", {f32({4, 3}), f32({5})});
  EXPECT_NE(bc.message().find("cannot broadcast A 4x3 with B 5: dimension -1 is 3 vs 5"),
            std::string::npos)
      << bc.message();
  auto conv = error_of("conv2d", {f32({1, 3, 8, 8}), f32({4, 2, 3, 3})});
  EXPECT_NE(conv.message().find("has 2 input channels per group but X 1x3x8x8 gives 3"),
            std::string::npos)
      << conv.message();
  auto big = error_of("conv2d", {f32({1, 3, 2, 2}), f32({4, 3, 3, 3})});
  EXPECT_NE(big.message().find("larger than the padded input"), std::string::npos);
  auto mixed = error_of("matmul", {f32({4, 4}), {{4, 4}, ir::DType::bf16}});
  EXPECT_NE(mixed.message().find("input 0 is fp32[4x4] and input 1 is bf16[4x4]; insert a cast"),
            std::string::npos)
      << mixed.message();
  auto rs = error_of("reshape", {f32({2, 3})}, {{"shape", Ints{4, 2}}});
  EXPECT_NE(rs.message().find("has 6 elements, shape 4x2 has 8"), std::string::npos);
  // Found by graph_json_fuzz: a shape attribute whose product overflows int64.
  auto huge = error_of("reshape", {f32({2, 3})},
                       {{"shape", Ints{std::numeric_limits<std::int64_t>::max(), 2}}});
  EXPECT_NE(huge.message().find("has too many elements"), std::string::npos) << huge.message();
  // Found by graph_json_fuzz: pads whose sum with the input passes int64.
  std::int64_t const half = std::int64_t{1} << 62;
  auto pads = error_of("conv2d", {f32({1, 3, 8, 8}), f32({4, 3, 3, 3})},
                       {{"padding", Ints{half, 0, half, 0}}});
  EXPECT_NE(pads.message().find("overflows 64-bit integers"), std::string::npos)
      << pads.message();
}

TEST_F(Registry, AttributeErrors) {
  auto unknown =
      error_of("conv2d", {f32({1, 3, 8, 8}), f32({4, 3, 3, 3})}, {{"strides", Ints{2, 2}}});
  EXPECT_NE(
      unknown.message().find("unknown attribute 'strides' for op type 'conv2d'; known attributes: "
                             "stride, padding, dilation, groups"),
      std::string::npos)
      << unknown.message();
  auto kind = error_of("conv2d", {f32({1, 3, 8, 8}), f32({4, 3, 3, 3})}, {{"groups", 1.5}});
  EXPECT_NE(kind.message().find("attribute 'groups' of 'conv2d' must be an integer"),
            std::string::npos);
  auto missing = error_of("slice", {f32({4})});
  EXPECT_NE(missing.message().find("needs attribute 'starts'"), std::string::npos);
  auto op = error_of("conv4d", {f32({4})});
  EXPECT_EQ(op.code(), ErrorCode::not_found);
  EXPECT_NE(op.message().find("--op-semantics"), std::string::npos);
  auto arity = error_of("relu", {f32({4}), f32({4})});
  EXPECT_NE(arity.message().find("takes 1 input(s), got 2"), std::string::npos);
}

TEST_F(Registry, BindIsCachedPerInstance) {
  auto a = registry_->bind("relu", {}, std::vector{f32({4, 4})});
  auto b = registry_->bind("relu", {}, std::vector{f32({4, 4})});
  auto c = registry_->bind("relu", {}, std::vector{f32({4, 5})});
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(a->get(), b->get());
  EXPECT_NE(a->get(), c->get());
}

TEST_F(Registry, CustomOpsFromOneLine) {
  ASSERT_TRUE(
      registry_->add_tdl("scaled_mm(A, B): Y[i,j] = sum(k) A[i,k] * B[k,j] * alpha").is_ok());
  auto y = registry_->bind("scaled_mm", {{"alpha", 0.5}}, std::vector{f32({8, 4}), f32({4, 2})});
  ASSERT_TRUE(y.has_value()) << y.error().to_string();
  EXPECT_EQ((*y)->output_type(), f32({8, 2}));
  auto no_alpha = registry_->bind("scaled_mm", {}, std::vector{f32({8, 4}), f32({4, 2})});
  ASSERT_FALSE(no_alpha.has_value());
  EXPECT_NE(no_alpha.error().to_string().find("unknown name 'alpha'"), std::string::npos);

  auto dup = registry_->add_tdl("relu(X): Y[i] = X[i]");
  EXPECT_FALSE(dup.is_ok());
  auto header = registry_->add_tdl("Y[i] = X[i]");
  ASSERT_FALSE(header.is_ok());
  EXPECT_NE(header.error().message().find("no 'NAME(INPUTS):' header"), std::string::npos);
  auto unknown = registry_->add_tdl("f(A): Y[i] = A[i] + Z[i]");
  ASSERT_TRUE(unknown.is_ok());  // names are resolved when shapes are known
  auto bound = registry_->bind("f", {}, std::vector{f32({4})});
  ASSERT_FALSE(bound.has_value());
  EXPECT_NE(bound.error().to_string().find("unknown tensor 'Z'; the op's inputs are A"),
            std::string::npos);
}

TEST_F(Registry, SemanticsFileErrorsNameTheLine) {
  auto path = std::filesystem::temp_directory_path() / "cleave_semantics_test.tdl";
  std::ofstream(path) << "# custom ops\n\nok(A): Y[i] = A[i] * 2\nbad(A): Y[i] = A[i +\n";
  auto st = registry_->load_semantics_file(path.string());
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.error().to_string().find(path.string() + ":4"), std::string::npos)
      << st.error().to_string();
  EXPECT_NE(st.error().to_string().find("TDL parse error at column"), std::string::npos);
  EXPECT_TRUE(registry_->find("ok"));
  std::filesystem::remove(path);
}

TEST_F(Registry, GraphBuilderReportsShapeMismatchAtTheOp) {
  ir::GraphBuilder b(*registry_);
  auto x = b.add_source("x", f32({4, 8}), ir::TensorRole::input);
  auto w = b.add_source("w", f32({3, 7}), ir::TensorRole::weight);
  ASSERT_TRUE(x && w);
  auto y = b.add_op1({"linear", {*x, *w}, {}, "fc1", {}, {}});
  ASSERT_FALSE(y.has_value());
  EXPECT_EQ(y.error().code(), ErrorCode::shape_mismatch);
  std::string msg = y.error().to_string();
  EXPECT_NE(msg.find("fc1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'i' has extent 8 from dim 1 of X (4x8) but 7 from dim 1 of W (3x7)"),
            std::string::npos)
      << msg;
}

TEST_F(Registry, SplitIsSlices) {
  ir::GraphBuilder b(*registry_);
  auto x = b.add_source("x", f32({4, 10}), ir::TensorRole::input);
  ASSERT_TRUE(x);
  auto parts = add_split(b, *x, -1, {3, 7}, "qk");
  ASSERT_TRUE(parts.has_value()) << parts.error().to_string();
  ASSERT_EQ(parts->size(), 2u);
  EXPECT_EQ(b.type_of((*parts)[1]).shape, (ir::Shape{4, 7}));
  auto bad = add_split(b, *x, 1, {3, 8}, "bad");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("add up to 10"), std::string::npos);
  auto g = b.finish();
  ASSERT_TRUE(g.has_value()) << g.error().to_string();
  EXPECT_EQ(g->num_ops(), 2u);
}

}  // namespace
}  // namespace cleave::ops
