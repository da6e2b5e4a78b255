#include <algorithm>
#include <cmath>
#include <gtest/gtest.h>
#include <limits>
#include <numeric>
#include <random>

#include "ir/fake_semantics.h"
#include "ir/graph.h"
#include "ir/graph_json.h"

namespace cleave::ir {
namespace {

using testing::FakeSemantics;

// Hand-built graphs: tensors and ops as plain vectors, so every check of Graph::create can be hit
// directly (the builder would refuse most of these earlier).
struct Parts {
  std::vector<Tensor> tensors;
  std::vector<Op> ops;

  TensorId tensor(std::string name, Shape shape, TensorRole role = TensorRole::activation) {
    TensorId id(static_cast<TensorId::value_type>(tensors.size()));
    tensors.push_back({id, std::move(name), {std::move(shape), DType::fp32}, role});
    return id;
  }
  OpId op(std::string name, std::string type, std::vector<TensorId> inputs,
          std::vector<TensorId> outputs, Attrs attrs = {}) {
    OpId id(static_cast<OpId::value_type>(ops.size()));
    ops.push_back({id, std::move(name), std::move(type), std::move(attrs), std::move(inputs),
                   std::move(outputs)});
    return id;
  }
  Expected<Graph> create() const { return Graph::create(tensors, ops, FakeSemantics()); }
};

// x -> a:identity -> t1 -> b:identity -> t2, everything valid.
Parts chain() {
  Parts p;
  TensorId x = p.tensor("x", {4}, TensorRole::input);
  TensorId t1 = p.tensor("t1", {4});
  TensorId t2 = p.tensor("t2", {4});
  p.op("a", "identity", {x}, {t1});
  p.op("b", "identity", {t1}, {t2});
  return p;
}

void expect_error(Parts const& parts, ErrorCode code, std::string const& message) {
  auto graph = parts.create();
  ASSERT_FALSE(graph.has_value()) << "expected: " << message;
  EXPECT_EQ(graph.error().code(), code) << graph.error().to_string();
  EXPECT_EQ(graph.error().message(), message);
}

void expect_error_mentions(Parts const& parts, ErrorCode code, std::string const& fragment) {
  auto graph = parts.create();
  ASSERT_FALSE(graph.has_value()) << "expected: " << fragment;
  EXPECT_EQ(graph.error().code(), code) << graph.error().to_string();
  EXPECT_NE(graph.error().message().find(fragment), std::string::npos) << graph.error().message();
}

TEST(GraphCreate, AcceptsAValidChain) {
  auto graph = chain().create();
  ASSERT_TRUE(graph.has_value()) << graph.error().to_string();
  EXPECT_EQ(graph->num_ops(), 2u);
  EXPECT_EQ(graph->producer(TensorId(2)), OpId(1));
}

TEST(GraphCreate, EqualityComparesContents) {
  auto a = chain().create();
  auto b = chain().create();
  Parts renamed = chain();
  renamed.ops[1].name = "c";
  auto c = renamed.create();
  ASSERT_TRUE(a && b && c);
  EXPECT_TRUE(*a == *b);
  EXPECT_FALSE(*a == *c);
  Graph copy = *a;
  EXPECT_TRUE(copy == *a);
}

TEST(GraphCreate, RejectsNonDenseIds) {
  Parts tensors = chain();
  tensors.tensors[1].id = TensorId(5);
  expect_error(tensors, ErrorCode::invalid_argument,
               "tensor #1 ('t1') has id 5; tensor ids must be dense and equal to their positions "
               "(0, 1, 2, ...)");
  Parts ops = chain();
  ops.ops[0].id = OpId(1);
  expect_error_mentions(ops, ErrorCode::invalid_argument, "op #0 ('a') has id 1");
}

TEST(GraphCreate, RejectsEmptyAndDuplicateNames) {
  Parts empty = chain();
  empty.tensors[2].name = "";
  expect_error_mentions(empty, ErrorCode::invalid_argument, "tensor #2 has an empty name");
  Parts dup = chain();
  dup.tensors[2].name = "x";
  expect_error(dup, ErrorCode::invalid_argument,
               "two tensors are named 'x' (ids 0 and 2); tensor names must be unique");
  Parts dup_op = chain();
  dup_op.ops[1].name = "a";
  expect_error(dup_op, ErrorCode::invalid_argument,
               "two ops are named 'a' (ids 0 and 1); op names must be unique");
  Parts unnamed_op = chain();
  unnamed_op.ops[0].name = "";
  expect_error_mentions(unnamed_op, ErrorCode::invalid_argument, "op #0 has an empty name");
  Parts bad_utf8 = chain();
  bad_utf8.tensors[1].name = "t\xff";
  expect_error_mentions(bad_utf8, ErrorCode::invalid_argument, "tensor #1");
}

TEST(GraphCreate, RejectsInvalidShapes) {
  Parts p = chain();
  p.tensors[0].type.shape = {4, 0};
  expect_error_mentions(p, ErrorCode::invalid_argument, "tensor 'x' has shape [4x0]");
}

TEST(GraphCreate, RejectsUnknownTensorIds) {
  Parts p = chain();
  p.ops[1].inputs = {TensorId(9)};
  expect_error(p, ErrorCode::not_found,
               "op 'b' (identity): input 0 is tensor id 9, but the graph has only 3 tensors");
  Parts out = chain();
  out.ops[0].outputs.push_back(TensorId());
  expect_error_mentions(out, ErrorCode::not_found,
                        "op 'a' (identity): output 1 is tensor id <invalid>");
}

TEST(GraphCreate, RejectsTwoProducers) {
  Parts p = chain();
  p.ops[1].outputs = {TensorId(1)};
  p.ops[1].inputs = {TensorId(0)};
  expect_error(p, ErrorCode::invalid_argument,
               "tensor 't1' is produced by two ops, op 'a' (identity) and op 'b' (identity); every "
               "tensor must have at most one producer");
  Parts twice;
  TensorId x = twice.tensor("x", {4}, TensorRole::input);
  TensorId y = twice.tensor("y", {4});
  twice.op("sp", "split2", {x}, {y, y});
  expect_error(twice, ErrorCode::invalid_argument,
               "op 'sp' (split2) lists tensor 'y' twice among its outputs");
}

TEST(GraphCreate, RejectsSourcesThatMustBeComputedAndProducedInputs) {
  Parts p = chain();
  p.tensors[0].role = TensorRole::activation;
  expect_error_mentions(p, ErrorCode::invalid_argument,
                        "tensor 'x' (activation) has no producer; only input, weight and "
                        "optimizer_state tensors can be sources");
  Parts produced = chain();
  produced.tensors[2].role = TensorRole::input;
  expect_error_mentions(produced, ErrorCode::invalid_argument,
                        "tensor 't2' has role input but is produced by op 'b' (identity)");
  // Any other role may be produced, and weights and optimizer state may be sources.
  Parts fine = chain();
  fine.tensors[0].role = TensorRole::optimizer_state;
  fine.tensors[1].role = TensorRole::weight;
  fine.tensors[2].role = TensorRole::gradient;
  EXPECT_TRUE(fine.create().has_value());
}

TEST(GraphCreate, NamesACycle) {
  Parts p;
  TensorId x = p.tensor("x", {4}, TensorRole::input);
  TensorId t1 = p.tensor("t1", {4});
  TensorId t2 = p.tensor("t2", {4});
  TensorId t3 = p.tensor("t3", {4});
  TensorId out = p.tensor("out", {4});
  p.op("pre", "identity", {x}, {t3});
  p.op("a", "add", {t3, t2}, {t1});
  p.op("b", "identity", {t1}, {t2});
  p.op("post", "identity", {t1}, {out});
  expect_error(p, ErrorCode::cycle,
               "graph has a cycle: op 'a' -> tensor 't1' -> op 'b' -> tensor 't2' -> op 'a'; a "
               "training step must be acyclic: check the inputs of these ops");
}

TEST(GraphCreate, NamesASelfLoop) {
  Parts p;
  TensorId x = p.tensor("x", {4}, TensorRole::input);
  TensorId y = p.tensor("y", {4});
  p.op("loop", "add", {x, y}, {y});
  expect_error_mentions(p, ErrorCode::cycle,
                        "graph has a cycle: op 'loop' -> tensor 'y' -> op 'loop';");
}

TEST(GraphCreate, ShortensLongCycles) {
  Parts p;
  constexpr int n = 20;
  for (int i = 0; i < n; ++i)
    p.tensor("t" + std::to_string(i), {4});
  for (int i = 0; i < n; ++i) {
    p.op("op" + std::to_string(i), "identity", {TensorId((i + n - 1) % n)}, {TensorId(i)});
  }
  expect_error_mentions(p, ErrorCode::cycle,
                        "graph has a cycle of 20 ops: op 'op0' -> tensor 't0' -> op 'op1' -> "
                        "tensor 't1' -> op 'op2' -> tensor 't2' -> op 'op3' -> tensor 't3' -> op "
                        "'op4' -> tensor 't4' -> op 'op5' -> tensor 't5' -> ... -> op 'op19' -> "
                        "tensor 't19' -> op 'op0';");
}

TEST(GraphCreate, RejectsDeclaredOutputTypeMismatch) {
  Parts p;
  TensorId x = p.tensor("x", {64, 32}, TensorRole::input);
  TensorId w = p.tensor("w", {32, 32}, TensorRole::weight);
  TensorId y = p.tensor("y", {64, 16});
  p.op("mm", "matmul2d", {x, w}, {y});
  expect_error(p, ErrorCode::shape_mismatch,
               "op 'mm' (matmul2d): output 'y' is declared fp32[64x16] but its inputs give "
               "fp32[64x32]");
  Parts dtype = p;
  dtype.tensors[2].type = {{64, 32}, DType::bf16};
  expect_error_mentions(dtype, ErrorCode::shape_mismatch, "is declared bf16[64x32]");
  Parts count = p;
  count.tensors[2].type.shape = {64, 32};
  count.tensors.push_back({TensorId(3), "extra", {{64, 32}, DType::fp32}, TensorRole::activation});
  count.ops[0].outputs.push_back(TensorId(3));
  expect_error(count, ErrorCode::shape_mismatch,
               "op 'mm' (matmul2d): declares 2 outputs but its inputs give 1");
}

TEST(GraphCreate, ReportsTheEarliestMismatchAlongTheDataFlow) {
  // Op ids run against the data flow, so the first op in id order is the later one.
  Parts p;
  TensorId x = p.tensor("x", {4}, TensorRole::input);
  TensorId mid = p.tensor("mid", {5});
  TensorId out = p.tensor("out", {6});
  p.op("late", "identity", {mid}, {out});
  p.op("early", "identity", {x}, {mid});
  expect_error_mentions(p, ErrorCode::shape_mismatch, "op 'early' (identity): output 'mid'");
}

TEST(GraphCreate, WrapsSemanticsErrorsWithTheOp) {
  Parts p = chain();
  p.ops[1].type = "mystery";
  auto graph = p.create();
  ASSERT_FALSE(graph.has_value());
  EXPECT_EQ(graph.error().code(), ErrorCode::not_found);
  EXPECT_EQ(graph.error().message(), "unknown op type 'mystery'");
  EXPECT_EQ(graph.error().context(), std::vector<std::string>{"in op 'b' (mystery, id 1)"});
}

TEST(GraphCreate, RejectsNonFiniteFloatAttributes) {
  for (double bad :
       {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
        -std::numeric_limits<double>::infinity()}) {
    Parts p = chain();
    p.ops[1].attrs.set("alpha", bad);
    expect_error_mentions(p, ErrorCode::invalid_argument,
                          "op 'b' (identity): attribute 'alpha' is");
    auto graph = p.create();
    ASSERT_FALSE(graph.has_value());
    EXPECT_NE(graph.error().message().find("float attributes must be finite"), std::string::npos);
  }
}

TEST(GraphCreate, OrdersTopologicallyWithSmallestIdFirst) {
  // Ops listed against the data flow: the order must follow data, ties by smallest id.
  Parts p;
  TensorId x = p.tensor("x", {4}, TensorRole::input);
  TensorId a = p.tensor("a", {4});
  TensorId b = p.tensor("b", {4});
  TensorId c = p.tensor("c", {4});
  TensorId d = p.tensor("d", {4});
  p.op("join", "add", {b, c}, {d});     // 0
  p.op("right", "identity", {a}, {c});  // 1
  p.op("left", "identity", {a}, {b});   // 2
  p.op("first", "identity", {x}, {a});  // 3
  auto graph = p.create();
  ASSERT_TRUE(graph.has_value()) << graph.error().to_string();
  std::vector<OpId> order(graph->topo_order().begin(), graph->topo_order().end());
  EXPECT_EQ(order, (std::vector<OpId>{OpId(3), OpId(1), OpId(2), OpId(0)}));
  std::vector<OpId> readers(graph->consumers(a).begin(), graph->consumers(a).end());
  EXPECT_EQ(readers, (std::vector<OpId>{OpId(1), OpId(2)}));

  // An op that becomes ready later still goes before a larger id that was ready first (a FIFO
  // queue would give 1, 2, 0).
  Parts late;
  TensorId y = late.tensor("y", {4}, TensorRole::input);
  TensorId t = late.tensor("t", {4});
  TensorId u = late.tensor("u", {4});
  TensorId v = late.tensor("v", {4});
  late.op("after_t", "identity", {t}, {u});  // 0
  late.op("make_t", "identity", {y}, {t});   // 1
  late.op("other", "identity", {y}, {v});    // 2
  auto second = late.create();
  ASSERT_TRUE(second.has_value()) << second.error().to_string();
  std::vector<OpId> second_order(second->topo_order().begin(), second->topo_order().end());
  EXPECT_EQ(second_order, (std::vector<OpId>{OpId(1), OpId(0), OpId(2)}));
}

TEST(GraphCreate, AcceptsOpsWithoutInputsAndEmptyGraphs) {
  Parts p;
  TensorId s = p.tensor("s", {});
  p.op("c", "const", {}, {s}, Attrs{{"dtype", std::string("fp32")}});
  auto graph = p.create();
  ASSERT_TRUE(graph.has_value()) << graph.error().to_string();
  EXPECT_EQ(graph->topo_order().size(), 1u);
  auto empty = Parts().create();
  ASSERT_TRUE(empty.has_value());
  EXPECT_EQ(empty->num_tensors(), 0u);
  EXPECT_TRUE(empty->topo_order().empty());
}

// A random DAG of identity/add/split2 ops over fp32[4] tensors, with op ids shuffled so that the
// listed order is rarely topological.
Parts random_dag(std::mt19937& rng, int num_ops) {
  Parts p;
  std::vector<TensorId> available;
  for (int i = 0; i < 3; ++i) {
    available.push_back(p.tensor("in" + std::to_string(i), {4}, TensorRole::input));
  }
  struct Planned {
    std::string type;
    std::vector<TensorId> inputs;
    std::vector<TensorId> outputs;
  };
  std::vector<Planned> planned;
  for (int i = 0; i < num_ops; ++i) {
    auto pick = [&] { return available[rng() % available.size()]; };
    Planned op;
    int kind = static_cast<int>(rng() % 3);
    op.type = kind == 0 ? "identity" : kind == 1 ? "add" : "split2";
    op.inputs = kind == 1 ? std::vector<TensorId>{pick(), pick()} : std::vector<TensorId>{pick()};
    for (int k = 0; k < (kind == 2 ? 2 : 1); ++k) {
      op.outputs.push_back(p.tensor("t" + std::to_string(p.tensors.size()), {4}));
    }
    available.insert(available.end(), op.outputs.begin(), op.outputs.end());
    planned.push_back(std::move(op));
  }
  std::vector<int> order(planned.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  for (int i : order) {
    p.op("op" + std::to_string(i), planned[i].type, planned[i].inputs, planned[i].outputs);
  }
  return p;
}

TEST(GraphCreate, RandomDagsHaveConsistentLinksOrderAndJson) {
  std::mt19937 rng(/*seed=*/20240611);
  FakeSemantics semantics;
  for (int round = 0; round < 50; ++round) {
    Parts parts = random_dag(rng, 1 + round * 3);
    auto graph = parts.create();
    ASSERT_TRUE(graph.has_value()) << graph.error().to_string();

    // Every op comes after the producers of its inputs, and each op appears once.
    std::vector<std::size_t> position(graph->num_ops(), graph->num_ops());
    for (std::size_t k = 0; k < graph->topo_order().size(); ++k) {
      position[graph->topo_order()[k].value()] = k;
    }
    for (Op const& op : graph->ops()) {
      ASSERT_LT(position[op.id.value()], graph->num_ops());
      for (TensorId in : op.inputs) {
        OpId producer = graph->producer(in);
        if (producer.valid()) {
          EXPECT_LT(position[producer.value()], position[op.id.value()]);
        }
        auto readers = graph->consumers(in);
        EXPECT_TRUE(std::find(readers.begin(), readers.end(), op.id) != readers.end());
      }
      for (TensorId out : op.outputs)
        EXPECT_EQ(graph->producer(out), op.id);
    }
    // Consumer lists are sorted and hold no op twice.
    for (Tensor const& t : graph->tensors()) {
      auto readers = graph->consumers(t.id);
      EXPECT_TRUE(std::adjacent_find(readers.begin(), readers.end(),
                                     [](OpId a, OpId b) { return a >= b; }) == readers.end());
      EXPECT_EQ(graph->find_tensor(t.name), t.id);
    }
    std::string text = graph_to_json(*graph);
    auto back = graph_from_json(text, semantics);
    ASSERT_TRUE(back.has_value()) << back.error().to_string();
    EXPECT_TRUE(*back == *graph);
    EXPECT_EQ(graph_to_json(*back), text);
  }
}

}  // namespace
}  // namespace cleave::ir
