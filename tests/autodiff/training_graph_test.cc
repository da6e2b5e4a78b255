// The training graph of whole tiny models checked against central finite differences of the
// forward graph's loss (reference interpreter, fp64), and the optimizer update checked against
// its formula.
#include <cmath>
#include <gtest/gtest.h>
#include <map>
#include <random>

#include "autodiff/training_graph.h"
#include "models/layers.h"
#include "models/model_zoo.h"
#include "ops/reference_executor.h"

namespace cleave::autodiff {
namespace {

using Sources = std::map<std::string, tdl::TensorData, std::less<>>;
using Ints = std::vector<std::int64_t>;

Sources random_sources(ir::Graph const& g, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Sources s;
  for (auto const& t : g.tensors()) {
    if (g.producer(t.id).valid()) continue;
    std::vector<double> v(static_cast<std::size_t>(ir::num_elements(t.type.shape)));
    for (auto& x : v) {
      if (t.name == "labels") {
        x = static_cast<double>(rng() % 3);
      } else if (t.name.find("mask") != std::string::npos) {
        x = t.name.find("causal") != std::string::npos ? 0.0 : static_cast<double>(rng() % 2);
      } else if (!ir::is_floating(t.type.dtype)) {
        x = static_cast<double>(rng() % 3);
      } else {
        x = std::uniform_real_distribution<double>(-1, 1)(rng);
      }
    }
    s.emplace(t.name, tdl::TensorData::whole(t.type.shape, std::move(v)));
  }
  return s;
}

double loss_of(ir::Graph const& g, ops::OpRegistry const& r, Sources const& s) {
  auto values = ops::evaluate_graph(g, r, s);
  EXPECT_TRUE(values.has_value()) << values.error().to_string();
  return values ? (*values)[g.find_tensor("loss")->value()].values[0] : 0.0;
}

// The gradient the training graph computes for weight `w`: the input of its optimizer update.
tdl::TensorData gradient_of(ir::Graph const& train, std::vector<tdl::TensorData> const& values,
                            std::string const& w) {
  auto v = train.find_op(w + ".momentum.updated");
  EXPECT_TRUE(v.has_value()) << w;
  return values[train.op(*v).inputs[1].value()];
}

class GradientCheck : public ::testing::Test {
 protected:
  std::unique_ptr<ops::OpRegistry> registry_ = ops::OpRegistry::with_builtins();

