#include <gtest/gtest.h>

#include "ir/fake_semantics.h"
#include "ir/graph_builder.h"

namespace cleave::ir {
namespace {

using testing::FakeSemantics;

TensorType f32(Shape shape) {
  return {std::move(shape), DType::fp32};
}

std::vector<OpId> ids_of(std::span<OpId const> ops) {
  return {ops.begin(), ops.end()};
}

class GraphBuilderTest : public ::testing::Test {
 protected:
  FakeSemantics semantics_;
  GraphBuilder builder_{semantics_};
};

TEST_F(GraphBuilderTest, BuildsAGraphWithLinksAndOrder) {
  TensorId x = *builder_.add_source("x", f32({64, 32}), TensorRole::input);
  TensorId w = *builder_.add_source("w", f32({32, 16}), TensorRole::weight);
  TensorId y = *builder_.add_op1({.type = "matmul2d", .inputs = {x, w}, .name = "mm"});
  auto halves = *builder_.add_op({.type = "split2", .inputs = {y}});
  TensorId z = *builder_.add_op1({.type = "add", .inputs = {halves[0], halves[1]}});
  TensorId z2 = *builder_.add_op1({.type = "identity",
                                   .inputs = {z},
                                   .output_names = {"out"},
                                   .output_roles = {TensorRole::gradient}});
  EXPECT_EQ(builder_.type_of(y), f32({64, 16}));
  EXPECT_EQ(builder_.num_ops(), 4u);

  auto graph = builder_.finish();
  ASSERT_TRUE(graph.has_value()) << graph.error().to_string();
  EXPECT_EQ(builder_.num_ops(), 0u);
  EXPECT_EQ(graph->num_tensors(), 7u);
  EXPECT_EQ(graph->num_ops(), 4u);

  // Default names: "<type>_<n>" for ops, "<op>" or "<op>:<i>" for outputs.
  EXPECT_EQ(graph->tensor(y).name, "mm");
  EXPECT_EQ(graph->tensor(halves[0]).name, "split2_1:0");
  EXPECT_EQ(graph->tensor(halves[1]).name, "split2_1:1");
  EXPECT_EQ(graph->tensor(z).name, "add_2");
  EXPECT_EQ(graph->tensor(z2).name, "out");
  EXPECT_EQ(graph->tensor(z2).role, TensorRole::gradient);
  EXPECT_EQ(graph->tensor(z).role, TensorRole::activation);
  EXPECT_EQ(graph->op(OpId(1)).name, "split2_1");

  EXPECT_FALSE(graph->producer(x).valid());
  EXPECT_EQ(graph->producer(y), OpId(0));
  EXPECT_EQ(graph->producer(halves[1]), OpId(1));
  EXPECT_EQ(ids_of(graph->consumers(x)), std::vector<OpId>{OpId(0)});
  EXPECT_EQ(ids_of(graph->consumers(halves[0])), std::vector<OpId>{OpId(2)});
  EXPECT_TRUE(graph->consumers(z2).empty());
  EXPECT_EQ(ids_of(graph->topo_order()), (std::vector<OpId>{OpId(0), OpId(1), OpId(2), OpId(3)}));

  EXPECT_EQ(graph->find_tensor("split2_1:1"), halves[1]);
  EXPECT_EQ(graph->find_op("mm"), OpId(0));
  EXPECT_EQ(graph->find_op("add_2"), OpId(2));
  EXPECT_FALSE(graph->find_tensor("nope").has_value());
  EXPECT_FALSE(graph->find_op("x").has_value());
}

TEST_F(GraphBuilderTest, OpReadingOneTensorTwiceIsOneConsumer) {
  TensorId x = *builder_.add_source("x", f32({4}), TensorRole::input);
  TensorId s = *builder_.add_op1({.type = "add", .inputs = {x, x}, .name = "double"});
  ASSERT_TRUE(builder_.add_op1({.type = "add", .inputs = {s, x}, .name = "again"}));
  auto graph = builder_.finish();
  ASSERT_TRUE(graph.has_value()) << graph.error().to_string();
  EXPECT_EQ(ids_of(graph->consumers(x)), (std::vector<OpId>{OpId(0), OpId(1)}));
  EXPECT_EQ(ids_of(graph->topo_order()), (std::vector<OpId>{OpId(0), OpId(1)}));
}

TEST_F(GraphBuilderTest, DefaultOpNamesSkipNamesAlreadyTaken) {
  TensorId x = *builder_.add_source("x", f32({4}), TensorRole::input);
  ASSERT_TRUE(builder_.add_op1({.type = "identity", .inputs = {x}, .name = "identity_1"}));
  TensorId y = *builder_.add_op1({.type = "identity", .inputs = {x}});
  auto graph = builder_.finish();
  ASSERT_TRUE(graph.has_value()) << graph.error().to_string();
  EXPECT_EQ(graph->op(graph->producer(y)).name, "identity_2");
}

TEST_F(GraphBuilderTest, RejectsUnknownInputWithoutAddingAnything) {
  TensorId x = *builder_.add_source("x", f32({4}), TensorRole::input);
  auto bad = builder_.add_op({.type = "add", .inputs = {x, TensorId(42)}, .name = "sum"});
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code(), ErrorCode::not_found);
  EXPECT_NE(bad.error().message().find("input 1 is tensor id 42"), std::string::npos)
      << bad.error().message();
  EXPECT_EQ(bad.error().context(), std::vector<std::string>{"in op 'sum' (add, id 0)"});
  EXPECT_EQ(builder_.num_ops(), 0u);
  // The name "sum" is still free.
  EXPECT_TRUE(builder_.add_op1({.type = "identity", .inputs = {x}, .name = "sum"}).has_value());
}

TEST_F(GraphBuilderTest, ShapeMismatchNamesTheOpAndKeepsTheSemanticsError) {
  TensorId a = *builder_.add_source("a", f32({8, 4}), TensorRole::input);
  TensorId b = *builder_.add_source("b", f32({5, 2}), TensorRole::weight);
  auto bad = builder_.add_op1({.type = "matmul2d", .inputs = {a, b}, .name = "proj"});
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code(), ErrorCode::shape_mismatch);
  EXPECT_NE(bad.error().message().find("fp32[8x4] and fp32[5x2]"), std::string::npos);
  EXPECT_EQ(bad.error().context(), std::vector<std::string>{"in op 'proj' (matmul2d, id 0)"});
  EXPECT_EQ(builder_.num_ops(), 0u);
  auto graph = builder_.finish();
  ASSERT_TRUE(graph.has_value());
  EXPECT_EQ(graph->num_tensors(), 2u);
}

