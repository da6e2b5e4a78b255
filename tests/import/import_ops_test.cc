// The mappings that torchvision's classification models and PyTorch's transformers need beyond
// the basics (issue 22): Pad, Clip (ReLU6), HardSwish, HardSigmoid, Expand, Einsum, the shape
// arithmetic folded at import (Mod, ScatterND, Trilu, negative slice steps), and one loss per
// output. Each small model imports to the expected ops and builds its training graph.
#include <gtest/gtest.h>
#include <map>
#include <string>

#include "autodiff/training_graph.h"
#include "import/onnx_import.h"
#include "import/opaque_op.h"
#include "onnx_builders.h"

namespace cleave::importer {
namespace {

using testing::add_initializer;
using testing::add_node;
using testing::add_tensor_value;
using testing::bytes_of;
using Ints = std::vector<std::int64_t>;

std::unique_ptr<ops::OpRegistry> registry() {
  auto r = ops::OpRegistry::with_builtins();
  add_import_ops(*r);
  return r;
}

onnx::ModelProto model_with_input(std::string const& input, Ints const& dims) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  m.mutable_graph()->set_name("ops");
  add_tensor_value(m.mutable_graph()->add_input(), input, dims);
  return m;
}

// A Constant node holding int64 (or, with `floating`, float) values.
void add_constant(onnx::GraphProto* g, std::string const& name, Ints const& dims,
                  std::vector<double> const& values, bool floating = false) {
  auto* a = add_node(g, "Constant", {}, {name})->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  auto* t = a->mutable_t();
  t->set_data_type(floating ? onnx::TensorProto::FLOAT : onnx::TensorProto::INT64);
  for (auto d : dims)
    t->add_dims(d);
  for (double v : values) {
    if (floating)
      t->add_float_data(static_cast<float>(v));
    else
      t->add_int64_data(static_cast<std::int64_t>(v));
  }
}

void set_attr(onnx::NodeProto* n, std::string const& name, std::string const& value) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(value);
}

void set_attr(onnx::NodeProto* n, std::string const& name, float value) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(value);
}

std::map<std::string, int> op_counts(ir::Graph const& g) {
  std::map<std::string, int> c;
  for (auto const& op : g.ops())
    ++c[op.type];
  return c;
}

Expected<ImportResult> import_and_train(onnx::ModelProto const& m, ops::OpRegistry const& r) {
  auto g = import_onnx_bytes(bytes_of(m), "ops.onnx", r);
  if (!g) return g;
  autodiff::TrainingOptions o;
  o.loss = g->loss;
  auto training = autodiff::build_training_graph(g->forward, r, o);
  if (!training) return std::move(training).error();
  return g;
}

// x [2, 3, 4] -> Pad -> Clip(0, 6) -> HardSigmoid -> HardSwish, a class token Expanded to the
// batch and concatenated, attention scores by Einsum, a Reshape whose target is folded through
// Mod and ScatterND: logits [2, 16].
onnx::ModelProto vision_ops() {
  auto m = model_with_input("x", {2, 3, 4});
  auto* g = m.mutable_graph();
  add_constant(g, "pads", {6}, {0, 0, 1, 0, 0, 2});
  add_node(g, "Pad", {"x", "pads"}, {"padded"});  // [2, 3, 7]
  add_constant(g, "lo", {}, {0}, true);
  add_constant(g, "hi", {}, {6}, true);
  add_node(g, "Clip", {"padded", "lo", "hi"}, {"relu6"});
  set_attr(add_node(g, "HardSigmoid", {"relu6"}, {"gate"}), "alpha", 1.0f / 6);
  add_node(g, "HardSwish", {"gate"}, {"act"});
  add_initializer(g, "token", {1, 1, 7});
  add_constant(g, "batch_shape", {3}, {2, 1, 7});
  add_node(g, "Expand", {"token", "batch_shape"}, {"tokens"});    // [2, 1, 7]
  auto* cat = add_node(g, "Concat", {"tokens", "act"}, {"seq"});  // [2, 4, 7]
  auto* axis = cat->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(1);
  set_attr(add_node(g, "Einsum", {"seq", "seq"}, {"scores"}), "equation",
           "b i d, b j d -> b i j");  // [2, 4, 4], spaced as PyTorch writes it
  // Target [2, 16]: ScatterND writes 50 % 34 = 16 into [2, 0] at index 1.
  add_constant(g, "target0", {2}, {2, 0});
  add_constant(g, "at", {1, 1}, {1});
  add_constant(g, "fifty", {1}, {50});
  add_constant(g, "thirty_four", {1}, {34});
  add_node(g, "Mod", {"fifty", "thirty_four"}, {"sixteen"});
  add_node(g, "ScatterND", {"target0", "at", "sixteen"}, {"target"});
  add_node(g, "Reshape", {"scores", "target"}, {"y"});
  add_tensor_value(g->add_output(), "y", {2, 16});
  return m;
}