  // Compares every weight's gradient with central differences of the forward loss.
  void check(ir::Graph const& forward, std::uint64_t seed) {
    auto train = build_training_graph(forward, *registry_);
    ASSERT_TRUE(train.has_value()) << train.error().to_string();
    Sources s = random_sources(*train, seed);
    auto values = ops::evaluate_graph(*train, *registry_, s);
    ASSERT_TRUE(values.has_value()) << values.error().to_string();
    int checked = 0;
    for (auto const& t : forward.tensors()) {
      if (t.role != ir::TensorRole::weight) continue;
      tdl::TensorData grad = gradient_of(*train, *values, t.name);
      ASSERT_EQ(grad.shape, t.type.shape) << t.name;
      for (std::size_t i = 0; i < grad.values.size(); ++i) {
        double const h = 1e-5;
        Sources plus = s, minus = s;
        plus.at(t.name).values[i] += h;
        minus.at(t.name).values[i] -= h;
        double fd =
            (loss_of(forward, *registry_, plus) - loss_of(forward, *registry_, minus)) / (2 * h);
        EXPECT_NEAR(grad.values[i], fd, 1e-6 + 1e-5 * std::abs(fd)) << t.name << "[" << i << "]";
        ++checked;
      }
    }
    EXPECT_GT(checked, 0);
  }
};

TEST_F(GradientCheck, Mlp) {
  auto g = models::ModelZoo::with_builtins().build(
      "mlp:layers=2,hidden=5,input=4,classes=3,batch=3", *registry_);
  ASSERT_TRUE(g.has_value()) << g.error().to_string();
  check(*g, 1);
}

TEST_F(GradientCheck, ConvBatchNormPoolClassifier) {
  ops::OpBuilder b(*registry_);
  auto x = b.input("images", {2, 2, 6, 6});
  models::Conv c;
  c.out_channels = 3;
  c.kernel_h = c.kernel_w = 3;
  c.stride_h = c.stride_w = 2;
  c.pad_h = c.pad_w = 1;
  c.bias = true;
  auto y = models::conv2d(b, x, c, "conv");
  y = models::batch_norm(b, y, "bn");
  y = b.op("relu", {y}, {}, "relu");
  y = models::max_pool(b, y, 2, 1, 0, "pool");
  y = b.op("sigmoid", {y}, {}, "squash");
  y = models::avg_pool(b, y, 2, 1, 1, "avg");
  y = models::flatten(b, y, "flatten");
  auto logits = models::linear(b, y, 3, "fc");
  models::classification_loss(b, b.op("tanh", {logits}, {}, "tanh"));
  auto g = b.finish();
  ASSERT_TRUE(g.has_value()) << g.error().to_string();
  check(*g, 2);
}

TEST_F(GradientCheck, AttentionBlockWithSharedEmbedding) {
  ops::OpBuilder b(*registry_);
  auto tokens = b.input("tokens", {2, 3}, ir::DType::int64);
  auto emb = b.weight("embedding", {3, 4});
  auto x = b.op("embedding", {emb, tokens}, {}, "embed");
  auto h = models::layer_norm(b, x, "ln");
  auto a = models::self_attention(b, h, 2, /*causal=*/true, "attn");
  x = b.op("add", {x, a}, {}, "residual");
  x = b.op("gelu", {x}, {}, "gelu");
  auto flat = b.op("reshape", {x}, {{"shape", Ints{6, 4}}}, "flat");
  auto logits = b.op("matmul", {flat, emb}, {{"transpose_b", std::int64_t{1}}}, "logits");
  auto parts = b.split(logits, 1, {2, 1}, "parts");
  auto joined = b.op("concat", {parts[1], parts[0]}, {{"axis", std::int64_t{1}}}, "joined");
  auto scaled = b.op("div", {joined, b.weight("temperature", {1})}, {}, "scaled");
  auto labels = b.input("labels", {6}, ir::DType::int64);
  b.op("cross_entropy", {scaled, labels}, {}, "loss");
  auto g = b.finish();
  ASSERT_TRUE(g.has_value()) << g.error().to_string();
  check(*g, 3);
}

TEST_F(GradientCheck, UnrolledRnnWithWeightsSharedByEveryStep) {
  // Every step reads the embedding, the LSTM weights and the output layer: each weight's uses
  // are differentiated as one batched use over the stacked steps.
  auto g = models::ModelZoo::with_builtins().build("rnn:layers=1,hidden=3,steps=3,batch=2,vocab=3",
                                                   *registry_);
  ASSERT_TRUE(g.has_value()) << g.error().to_string();
  check(*g, 4);
}

TEST_F(GradientCheck, SharedUsesThatAreNotOneBatchedOp) {
  // W is read by a matmul and by three linears, one of another input type: the two linears of
  // one type are a batched use, the others keep their own gradient ops.
  ops::OpBuilder b(*registry_);
  auto w = b.weight("w", {3, 3});
  auto x = b.input("x", {2, 3});
  auto a = b.op("linear", {x, w}, {}, "a");
  auto c = b.op("matmul", {a, w}, {}, "c");
  auto wide = b.op("reshape", {c}, {{"shape", Ints{1, 2, 3}}}, "wide");
  auto d = b.op("linear", {wide, w}, {}, "d");
  auto e = b.op("mul", {c, c}, {}, "e");
  auto f = b.op("linear", {e, w}, {}, "f");
  auto sum = b.op("add", {b.op("reshape", {d}, {{"shape", Ints{2, 3}}}, "flat"), f}, {}, "sum");
  models::classification_loss(b, sum);
  auto graph = b.finish();
  ASSERT_TRUE(graph.has_value()) << graph.error().to_string();
  check(*graph, 5);
  auto train = build_training_graph(*graph, *registry_);
  ASSERT_TRUE(train.has_value());
  auto stacked = train->find_op("a.grad.stack_in0");
  ASSERT_TRUE(stacked.has_value());
  EXPECT_EQ(train->tensor(train->op(*stacked).outputs[0]).type.shape, (ir::Shape{2, 2, 3}));
  EXPECT_TRUE(train->find_op("d.grad.W").has_value());
  EXPECT_TRUE(train->find_op("c.grad.B").has_value());
  EXPECT_FALSE(train->find_op("f.grad.W").has_value());
}

TEST(TrainingGraph, OneWeightGradientPerSharedWeightWhateverTheUnroll) {
  auto registry = ops::OpRegistry::with_builtins();
  for (int steps : {1, 4}) {
    auto fwd = models::ModelZoo::with_builtins().build(
        "rnn:layers=2,hidden=4,vocab=3,batch=2,steps=" + std::to_string(steps), *registry);
    ASSERT_TRUE(fwd.has_value());
    auto train = build_training_graph(*fwd, *registry);
    ASSERT_TRUE(train.has_value()) << train.error().to_string();
    std::map<std::string, int> count;
    for (auto const& op : train->ops())
      if (op.forward.valid()) ++count[op.type];
    // weight_ih and weight_hh of two layers; the output layer's weight.
    EXPECT_EQ(count["linear_grad_weight"], 5) << steps;
    EXPECT_EQ(count["embedding_grad"], 1) << steps;
    auto update = train->find_op("lstm.layer0.weight_hh.momentum.updated");
    ASSERT_TRUE(update.has_value());
    ir::Op const& grad = train->op(train->producer(train->op(*update).inputs[1]));
    EXPECT_EQ(grad.type, "linear_grad_weight");
    // dY: [steps, batch, 4 * hidden] stacked, or one step's [batch, 4 * hidden].
    ir::Shape stacked{steps, 2, 16}, single{2, 16};
    EXPECT_EQ(train->tensor(grad.inputs[0]).type.shape, steps > 1 ? stacked : single);
  }
}

TEST(TrainingGraph, StructureNamesAndOptimizerUpdate) {
  auto registry = ops::OpRegistry::with_builtins();
  auto fwd = models::ModelZoo::with_builtins().build(
      "mlp:layers=1,hidden=4,input=3,classes=2,batch=2", *registry);
  ASSERT_TRUE(fwd.has_value());
  TrainingOptions opt;
  opt.learning_rate = 0.5;
  opt.momentum = 0.25;
  auto train = build_training_graph(*fwd, *registry, opt);
  ASSERT_TRUE(train.has_value()) << train.error().to_string();
  // Every backward and optimizer op names a forward op; forward ops keep their names.
  int backward = 0;
  for (auto const& op : train->ops()) {
    if (!op.forward.valid()) {
      EXPECT_TRUE(fwd->find_op(op.name).has_value()) << op.name;
      continue;
    }
    ++backward;
    EXPECT_FALSE(train->op(op.forward).forward.valid());
  }
  EXPECT_GT(backward, static_cast<int>(fwd->num_ops()));
  auto grad_op = train->find_op("fc0.linear.grad.W");
  ASSERT_TRUE(grad_op.has_value());
  EXPECT_EQ(train->op(train->op(*grad_op).forward).name, "fc0.linear");
  ASSERT_TRUE(train->find_tensor("fc0.weight.momentum").has_value());
  ASSERT_TRUE(train->find_tensor("fc0.weight.updated").has_value());
  EXPECT_EQ(train->tensor(*train->find_tensor("fc0.weight.updated")).role, ir::TensorRole::weight);

  Sources s = random_sources(*train, 4);
  auto values = ops::evaluate_graph(*train, *registry, s);
  ASSERT_TRUE(values.has_value());
  auto const& w = s.at("fc0.weight").values;
  auto const& v = s.at("fc0.weight.momentum").values;
  auto dw = gradient_of(*train, *values, "fc0.weight").values;
  auto const& updated = (*values)[train->find_tensor("fc0.weight.updated")->value()].values;
  for (std::size_t i = 0; i < w.size(); ++i)
    EXPECT_NEAR(updated[i], w[i] - 0.5 * (0.25 * v[i] + dw[i]), 1e-12);

  // Saved for backward: forward activations and inputs, never weights.
  auto saved = saved_for_backward(*train);
  EXPECT_FALSE(saved.empty());
  for (auto t : saved)
    EXPECT_NE(train->tensor(t).role, ir::TensorRole::weight);
}

TEST(TrainingGraph, AdamHasTwoStatesPerWeight) {
  auto registry = ops::OpRegistry::with_builtins();
  auto fwd = models::ModelZoo::with_builtins().build(
      "mlp:layers=1,hidden=4,input=3,classes=2,batch=2", *registry);
  ASSERT_TRUE(fwd.has_value());
  TrainingOptions opt;
  opt.optimizer = Optimizer::adam;
  auto train = build_training_graph(*fwd, *registry, opt);
  ASSERT_TRUE(train.has_value()) << train.error().to_string();
  int states = 0;
  for (auto const& t : train->tensors())
    states += t.role == ir::TensorRole::optimizer_state && !train->producer(t.id).valid();
  EXPECT_EQ(states, 2 * 4);  // 2 weights and 2 biases
}

TEST(TrainingGraph, BadInput) {
  auto registry = ops::OpRegistry::with_builtins();
  ASSERT_TRUE(registry->add_tdl("twice(X): Y[i,j] = X[i,j] * 2").is_ok());
  ops::OpBuilder b(*registry);
  auto x = b.input("x", {2, 3});
  auto w = b.weight("w", {3, 3});
  auto y = b.op("twice", {b.op("matmul", {x, w}, {}, "mm")}, {}, "custom");
  auto vec =
      b.op("global_avg_pool", {b.op("reshape", {y}, {{"shape", Ints{1, 1, 2, 3}}}, "r")}, {}, "p");
  auto g = b.finish();
  ASSERT_TRUE(g.has_value()) << g.error().to_string();
  auto no_loss = build_training_graph(*g, *registry);
  ASSERT_FALSE(no_loss.has_value());
  EXPECT_NE(no_loss.error().message().find("no tensor 'loss'"), std::string::npos);
  TrainingOptions named;
  named.loss = "p";
  auto not_scalar = build_training_graph(*g, *registry, named);
  ASSERT_FALSE(not_scalar.has_value());
  EXPECT_NE(not_scalar.error().message().find("must be a floating-point scalar"),
            std::string::npos);
  (void)vec;

  ops::OpBuilder b2(*registry);
  auto x2 = b2.input("x", {2, 3});
  auto w2 = b2.weight("w", {3, 3});
  auto c2 = b2.op("twice", {b2.op("matmul", {x2, w2}, {}, "mm")}, {}, "custom");
  auto labels = b2.input("labels", {2}, ir::DType::int64);
  b2.op("cross_entropy", {c2, labels}, {}, "loss");
  auto g2 = b2.finish();
  ASSERT_TRUE(g2.has_value());
  auto no_rule = build_training_graph(*g2, *registry);
  ASSERT_FALSE(no_rule.has_value());
  EXPECT_NE(no_rule.error().message().find("no gradient rule for op type 'twice' (op 'custom')"),
            std::string::npos);
  auto train = build_training_graph(
      *models::ModelZoo::with_builtins().build("mlp:layers=1,batch=2", *registry), *registry);
  ASSERT_TRUE(train.has_value());
  auto again = build_training_graph(*train, *registry);
  ASSERT_FALSE(again.has_value());
  EXPECT_NE(again.error().message().find("already a backward or optimizer op"), std::string::npos);
}

}  // namespace
}  // namespace cleave::autodiff

namespace cleave::autodiff {
namespace {

// Regression: the conv2d rule held a reference to a weight's shape across emitting an op, which
// could move the shapes (VGG-16 at batch 128 crashed). Every CNN of the zoo at a few batch sizes
// builds its training graph (under the sanitizer build this reads no freed memory).
TEST(TrainingGraph, ConvNetsBuildAtSeveralBatchSizes) {
  auto registry = ops::OpRegistry::with_builtins();
  auto zoo = models::ModelZoo::with_builtins();
  for (char const* model : {"vgg:depth=16", "alexnet", "resnet:depth=18"})
    for (int batch : {1, 128}) {
      std::string spec = std::string(model) +
                         (std::string(model).find(':') == std::string::npos ? ":" : ",") +
                         "batch=" + std::to_string(batch);
      auto fwd = zoo.build(spec, *registry);
      ASSERT_TRUE(fwd.has_value()) << spec;
      auto train = build_training_graph(*fwd, *registry, TrainingOptions{});
      ASSERT_TRUE(train.has_value()) << spec;
      EXPECT_GT(train->num_ops(), 2 * fwd->num_ops()) << spec;
    }
}

}  // namespace
}  // namespace cleave::autodiff
