// Training precision (autodiff/precision.h): where AMP puts its casts, what it keeps in fp32, its
// loss scaling, and that it computes the same step (the reference interpreter runs every dtype in
// double precision, as the CPU runtime runs them in fp32).
#include <gtest/gtest.h>
#include <map>
#include <random>

#include "autodiff/precision.h"
#include "models/model_zoo.h"
#include "ops/reference_executor.h"

namespace cleave::autodiff {
namespace {

class Precision_ : public testing::Test {
 protected:
  ir::Graph forward(std::string const& spec) {
    auto g = models::ModelZoo::with_builtins().build(spec, *registry_);
    EXPECT_TRUE(g.has_value()) << g.error().to_string();
    return std::move(*g);
  }
  ir::Graph training(ir::Graph const& fwd, Precision p, Optimizer opt = Optimizer::sgd) {
    auto amp = apply_precision(fwd, *registry_, p);
    EXPECT_TRUE(amp.has_value()) << amp.error().to_string();
    TrainingOptions o;
    o.optimizer = opt;
    o.loss_scale = loss_scale(p);
    auto t = build_training_graph(*amp, *registry_, o);
    EXPECT_TRUE(t.has_value()) << t.error().to_string();
    return std::move(*t);
  }
  std::shared_ptr<ops::OpRegistry> registry_ = ops::OpRegistry::with_builtins();
};

TEST_F(Precision_, AmpRunsMatmulsInHalfAndKeepsWeightsAndLossInFp32) {
  auto fwd = forward("gpt:layers=1,hidden=64,heads=2,seq=16,vocab=50,batch=2");
  auto amp = apply_precision(fwd, *registry_, Precision::amp_bf16);
  ASSERT_TRUE(amp.has_value()) << amp.error().to_string();
  int half_ops = 0;
  for (auto const& op : amp->ops()) {
    if (op.type != "linear" && op.type != "batch_matmul") continue;
    ++half_ops;
    for (auto in : op.inputs)
      EXPECT_EQ(amp->tensor(in).type.dtype, ir::DType::bf16) << op.name;
  }
  EXPECT_GT(half_ops, 4);
  for (auto const& t : amp->tensors())
    if (!amp->producer(t.id).valid() && ir::is_floating(t.type.dtype))
      EXPECT_EQ(t.type.dtype, ir::DType::fp32) << t.name;  // master weights, inputs
  EXPECT_EQ(amp->tensor(*amp->find_tensor("loss")).type.dtype, ir::DType::fp32);
  // One cast per weight and dtype (autocast's cache), named after it.
  auto w = amp->find_tensor("h0.attn.query.weight.bf16");
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(amp->op(amp->producer(*w)).type, "cast");
  EXPECT_EQ(amp->consumers(*amp->find_tensor("h0.attn.query.weight")).size(), 1u);
}

TEST_F(Precision_, Fp32AndTf32AreTheGraphItself) {
  auto fwd = forward("mlp:layers=2,hidden=8,input=4,classes=3,batch=2");
  for (auto p : {Precision::fp32, Precision::tf32}) {
    auto g = apply_precision(fwd, *registry_, p);
    ASSERT_TRUE(g.has_value());
    EXPECT_EQ(g->num_ops(), fwd.num_ops());
  }
}

TEST_F(Precision_, AdamKeepsSixteenBytesPerParameterUnderEveryPrecision) {
  auto fwd = forward("mlp:layers=2,hidden=8,input=4,classes=3,batch=2");
  for (auto p : {Precision::fp32, Precision::amp_fp16, Precision::amp_bf16}) {
    auto t = training(fwd, p, Optimizer::adam);
    std::int64_t params = 0, weight_bytes = 0, state_bytes = 0;
    for (auto const& x : t.tensors()) {
      if (t.producer(x.id).valid()) continue;
      auto bytes = ir::num_elements(x.type.shape) * ir::dtype_bytes(x.type.dtype);
      if (x.role == ir::TensorRole::weight) {
        params += ir::num_elements(x.type.shape);
        weight_bytes += bytes;
      }
      if (x.role == ir::TensorRole::optimizer_state) state_bytes += bytes;
    }
    // fp32 weight + its fp32 gradient + Adam's two fp32 moments.
    EXPECT_EQ(2 * weight_bytes + state_bytes, 16 * params) << precision_name(p);
  }
}

TEST_F(Precision_, Fp16ScalesTheLossAndUnscalesEveryGradient) {
  auto fwd = forward("mlp:layers=2,hidden=8,input=4,classes=3,batch=2");
  auto fp16 = training(fwd, Precision::amp_fp16);
  auto seed = fp16.find_op("loss.grad_seed");
  ASSERT_TRUE(seed.has_value());
  EXPECT_EQ(fp16.op(*seed).attrs.get_float("value", 0), 65536.0);
  auto unscale = fp16.find_op("fc0.weight.grad_unscaled");
  ASSERT_TRUE(unscale.has_value());
  EXPECT_EQ(fp16.op(*unscale).attrs.get_float("alpha", 0), 1.0 / 65536);
  auto bf16 = training(fwd, Precision::amp_bf16);
  EXPECT_FALSE(bf16.find_op("fc0.weight.grad_unscaled").has_value());
}

// The same step in every precision when every dtype is computed alike: what `cleave run --check`
// compares (docs/precision.md).
TEST_F(Precision_, AmpComputesTheSameStep) {
  auto fwd = forward("mlp:layers=2,hidden=8,input=4,classes=3,batch=2");
  auto fp32 = training(fwd, Precision::fp32);
  auto amp = training(fwd, Precision::amp_fp16);
  std::mt19937_64 rng(7);
  std::map<std::string, tdl::TensorData, std::less<>> sources;
  for (auto const& t : fp32.tensors()) {
    if (fp32.producer(t.id).valid()) continue;
    std::vector<double> v(static_cast<std::size_t>(ir::num_elements(t.type.shape)));
    for (auto& x : v)
      x = t.name == "labels" ? static_cast<double>(rng() % 3)
                             : std::uniform_real_distribution<double>(-1, 1)(rng);
    sources.emplace(t.name, tdl::TensorData::whole(t.type.shape, std::move(v)));
  }
  auto a = ops::evaluate_graph(fp32, *registry_, sources);
  auto b = ops::evaluate_graph(amp, *registry_, sources);
  ASSERT_TRUE(a.has_value() && b.has_value());
  for (std::string name : {"fc0.weight.updated", "fc1.weight.updated", "loss"}) {
    auto const& x = (*a)[fp32.find_tensor(name)->value()].values;
    auto const& y = (*b)[amp.find_tensor(name)->value()].values;
    ASSERT_EQ(x.size(), y.size());
    for (std::size_t i = 0; i < x.size(); ++i)
      EXPECT_NEAR(x[i], y[i], 1e-12) << name;
  }
}

TEST_F(Precision_, BadInputIsAClearError) {
  auto bad = parse_precision("fp8");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().to_string().find("fp32, tf32, amp-fp16 or amp-bf16"), std::string::npos);
  auto half = forward("mlp:layers=2,hidden=8,input=4,classes=3,batch=2,dtype=fp16");
  auto amp = apply_precision(half, *registry_, Precision::amp_bf16);
  ASSERT_FALSE(amp.has_value());
  EXPECT_NE(amp.error().to_string().find("dtype=fp32"), std::string::npos);
}

}  // namespace
}  // namespace cleave::autodiff
