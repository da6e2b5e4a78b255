// Backward and optimizer ops record the forward op they belong to (Tofu groups them).
#include <gtest/gtest.h>

#include "fake_semantics.h"
#include "ir/graph_builder.h"
#include "ir/graph_json.h"

namespace cleave::ir {
namespace {

TensorType f32(Shape s) {
  return {std::move(s), DType::fp32};
}

struct Built {
  testing::FakeSemantics semantics;
  GraphBuilder builder{semantics};
  TensorId x, fwd_out;
  OpId fwd;
  Built() {
    x = *builder.add_source("x", f32({4}), TensorRole::input);
    fwd_out = *builder.add_op1({.type = "identity", .inputs = {x}, .name = "f"});
    fwd = OpId(0);
  }
};

TEST(ForwardLink, RoundTripsThroughJson) {
  Built b;
  auto grad = b.builder.add_op1({.type = "identity",
                                 .inputs = {b.fwd_out},
                                 .name = "f.grad",
                                 .output_roles = {TensorRole::gradient},
                                 .forward = b.fwd});
  ASSERT_TRUE(grad.has_value()) << grad.error().to_string();
  auto g = b.builder.finish();
  ASSERT_TRUE(g.has_value()) << g.error().to_string();
  EXPECT_EQ(g->op(OpId(1)).forward, b.fwd);
  EXPECT_FALSE(g->op(OpId(0)).forward.valid());
  std::string text = graph_to_json(*g);
  EXPECT_NE(text.find("\"outputs\":[2],\"forward\":0,"), std::string::npos) << text;
  auto back = graph_from_json(text, b.semantics);
  ASSERT_TRUE(back.has_value()) << back.error().to_string();
  EXPECT_TRUE(*back == *g);
  EXPECT_EQ(graph_to_json(*back), text);
}

TEST(ForwardLink, MustNameAnEarlierForwardOp) {
  Built b;
  auto ahead =
      b.builder.add_op1({.type = "identity", .inputs = {b.x}, .name = "g", .forward = OpId(7)});
  ASSERT_FALSE(ahead.has_value());
  EXPECT_NE(ahead.error().to_string().find("forward op id 7"), std::string::npos);

  // A backward op of a backward op is rejected when the graph is created.
  testing::FakeSemantics semantics;
  std::vector<Tensor> tensors = {{TensorId(0), "x", f32({4}), TensorRole::input},
                                 {TensorId(1), "a", f32({4}), TensorRole::activation},
                                 {TensorId(2), "b", f32({4}), TensorRole::gradient},
                                 {TensorId(3), "c", f32({4}), TensorRole::gradient}};
  std::vector<Op> ops = {{OpId(0), "a", "identity", {}, {TensorId(0)}, {TensorId(1)}, {}},
                         {OpId(1), "b", "identity", {}, {TensorId(1)}, {TensorId(2)}, OpId(0)},
                         {OpId(2), "c", "identity", {}, {TensorId(2)}, {TensorId(3)}, OpId(1)}};
  auto g = Graph::create(tensors, ops, semantics);
  ASSERT_FALSE(g.has_value());
  EXPECT_NE(g.error().message().find("must be another op that is itself a forward op"),
            std::string::npos)
      << g.error().message();
}

}  // namespace
}  // namespace cleave::ir
