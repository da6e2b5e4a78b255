// Compatibility: graph files written by each format version are still read, verified against the
// built-in ops' semantics, and written back byte for byte (STYLE.md #9).
#include <gtest/gtest.h>

#include "ir/graph_json.h"
#include "ops/op_registry.h"
#include "support/file_io.h"

namespace cleave::ops {
namespace {

TEST(GoldenGraph, Version1ReadsVerifiesAndRewritesExactly) {
  std::string path = std::string(CLEAVE_GOLDEN_DIR) + "/graph_v1.json";
  auto registry = OpRegistry::with_builtins();
  auto text = read_file(path);
  ASSERT_TRUE(text.has_value()) << text.error().to_string();
  auto graph = ir::graph_from_json(*text, *registry);
  ASSERT_TRUE(graph.has_value()) << graph.error().to_string();
  EXPECT_EQ(graph->num_ops(), 10u);
  EXPECT_EQ(graph->num_tensors(), 17u);
  auto conv = graph->find_op("conv");
  ASSERT_TRUE(conv.has_value());
  EXPECT_EQ(graph->op(*conv).attrs.get_ints("stride", {}), (std::vector<std::int64_t>{2, 2}));
  auto loss = graph->find_tensor("loss");
  ASSERT_TRUE(loss.has_value());
  EXPECT_TRUE(graph->tensor(*loss).type.shape.empty());
  EXPECT_EQ(ir::graph_to_json(*graph), *text);
}

}  // namespace
}  // namespace cleave::ops