TEST(ImportOps, PadClipHardActivationsExpandEinsumAndFoldedShapeArithmetic) {
  auto r = registry();
  auto g = import_and_train(vision_ops(), *r);
  ASSERT_TRUE(g.has_value()) << g.error().to_string();
  auto c = op_counts(g->forward);
  for (char const* type : {"pad", "clip", "hardsigmoid", "hardswish", "expand", "einsum"})
    EXPECT_EQ(c[type], 1) << type;
  EXPECT_EQ(g->stats.parameters, 7);  // the token
  auto const& f = g->forward;
  EXPECT_EQ(f.tensor(*f.find_tensor("padded")).type.shape, (ir::Shape{2, 3, 7}));
  EXPECT_EQ(f.tensor(*f.find_tensor("tokens")).type.shape, (ir::Shape{2, 1, 7}));
  EXPECT_EQ(f.tensor(*f.find_tensor("scores")).type.shape, (ir::Shape{2, 4, 4}));
  EXPECT_EQ(f.tensor(*f.find_tensor("y")).type.shape, (ir::Shape{2, 16}));
  auto einsum = f.op(f.producer(*f.find_tensor("scores")));
  EXPECT_EQ(einsum.attrs.get_string("equation", ""), "bid,bjd->bij");
  auto clip = f.op(f.producer(*f.find_tensor("relu6")));
  EXPECT_EQ(clip.attrs.get_float("max", 0), 6.0);
}

// Attention with the causal mask PyTorch builds with torch.triu: Trilu of ones folds, and the
// Where becomes an additive mask; the scores computed by Einsum with an implicit output (the
// letters that appear once: b, in both operands, is summed).
TEST(ImportOps, TriluMaskFoldsAndEinsumWithAnImplicitOutput) {
  auto m = model_with_input("x", {2, 4, 8});
  auto* g = m.mutable_graph();
  set_attr(add_node(g, "Einsum", {"x", "x"}, {"scores"}), "equation", "bid,bjd");  // -> ij
  add_constant(g, "ones", {4, 4}, std::vector<double>(16, 1));
  auto* tri = add_node(g, "Trilu", {"ones"}, {"upper"});
  auto* k = tri->add_attribute();
  k->set_name("upper");
  k->set_type(onnx::AttributeProto::INT);
  k->set_i(1);
  add_constant(g, "zero", {}, {0});
  add_node(g, "Equal", {"upper", "zero"}, {"keep"});
  add_constant(g, "neg_inf", {}, {-1e9}, true);
  add_node(g, "Where", {"keep", "scores", "neg_inf"}, {"masked"});
  add_constant(g, "flat", {2}, {2, 8});
  add_node(g, "Reshape", {"masked", "flat"}, {"y"});
  add_tensor_value(g->add_output(), "y", {2, 8});
  auto r = registry();
  auto imported = import_and_train(m, *r);
  ASSERT_TRUE(imported.has_value()) << imported.error().to_string();
  auto const& f = imported->forward;
  auto einsum = f.op(f.producer(*f.find_tensor("scores")));
  EXPECT_EQ(einsum.attrs.get_string("equation", ""), "bid,bjd->ij");
  EXPECT_EQ(f.tensor(*f.find_tensor("scores")).type.shape, (ir::Shape{4, 4}));
  EXPECT_TRUE(f.find_tensor("masked.mask").has_value());
}