TEST_F(GraphBuilderTest, RejectsDuplicateNames) {
  TensorId x = *builder_.add_source("x", f32({4}), TensorRole::input);
  auto again = builder_.add_source("x", f32({4}), TensorRole::weight);
  ASSERT_FALSE(again.has_value());
  EXPECT_EQ(again.error().code(), ErrorCode::invalid_argument);
  EXPECT_NE(again.error().message().find("'x' already exists"), std::string::npos);

  ASSERT_TRUE(builder_.add_op1({.type = "identity", .inputs = {x}, .name = "id"}).has_value());
  auto same_op =
      builder_.add_op1({.type = "identity", .inputs = {x}, .name = "id", .output_names = {"y"}});
  ASSERT_FALSE(same_op.has_value());
  EXPECT_NE(same_op.error().message().find("an op named 'id' already exists"), std::string::npos);

  auto same_tensor = builder_.add_op1({.type = "identity", .inputs = {x}, .output_names = {"x"}});
  ASSERT_FALSE(same_tensor.has_value());
  EXPECT_NE(same_tensor.error().message().find("cannot be named 'x'"), std::string::npos);

  auto twice = builder_.add_op({.type = "split2", .inputs = {x}, .output_names = {"p", "p"}});
  ASSERT_FALSE(twice.has_value());
  EXPECT_NE(twice.error().message().find("output 1 cannot be named 'p'"), std::string::npos);
  EXPECT_EQ(builder_.num_ops(), 1u);
}

TEST_F(GraphBuilderTest, RejectsSourcesWithComputedRolesOrBadShapes) {
  auto act = builder_.add_source("h", f32({4}), TensorRole::activation);
  ASSERT_FALSE(act.has_value());
  EXPECT_EQ(act.error().code(), ErrorCode::invalid_argument);
  EXPECT_NE(act.error().message().find("'h' has role activation"), std::string::npos);
  auto grad = builder_.add_source("g", f32({4}), TensorRole::gradient);
  ASSERT_FALSE(grad.has_value());
  EXPECT_NE(grad.error().message().find("'g' has role gradient"), std::string::npos);

  auto zero = builder_.add_source("z", f32({4, 0}), TensorRole::input);
  ASSERT_FALSE(zero.has_value());
  EXPECT_NE(zero.error().message().find("'z' has shape [4x0]"), std::string::npos);
  auto unnamed = builder_.add_source("", f32({4}), TensorRole::input);
  ASSERT_FALSE(unnamed.has_value());
  EXPECT_TRUE(builder_.add_source("s", f32({}), TensorRole::optimizer_state).has_value());
}

