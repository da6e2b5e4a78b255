// The importer on small models written in the test: the mapping, parameters counted by use, and
// bad input (each a clear error naming the cause, never a crash).
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <string>

#include "autodiff/training_graph.h"
#include "fuzz_regressions.h"
#include "import/onnx_import.h"
#include "import/opaque_op.h"
#include "onnx_builders.h"

namespace cleave::importer {
namespace {

using testing::bytes_of;
using testing::mlp;
using testing::MlpOptions;

std::unique_ptr<ops::OpRegistry> registry() {
  auto r = ops::OpRegistry::with_builtins();
  add_import_ops(*r);
  return r;
}

std::int64_t parameters(ir::Graph const& g) {
  std::int64_t n = 0;
  for (auto const& t : g.tensors())
    if (t.role == ir::TensorRole::weight) n += ir::num_elements(t.type.shape);
  return n;
}

std::string error_of(std::string const& bytes, ImportOptions const& o = {}) {
  auto r = registry();
  auto g = import_onnx_bytes(bytes, "test.onnx", *r, o);
  EXPECT_FALSE(g.has_value());
  return g ? std::string() : g.error().to_string();
}

TEST(Import, MlpMapsToLinearLayersWithALoss) {
  auto r = registry();
  auto g = import_onnx_bytes(bytes_of(mlp()), "mlp.onnx", *r);
  ASSERT_TRUE(g.has_value()) << g.error().to_string();
  EXPECT_EQ(parameters(g->forward), 195);
  EXPECT_EQ(g->stats.parameters, 195);
  EXPECT_EQ(g->stats.opset, 17);
  EXPECT_EQ(g->batch, 4);
  EXPECT_EQ(g->loss, "loss");
  std::vector<std::string> types;
  for (auto const& op : g->forward.ops())
    types.push_back(op.type);
  EXPECT_EQ(types,
            (std::vector<std::string>{"linear", "add", "relu", "linear", "add", "cross_entropy"}));
  auto training = autodiff::build_training_graph(g->forward, *r, {});
  EXPECT_TRUE(training.has_value()) << training.error().to_string();
}

// A large model's import reports its stages after parsing and each node it converts (a shell's
// progress line, api::import_onnx).
TEST(Import, ReportsProgressNodeByNode) {
  auto r = registry();
  std::vector<std::string> stages;
  std::int64_t nodes = 0, total = 0;
  ImportOptions o;
  o.progress = [&](WorkProgress const& p) {
    if (stages.empty() || stages.back() != p.stage) stages.emplace_back(p.stage);
    if (p.stage == "converting nodes") {
      EXPECT_EQ(p.done, nodes++);
      total = p.total;
    }
  };
  auto g = import_onnx_bytes(bytes_of(mlp()), "mlp.onnx", *r, o);
  ASSERT_TRUE(g.has_value()) << g.error().to_string();
  EXPECT_EQ(stages, (std::vector<std::string>{"checking the model", "inferring shapes",
                                              "converting nodes"}));
  EXPECT_GT(nodes, 2);
  EXPECT_EQ(nodes, g->stats.onnx_nodes);
  EXPECT_EQ(total, g->stats.onnx_nodes);
}

TEST(Import, DeduplicatedInitializersCountOncePerUse) {
  auto r = registry();
  MlpOptions o;
  o.dedup_bias = true;
  auto g = import_onnx_bytes(bytes_of(mlp(o)), "dedup.onnx", *r);
  ASSERT_TRUE(g.has_value()) << g.error().to_string();
  // b_shared [3] is one initializer in the file but two biases in the model.
  EXPECT_EQ(parameters(g->forward), 195 + 3);
  EXPECT_EQ(g->stats.initializers, 4);
}

TEST(ImportErrors, TruncatedFile) {
  std::string bytes = bytes_of(mlp());
  auto msg = error_of(bytes.substr(0, bytes.size() / 2));
  EXPECT_NE(msg.find("not an ONNX model"), std::string::npos) << msg;
}

TEST(ImportErrors, NotOnnxAtAll) {
  auto msg = error_of("{\"format\":\"cleave.graph/1\"}\n");
  EXPECT_NE(msg.find("not an ONNX model"), std::string::npos) << msg;
  msg = error_of("this is not a model\n");
  EXPECT_NE(msg.find("not an ONNX model"), std::string::npos) << msg;
  msg = error_of("");
  EXPECT_NE(msg.find("holds no graph"), std::string::npos) << msg;
}

TEST(ImportErrors, OpsetOutsideTheRange) {
  MlpOptions o;
  o.opset = 11;
  auto msg = error_of(bytes_of(mlp(o)));
  EXPECT_NE(msg.find("opset 11 is outside the range cleave imports (13-17)"), std::string::npos)
      << msg;
  o.opset = 18;
  msg = error_of(bytes_of(mlp(o)));
  EXPECT_NE(msg.find("opset 18"), std::string::npos) << msg;
}

TEST(ImportErrors, UnknownOpNamesOpNodeOpsetAndTheWayOut) {
  MlpOptions o;
  o.middle_op = "Softsign";  // an ONNX op (since opset 1) that cleave has no mapping for
  auto msg = error_of(bytes_of(mlp(o)));
  EXPECT_NE(msg.find("ai.onnx::Softsign"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Softsign node 'Softsign_a'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("opset 17"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--op-semantics"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--allow-opaque"), std::string::npos) << msg;
  o.middle_op = "Mish";  // not in ONNX before opset 18
  msg = error_of(bytes_of(mlp(o)));
  EXPECT_NE(msg.find("ONNX op Mish (node 'Mish_a') is not defined at opset 17"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("--allow-opaque"), std::string::npos) << msg;
}

TEST(ImportErrors, DescribedOpIsImportedWithItsTdl) {
  auto r = registry();
  ASSERT_TRUE(r->add_tdl("Mish(X): Y[b,i] = X[b,i] * tanh(log(1 + exp(X[b,i])))").is_ok());
  MlpOptions o;
  o.middle_op = "Mish";
  auto g = import_onnx_bytes(bytes_of(mlp(o)), "mish.onnx", *r);
  ASSERT_TRUE(g.has_value()) << g.error().to_string();
  EXPECT_EQ(g->forward.op(ir::OpId(2)).type, "Mish");
}

TEST(ImportErrors, UnknownOpBecomesOpaqueWhenAllowed) {
  auto r = registry();
  MlpOptions o;
  o.middle_op = "Softsign";
  ImportOptions allow;
  allow.allow_opaque = true;
  auto g = import_onnx_bytes(bytes_of(mlp(o)), "mish.onnx", *r, allow);
  ASSERT_TRUE(g.has_value()) << g.error().to_string();
  EXPECT_EQ(g->stats.opaque, 1);
  auto const& op = g->forward.op(ir::OpId(2));
  EXPECT_EQ(op.type, "opaque");
  auto bound = r->bind(g->forward, op.id);
  ASSERT_TRUE(bound.has_value()) << bound.error().to_string();
  // Splittable on the batch only.
  auto const& dims = (*bound)->dims();
  ASSERT_FALSE(dims.empty());
  EXPECT_TRUE(dims[0].splittable);
  for (std::size_t k = 1; k < dims.size(); ++k)
    EXPECT_FALSE(dims[k].splittable) << k;
  // Its gradient is another opaque op: the training graph builds.
  autodiff::TrainingOptions o2;
  o2.loss = g->loss;
  auto training = autodiff::build_training_graph(g->forward, *r, o2);
  ASSERT_TRUE(training.has_value()) << training.error().to_string();
}

TEST(ImportErrors, ShapesThatStayUnknown) {
  MlpOptions o;
  o.symbolic_batch = true;
  auto msg = error_of(bytes_of(mlp(o)));
  EXPECT_NE(msg.find("graph input 'x' dimension 0 is unknown ('N')"), std::string::npos) << msg;
}

TEST(ImportErrors, ACustomDomainOpWithoutShapes) {
  MlpOptions o;
  o.middle_op = "FancyAct";
  o.middle_domain = "com.example";
  ImportOptions allow;
  allow.allow_opaque = true;
  auto msg = error_of(bytes_of(mlp(o)), allow);
  EXPECT_NE(msg.find("opaque op com.example::FancyAct: ONNX shape inference gave no shape for "
                     "output 'a'"),
            std::string::npos)
      << msg;
}

TEST(ImportErrors, ReshapeToAShapeComputedFromData) {
  auto m = mlp();
  auto* g = m.mutable_graph();
  // y2 = Reshape(y, Cast(a)): the shape depends on values known only at run time.
  testing::add_node(g, "Cast", {"a"}, {"a_int"})->add_attribute()->set_name("to");
  auto* to = g->mutable_node(g->node_size() - 1)->mutable_attribute(0);
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(onnx::TensorProto::INT64);
  testing::add_node(g, "Reshape", {"y", "a_int"}, {"y2"});
  g->mutable_output(0)->set_name("y2");
  auto* shape = g->mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  shape->mutable_dim(0)->set_dim_param("P");
  shape->mutable_dim(1)->set_dim_param("Q");
  auto msg = error_of(bytes_of(m));
  EXPECT_NE(msg.find("Reshape"), std::string::npos) << msg;
}

// Inputs the fuzzer (scripts/fuzz.sh) found crashing, kept as regressions with the outcome each
// must now have, with and without --allow-opaque: the error naming what is wrong (or "" where the
// input must import and build a training graph). Every file must be listed. The .bin extension
// keeps them out of the *.onnx ignore rule.
TEST(ImportErrors, FuzzRegressions) {
  std::map<std::string, std::string> const outcomes = {
      // A Constant's raw_data shorter than its shape: libonnx's data propagation read past it.
      {"data_prop_short_raw_data.bin", "bytes but its shape and type need"},
      // libonnx's conv/pool shape inference divided by a zero stride (SIGFPE).
      {"conv_zero_stride.bin", "every value of strides must be at least 1, found 0"},
      {"maxpool_zero_stride.bin", "MaxPool node '': every value of strides must be at least 1"},
      // A Conv without kernel_shape whose W has hundreds of dims: libonnx read past its vectors.
      // With kernel_shape written out from W, libonnx compares it with X's rank.
      {"conv_weight_rank_without_kernel_shape.bin", "Attribute kernel_shape has incorrect size"},
      // A folded Gather's index of 3.8e255 was cast to int64 (undefined behaviour).
      {"gather_index_beyond_int64.bin", "Gather node '' on constants: index out of range"},
  };
  auto r = registry();
  for (bool opaque : {false, true}) {
    cleave::testing::expect_fuzz_outcomes(
        CLEAVE_FUZZ_REGRESSIONS, outcomes, [&](std::string const& bytes) -> Status {
          ImportOptions o;
          o.allow_opaque = opaque;
          CLEAVE_TRY(auto g, import_onnx_bytes(bytes, "regression", *r, o));
          autodiff::TrainingOptions t;
          t.loss = g.loss;
          return cleave::testing::status_of(autodiff::build_training_graph(g.forward, *r, t));
        });
  }
}

TEST(ImportErrors, TensorBytesThatDoNotMatchTheShape) {
  auto m = mlp();
  auto* g = m.mutable_graph();
  auto* c = testing::add_node(g, "Constant", {}, {"shape"});
  auto* a = c->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto::INT64);
  a->mutable_t()->add_dims(2);
  a->mutable_t()->set_raw_data(std::string(3, '\1'));  // 2 int64 need 16 bytes
  auto msg = error_of(bytes_of(m));
  EXPECT_NE(msg.find("holds 3 bytes but its shape and type need 16"), std::string::npos) << msg;
}

TEST(ImportErrors, MissingFile) {
  auto r = registry();
  auto g = import_onnx_file("/nonexistent/model.onnx", *r);
  ASSERT_FALSE(g.has_value());
  EXPECT_NE(g.error().message().find("cannot open"), std::string::npos);
}

// Weights as external data (never opened): onnx's checker finds the file next to the model, not
// in the working directory, and a missing file is its clear error.
TEST(Import, ExternalDataIsLookedForNextToTheModel) {
  auto dir =
      std::filesystem::temp_directory_path() / ("cleave_external_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto m = mlp();
  auto* w = m.mutable_graph()->mutable_initializer(0);  // w1 [16, 8]
  w->clear_float_data();
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* entry = w->add_external_data();
  entry->set_key("location");
  entry->set_value("mlp.weights");
  std::ofstream(dir / "mlp.onnx", std::ios::binary) << bytes_of(m);
  auto r = registry();
  auto missing = import_onnx_file((dir / "mlp.onnx").string(), *r);
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().message().find("mlp.weights"), std::string::npos)
      << missing.error().to_string();
  std::ofstream(dir / "mlp.weights", std::ios::binary) << std::string(16 * 8 * 4, '\0');
  auto g = import_onnx_file((dir / "mlp.onnx").string(), *r);
  ASSERT_TRUE(g.has_value()) << g.error().to_string();
  EXPECT_EQ(g->stats.parameters, 195);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace cleave::importer