// GELU's tanh form as PyTorch 1.13 writes it (F.gelu(x, approximate="tanh")): one gelu op.
TEST(ImportOps, TanhGeluIsFused) {
  auto m = model_with_input("x", {2, 8});
  auto* g = m.mutable_graph();
  add_constant(g, "c3", {}, {0.044715}, true);
  add_constant(g, "k", {}, {0.7978845608028654}, true);
  add_constant(g, "one", {}, {1}, true);
  add_constant(g, "half", {}, {0.5}, true);
  add_node(g, "Mul", {"x", "x"}, {"sq"});
  add_node(g, "Mul", {"x", "sq"}, {"cube"});
  add_node(g, "Mul", {"c3", "cube"}, {"c3x3"});
  add_node(g, "Add", {"x", "c3x3"}, {"inner"});
  add_node(g, "Mul", {"k", "inner"}, {"z"});
  add_node(g, "Tanh", {"z"}, {"t"});
  add_node(g, "Add", {"one", "t"}, {"a"});
  add_node(g, "Mul", {"x", "a"}, {"xa"});
  add_node(g, "Mul", {"xa", "half"}, {"y"});
  add_tensor_value(g->add_output(), "y", {2, 8});
  auto r = registry();
  auto imported = import_and_train(m, *r);
  ASSERT_TRUE(imported.has_value()) << imported.error().to_string();
  auto c = op_counts(imported->forward);
  EXPECT_EQ(c["gelu"], 1);
  EXPECT_EQ(c["tanh"] + c["mul"] + c["add"], 0);
  auto const& f = imported->forward;
  EXPECT_EQ(f.op(f.producer(*f.find_tensor("y"))).attrs.get_string("approximate", ""), "tanh");
  EXPECT_EQ(imported->stats.fused, 1);
}

// GoogLeNet and Inception v3 in training mode have auxiliary classifiers as further outputs:
// the loss is the sum of each output's cross-entropy, with one labels input for them all.
TEST(ImportOps, EveryOutputAddsItsCrossEntropy) {
  auto m = model_with_input("x", {4, 8});
  auto* g = m.mutable_graph();
  add_initializer(g, "w_main", {8, 3});
  add_initializer(g, "w_aux", {8, 3});
  add_node(g, "MatMul", {"x", "w_main"}, {"main"});
  add_node(g, "MatMul", {"x", "w_aux"}, {"aux"});
  add_tensor_value(g->add_output(), "main", {4, 3});
  add_tensor_value(g->add_output(), "aux", {4, 3});
  auto r = registry();
  auto imported = import_and_train(m, *r);
  ASSERT_TRUE(imported.has_value()) << imported.error().to_string();
  auto c = op_counts(imported->forward);
  EXPECT_EQ(c["cross_entropy"], 2);
  EXPECT_EQ(c["add"], 1);
  int labels = 0;
  for (auto const& t : imported->forward.tensors())
    labels += t.name.starts_with("labels");
  EXPECT_EQ(labels, 1);
  EXPECT_EQ(imported->stats.parameters, 48);
}

std::string error_of(onnx::ModelProto const& m) {
  auto r = registry();
  auto g = import_onnx_bytes(bytes_of(m), "bad.onnx", *r);
  EXPECT_FALSE(g.has_value());
  return g ? std::string() : g.error().to_string();
}

TEST(ImportOpsErrors, WhatIsNotImportedSaysSo) {
  auto m = model_with_input("x", {2, 3, 4});
  auto* g = m.mutable_graph();
  add_constant(g, "pads", {6}, {0, 0, 1, 0, 0, 1});
  set_attr(add_node(g, "Pad", {"x", "pads"}, {"y"}), "mode", "reflect");
  add_tensor_value(g->add_output(), "y", {2, 3, 6});
  auto msg = error_of(m);
  EXPECT_NE(msg.find("Pad mode 'reflect' is not imported"), std::string::npos) << msg;
  EXPECT_NE(msg.find("in Pad node"), std::string::npos) << msg;

  auto e = model_with_input("x", {2, 3, 3});
  set_attr(add_node(e.mutable_graph(), "Einsum", {"x"}, {"y"}), "equation", "bii->bi");
  add_tensor_value(e.mutable_graph()->add_output(), "y", {2, 3});
  msg = error_of(e);
  EXPECT_NE(msg.find("repeats index 'i'"), std::string::npos) << msg;
}

}  // namespace
}  // namespace cleave::importer