TEST_F(GraphBuilderTest, RejectsBadOutputNamesAndRoles) {
  TensorId x = *builder_.add_source("x", f32({4}), TensorRole::input);
  auto count = builder_.add_op({.type = "split2", .inputs = {x}, .output_names = {"only"}});
  ASSERT_FALSE(count.has_value());
  EXPECT_NE(count.error().message().find("1 output names given but the op has 2 outputs"),
            std::string::npos);
  auto role =
      builder_.add_op1({.type = "identity", .inputs = {x}, .output_roles = {TensorRole::input}});
  ASSERT_FALSE(role.has_value());
  EXPECT_NE(role.error().message().find("has role input"), std::string::npos);
  auto roles = builder_.add_op1({.type = "identity",
                                 .inputs = {x},
                                 .output_roles = {TensorRole::weight, TensorRole::weight}});
  ASSERT_FALSE(roles.has_value());
  EXPECT_NE(roles.error().message().find("2 output roles given but the op has 1 outputs"),
            std::string::npos);
  auto untyped = builder_.add_op({.inputs = {x}});
  ASSERT_FALSE(untyped.has_value());
  EXPECT_EQ(builder_.num_ops(), 0u);
}

TEST_F(GraphBuilderTest, AddOp1RejectsMultiOutputOpsWithoutAddingThem) {
  TensorId x = *builder_.add_source("x", f32({4}), TensorRole::input);
  auto bad = builder_.add_op1({.type = "split2", .inputs = {x}, .name = "sp"});
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code(), ErrorCode::invalid_argument);
  EXPECT_EQ(bad.error().message(),
            "the op has 2 outputs, but add_op1 is for ops with exactly one: use add_op");
  EXPECT_EQ(bad.error().context(), std::vector<std::string>{"in op 'sp' (split2, id 0)"});
  EXPECT_EQ(builder_.num_ops(), 0u);
  // The names are still free and the next tensor gets the next id.
  auto ok = builder_.add_op({.type = "split2", .inputs = {x}, .name = "sp"});
  ASSERT_TRUE(ok.has_value()) << ok.error().to_string();
  EXPECT_EQ((*ok)[0], TensorId(1));
  auto graph = builder_.finish();
  ASSERT_TRUE(graph.has_value()) << graph.error().to_string();
  EXPECT_EQ(graph->num_tensors(), 3u);
}

TEST_F(GraphBuilderTest, ManyNamesStayFindable) {
  // Enough names to make the builder's and the graph's name indexes grow several times.
  constexpr int n = 5000;
  TensorId x = *builder_.add_source("x", f32({2}), TensorRole::input);
  for (int i = 0; i < n; ++i) {
    ASSERT_TRUE(
        builder_.add_op1({.type = "identity", .inputs = {x}, .name = "id" + std::to_string(i)}));
  }
  auto duplicate = builder_.add_op1({.type = "identity", .inputs = {x}, .name = "id1234"});
  ASSERT_FALSE(duplicate.has_value());
  EXPECT_NE(duplicate.error().message().find("'id1234' already exists"), std::string::npos);
  auto graph = builder_.finish();
  ASSERT_TRUE(graph.has_value()) << graph.error().to_string();
  for (int i = 0; i < n; ++i) {
    std::string name = "id" + std::to_string(i);
    ASSERT_EQ(graph->find_op(name), OpId(i)) << name;
    ASSERT_EQ(graph->find_tensor(name), TensorId(i + 1)) << name;
  }
  EXPECT_FALSE(graph->find_op("id5000").has_value());
  EXPECT_EQ(ids_of(graph->consumers(x)).size(), static_cast<std::size_t>(n));
}

TEST_F(GraphBuilderTest, FinishLeavesTheBuilderEmptyAndReusable) {
  ASSERT_TRUE(builder_.add_source("x", f32({4}), TensorRole::input));
  ASSERT_TRUE(builder_.finish().has_value());
  EXPECT_EQ(builder_.num_ops(), 0u);
  // Names from the first graph no longer count.
  ASSERT_TRUE(builder_.add_source("x", f32({2}), TensorRole::input).has_value());
  auto second = builder_.finish();
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->num_tensors(), 1u);
  EXPECT_EQ(second->tensor(TensorId(0)).type, f32({2}));
}

}  // namespace
}  // namespace cleave::ir
