#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <gtest/gtest.h>
#include <limits>
#include <random>

#include "ir/fake_semantics.h"
#include "ir/graph_builder.h"
#include "ir/graph_json.h"
#include "support/file_io.h"

namespace cleave::ir {
namespace {

using testing::FakeSemantics;
using Ints = std::vector<std::int64_t>;

class GraphJsonTest : public ::testing::Test {
 protected:
  // Every dtype, every role, scalars, attributes of every kind and awkward text.
  Graph rich_graph() const {
    GraphBuilder b(semantics_);
    TensorId x = *b.add_source("x \"quoted\"", {{64, 32}, DType::fp32}, TensorRole::input);
    TensorId w = *b.add_source("w/é日本🎉", {{32, 16}, DType::fp32}, TensorRole::weight);
    TensorId h = *b.add_source("half", {{3}, DType::fp16}, TensorRole::input);
    TensorId m = *b.add_source("moment", {{3}, DType::bf16}, TensorRole::optimizer_state);
    EXPECT_TRUE(b.add_source("count", {{}, DType::int64}, TensorRole::optimizer_state));
    EXPECT_TRUE(b.add_source("labels", {{7, 1, 2}, DType::int32}, TensorRole::input));
    Attrs attrs{{"i", std::int64_t{-3}},
                {"imax", std::numeric_limits<std::int64_t>::max()},
                {"imin", std::numeric_limits<std::int64_t>::min()},
                {"tenth", 0.1},
                {"tiny", 1e-300},
                {"denormal", 5e-324},
                {"one", 1.0},
                {"negzero", -0.0},
                {"huge", 1.7976931348623157e308},
                {"odd", 123456789.125},
                {"text", std::string("line1\nline2\t\"q\" \\ \x01 é 日本 🎉")},
                {"empty_text", std::string()},
                {"list", Ints{1, -2, 3}},
                {"empty_list", Ints{}}};
    TensorId y = *b.add_op1({.type = "matmul2d", .inputs = {x, w}, .attrs = attrs, .name = "mm"});
    auto halves = *b.add_op({.type = "split2",
                             .inputs = {y},
                             .output_names = {"g\nrad", "again"},
                             .output_roles = {TensorRole::gradient, TensorRole::weight}});
    EXPECT_TRUE(b.add_op1({.type = "add", .inputs = {halves[0], halves[1]}}));
    EXPECT_TRUE(b.add_op1({.type = "identity", .inputs = {h}}));
    EXPECT_TRUE(b.add_op1(
        {.type = "identity", .inputs = {m}, .output_roles = {TensorRole::optimizer_state}}));
    EXPECT_TRUE(
        b.add_op1({.type = "const", .attrs = {{"dtype", std::string("int64")}}, .name = "step"}));
    auto graph = b.finish();
    EXPECT_TRUE(graph.has_value()) << graph.error().to_string();
    return std::move(graph).value();
  }

  Expected<Graph> read(std::string_view text) const { return graph_from_json(text, semantics_); }

  // Expects reading `text` to fail with `code` and a message containing `fragment`.
  void expect_error(std::string_view text, ErrorCode code, std::string const& fragment) const {
    auto graph = read(text);
    ASSERT_FALSE(graph.has_value()) << text;
    EXPECT_EQ(graph.error().code(), code) << graph.error().to_string();
    EXPECT_NE(graph.error().message().find(fragment), std::string::npos)
        << "message: " << graph.error().message() << "\nexpected to contain: " << fragment;
  }

  FakeSemantics semantics_;
};

constexpr char small_json[] =
    "{\"format\":\"cleave.graph/1\",\"tensors\":[\n"
    "{\"id\":0,\"name\":\"x\",\"shape\":[64,32],\"dtype\":\"fp32\",\"role\":\"input\"},\n"
    "{\"id\":1,\"name\":\"w\",\"shape\":[32,16],\"dtype\":\"fp32\",\"role\":\"weight\"},\n"
    "{\"id\":2,\"name\":\"mm\",\"shape\":[64,16],\"dtype\":\"fp32\",\"role\":\"activation\"}\n"
    "],\"ops\":[\n"
    "{\"id\":0,\"name\":\"mm\",\"type\":\"matmul2d\",\"inputs\":[0,1],\"outputs\":[2],"
    "\"attrs\":{\"alpha\":1.0,\"mode\":\"fast\",\"pads\":[1,2],\"transpose_b\":1}}\n"
    "]}\n";

TEST_F(GraphJsonTest, WritesTheDocumentedLayout) {
  GraphBuilder b(semantics_);
  TensorId x = *b.add_source("x", {{64, 32}, DType::fp32}, TensorRole::input);
  TensorId w = *b.add_source("w", {{32, 16}, DType::fp32}, TensorRole::weight);
  Attrs attrs{{"transpose_b", std::int64_t{1}},
              {"alpha", 1.0},
              {"mode", std::string("fast")},
              {"pads", Ints{1, 2}}};
  ASSERT_TRUE(b.add_op1({.type = "matmul2d", .inputs = {x, w}, .attrs = attrs, .name = "mm"}));
  auto graph = b.finish();
  ASSERT_TRUE(graph.has_value());
  EXPECT_EQ(graph_to_json(*graph), small_json);
}

TEST_F(GraphJsonTest, WritesAnEmptyGraph) {
  auto empty = read("{\"format\":\"cleave.graph/1\",\"tensors\":[],\"ops\":[]}");
  ASSERT_TRUE(empty.has_value()) << empty.error().to_string();
  EXPECT_EQ(graph_to_json(*empty), "{\"format\":\"cleave.graph/1\",\"tensors\":[],\"ops\":[]}\n");
}

TEST_F(GraphJsonTest, RoundTripsExactly) {
  Graph graph = rich_graph();
  std::string text = graph_to_json(graph);
  auto back = read(text);
  ASSERT_TRUE(back.has_value()) << back.error().to_string();
  EXPECT_TRUE(*back == graph);
  EXPECT_EQ(graph_to_json(*back), text);

  // Types survive, not just values: 1.0 stays a float, -0.0 keeps its sign, lists stay lists.
  Attrs const& attrs = back->op(*back->find_op("mm")).attrs;
  EXPECT_TRUE(std::holds_alternative<double>(*attrs.find("one")));
  EXPECT_TRUE(std::signbit(attrs.get_float("negzero", 1.0)));
  EXPECT_EQ(attrs.get_float("tenth", 0), 0.1);
  EXPECT_EQ(attrs.get_float("tiny", 0), 1e-300);
  EXPECT_EQ(attrs.get_float("denormal", 0), 5e-324);
  EXPECT_TRUE(std::holds_alternative<Ints>(*attrs.find("empty_list")));
  EXPECT_EQ(attrs.get_string("text", ""), "line1\nline2\t\"q\" \\ \x01 é 日本 🎉");
  EXPECT_EQ(back->tensor(*back->find_tensor("count")).type.shape, Shape{});
  EXPECT_TRUE(back->find_tensor("w/é日本🎉").has_value());
  EXPECT_EQ(back->tensor(*back->find_tensor("g\nrad")).role, TensorRole::gradient);
}

// A large graph file's reading reports each op read, then its check (a shell's progress line).
TEST_F(GraphJsonTest, ReportsProgressOpByOp) {
  Graph graph = rich_graph();
  std::vector<std::pair<std::string, std::int64_t>> told;
  auto back = graph_from_json(graph_to_json(graph), semantics_, [&](WorkProgress const& p) {
    told.emplace_back(std::string(p.stage), p.done);
  });
  ASSERT_TRUE(back.has_value()) << back.error().to_string();
  ASSERT_EQ(told.size(), graph.num_ops() + 1);
  for (std::size_t i = 0; i < graph.num_ops(); ++i)
    EXPECT_EQ(told[i], std::make_pair(std::string("reading ops"), std::int64_t(i)));
  EXPECT_EQ(told.back().first, "checking ops and shapes");
}

TEST_F(GraphJsonTest, EscapesTextAndSpellsFloatsShortest) {
  std::string text = graph_to_json(rich_graph());
  EXPECT_NE(text.find("\"tenth\":0.1,"), std::string::npos);
  EXPECT_NE(text.find("\"tiny\":1e-300}"), std::string::npos);
  EXPECT_NE(text.find("\"one\":1.0,"), std::string::npos);
  EXPECT_NE(text.find("\"negzero\":-0.0,"), std::string::npos);
  EXPECT_NE(text.find("\"imin\":-9223372036854775808,"), std::string::npos);
  EXPECT_NE(text.find("\"line1\\nline2\\t\\\"q\\\" \\\\ \\u0001 é"), std::string::npos);
  EXPECT_NE(text.find("\"name\":\"x \\\"quoted\\\"\""), std::string::npos);
  // One element per line: tensors + ops + the two closing brackets + the header line.
  Graph graph = rich_graph();
  auto lines = std::count(text.begin(), text.end(), '\n');
  EXPECT_EQ(static_cast<std::size_t>(lines), graph.num_tensors() + graph.num_ops() + 3);
}

TEST_F(GraphJsonTest, AcceptsKeysInAnyOrderAndOpsOutOfTopologicalOrder) {
  std::string text =
      R"({"ops":[
         {"attrs":{},"outputs":[2],"inputs":[1],"type":"identity","name":"second","id":0},
         {"outputs":[1],"inputs":[0],"id":1,"name":"first","type":"identity","attrs":{}}],
        "tensors":[
         {"role":"input","dtype":"fp16","shape":[2,2],"name":"x","id":0},
         {"id":1,"name":"mid","shape":[2,2],"dtype":"fp16","role":"activation"},
         {"id":2,"name":"out","shape":[2,2],"dtype":"fp16","role":"activation"}],
        "format":"cleave.graph/1"})";
  auto graph = read(text);
  ASSERT_TRUE(graph.has_value()) << graph.error().to_string();
  std::vector<OpId> order(graph->topo_order().begin(), graph->topo_order().end());
  EXPECT_EQ(order, (std::vector<OpId>{OpId(1), OpId(0)}));
  EXPECT_EQ(graph->producer(TensorId(2)), OpId(0));
  auto again = read(graph_to_json(*graph));
  ASSERT_TRUE(again.has_value());
  EXPECT_TRUE(*again == *graph);
}

TEST_F(GraphJsonTest, EveryTruncationIsAnError) {
  std::string text = graph_to_json(rich_graph());
  // All but the final newline: dropping only that leaves a complete document.
  for (std::size_t length = 0; length + 1 < text.size(); ++length) {
    auto graph = read(std::string_view(text).substr(0, length));
    ASSERT_FALSE(graph.has_value()) << "prefix of " << length << " bytes was accepted";
    EXPECT_EQ(graph.error().code(), ErrorCode::parse_error) << length;
    EXPECT_NE(graph.error().message().find("malformed JSON at byte"), std::string::npos)
        << graph.error().message();
    EXPECT_NE(graph.error().message().find("truncated"), std::string::npos);
  }
  EXPECT_TRUE(read(std::string_view(text).substr(0, text.size() - 1)).has_value());
}

TEST_F(GraphJsonTest, CorruptedBytesGiveErrorsOrValidGraphs) {
  // Each corrupted text must be rejected cleanly or read as a graph that round-trips; under the
  // sanitizer build this also checks that no input makes the reader touch bad memory.
  std::string const text = graph_to_json(rich_graph());
  std::mt19937 rng(/*seed=*/7);
  std::string_view alphabet = "{}[]\",:0123456789.-eE xtnlf\\\x01\xc3\xff";
  int rejected = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string corrupted = text;
    for (int k = 0; k < 1 + round % 3; ++k) {
      corrupted[rng() % corrupted.size()] = alphabet[rng() % alphabet.size()];
    }
    auto graph = read(corrupted);
    if (!graph) {
      ++rejected;
      EXPECT_FALSE(graph.error().message().empty());
      continue;
    }
    EXPECT_TRUE(read(graph_to_json(*graph)).has_value());
  }
  EXPECT_GT(rejected, 2000);
}

TEST_F(GraphJsonTest, SyntaxErrorsGiveTheByteOffset) {
  expect_error(R"({"format":"cleave.graph/1",,})", ErrorCode::parse_error,
               "malformed JSON at byte 27: ");
  expect_error("", ErrorCode::parse_error, "malformed JSON at byte 0");
  expect_error(std::string(small_json) + "{}", ErrorCode::parse_error, "malformed JSON at byte");
  expect_error("{\"format\":\"\xff\"}", ErrorCode::parse_error, "malformed JSON at byte 11");
}

TEST_F(GraphJsonTest, RejectsOtherFormats) {
  expect_error(R"({"format":"cleave.graph/2","tensors":[],"ops":[]})", ErrorCode::unsupported,
               "the file's format is \"cleave.graph/2\" but cleave reads \"cleave.graph/1\"; the "
               "file may be from another tool or a newer cleave");
  expect_error(R"({"tensors":[],"ops":[]})", ErrorCode::parse_error, "missing key 'format'");
  expect_error(R"({"nodes":[],"edges":[]})", ErrorCode::parse_error,
               "not a cleave graph: no \"format\": \"cleave.graph/1\" before the first problem "
               "(top level: unknown key 'nodes'; expected format, tensors, ops); the file may be "
               "from another tool or a newer cleave");
  expect_error("[1,2]", ErrorCode::parse_error,
               "(the document: expected an object, found an array)");
  expect_error(R"({"format":7})", ErrorCode::parse_error,
               "top level, key 'format': expected a string, found an integer");
}

// small_json with `from` replaced by `to` (which must occur once).
std::string edited(std::string const& from, std::string const& to) {
  std::string text = small_json;
  auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  EXPECT_EQ(text.find(from, at + 1), std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

TEST_F(GraphJsonTest, ReadsTheSmallDocument) {
  auto graph = read(small_json);
  ASSERT_TRUE(graph.has_value()) << graph.error().to_string();
  EXPECT_EQ(graph_to_json(*graph), small_json);
}

TEST_F(GraphJsonTest, RejectsMissingAndUnknownKeys) {
  expect_error(edited(R"(,"role":"weight")", ""), ErrorCode::parse_error,
               "tensor 1 ('w'): missing key 'role'");
  expect_error(edited(R"("inputs":[0,1],)", ""), ErrorCode::parse_error,
               "op 0 ('mm'): missing key 'inputs'");
  expect_error(edited(R"(,"ops":[)", R"(,"opz":[)"), ErrorCode::parse_error,
               "top level: unknown key 'opz'; expected format, tensors, ops");
  expect_error(edited(R"("dtype":"fp32","role":"input")", R"("dtype":"fp32","role":"input","x":1)"),
               ErrorCode::parse_error,
               "tensor 0 ('x'): unknown key 'x'; expected id, name, shape, dtype, role");
  expect_error(edited(R"("type":"matmul2d")", R"("type":"matmul2d","name":"again")"),
               ErrorCode::parse_error, "op 0 ('mm'): key 'name' appears twice");
  expect_error(edited(R"("mode":"fast")", R"("mode":"fast","alpha":2.0)"), ErrorCode::parse_error,
               "op 0 ('mm'): attribute 'alpha' appears twice");
}

TEST_F(GraphJsonTest, RejectsWrongTypesNamingTheElementAndKey) {
  expect_error(edited("[64,32]", R"("64x32")"), ErrorCode::parse_error,
               "tensor 0 ('x'), key 'shape': expected an array of integer dimensions, found a "
               "string");
  expect_error(
      edited("[64,32]", "[64,3.5]"), ErrorCode::parse_error,
      "tensor 0 ('x'), key 'shape': expected an array of integer dimensions, found a float");
  expect_error(edited(R"("id":1)", R"("id":"1")"), ErrorCode::parse_error,
               "tensor 1, key 'id': expected a non-negative integer, found a string");
  expect_error(edited(R"("id":1)", R"("id":-1)"), ErrorCode::parse_error,
               "tensor 1, key 'id': an id must be an integer from 0 to 4294967294");
  expect_error(edited("[0,1]", "[0,true]"), ErrorCode::parse_error,
               "op 0 ('mm'), key 'inputs': expected an array of tensor ids, found a boolean");
  expect_error(edited(R"("outputs":[2])", R"("outputs":2)"), ErrorCode::parse_error,
               "op 0 ('mm'), key 'outputs': expected an array of tensor ids, found an integer");
  expect_error(edited(R"("name":"mm","type")", R"("name":null,"type")"), ErrorCode::parse_error,
               "op 0, key 'name': expected a string, found null");
  expect_error(edited(R"("pads":[1,2])", R"("pads":[1,"2"])"), ErrorCode::parse_error,
               "op 0 ('mm'), attribute 'pads': expected an array of integers, found a string");
  expect_error(edited(R"("pads":[1,2])", R"("pads":{})"), ErrorCode::parse_error,
               "op 0 ('mm'), attribute 'pads': expected an integer, a float, a string or an array "
               "of integers, found an object");
  expect_error(edited(R"("transpose_b":1)", R"("transpose_b":99999999999999999999)"),
               ErrorCode::parse_error, "found an integer too large for 64 bits");
  expect_error(edited(R"("transpose_b":1)", R"("transpose_b":9223372036854775808)"),
               ErrorCode::parse_error, "found an integer too large for 64 bits");
  expect_error(edited(R"("tensors":[)", R"("tensors":[7,)"), ErrorCode::parse_error,
               "the tensors array: expected a tensor object, found an integer");
  expect_error(edited(R"("attrs":{)", R"("attrs":[],"x":{)"), ErrorCode::parse_error,
               "op 0 ('mm'), key 'attrs': expected an object of attributes, found an array");
}

TEST_F(GraphJsonTest, RejectsUnknownDtypesAndRoles) {
  expect_error(edited(R"("dtype":"fp32","role":"weight")", R"("dtype":"fp8","role":"weight")"),
               ErrorCode::parse_error,
               "tensor 1 ('w'), key 'dtype': unknown dtype 'fp8'; expected fp32, fp16, bf16, int32 "
               "or int64");
  expect_error(edited(R"("role":"weight")", R"("role":"param")"), ErrorCode::parse_error,
               "tensor 1 ('w'), key 'role': unknown role 'param'");
}

TEST_F(GraphJsonTest, RunsTheGraphChecksAfterReading) {
  expect_error(edited("[0,1]", "[2,1]"), ErrorCode::cycle,
               "graph has a cycle: op 'mm' -> tensor 'mm' -> op 'mm'");
  std::string cyclic =
      R"({"format":"cleave.graph/1","tensors":[
         {"id":0,"name":"a","shape":[2],"dtype":"fp32","role":"activation"},
         {"id":1,"name":"b","shape":[2],"dtype":"fp32","role":"activation"}],"ops":[
         {"id":0,"name":"f","type":"identity","inputs":[1],"outputs":[0],"attrs":{}},
         {"id":1,"name":"g","type":"identity","inputs":[0],"outputs":[1],"attrs":{}}]})";
  expect_error(cyclic, ErrorCode::cycle,
               "graph has a cycle: op 'f' -> tensor 'a' -> op 'g' -> tensor 'b' -> op 'f'");
  expect_error(edited(R"("shape":[64,16])", R"("shape":[64,15])"), ErrorCode::shape_mismatch,
               "op 'mm' (matmul2d): output 'mm' is declared fp32[64x15] but its inputs give "
               "fp32[64x16]");
  expect_error(edited(R"("id":2,)", R"("id":3,)"), ErrorCode::invalid_argument,
               "tensor #2 ('mm') has id 3");
  expect_error(edited("[0,1]", "[0,5]"), ErrorCode::not_found, "input 1 is tensor id 5");
  expect_error(edited(R"("shape":[64,32])", R"("shape":[64,0])"), ErrorCode::invalid_argument,
               "tensor 'x' has shape [64x0]");
  expect_error(edited(R"("alpha":1.0)", R"("alpha":1e999)"), ErrorCode::parse_error,
               "malformed JSON");
}

class GraphFileTest : public GraphJsonTest {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() / ("cleave_ir_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(GraphFileTest, SavesAndLoads) {
  Graph graph = rich_graph();
  std::string path = (dir_ / "g.json").string();
  ASSERT_TRUE(save_graph(graph, path).is_ok());
  auto text = read_file(path);
  ASSERT_TRUE(text.has_value());
  EXPECT_EQ(*text, graph_to_json(graph));
  auto loaded = load_graph(path, semantics_);
  ASSERT_TRUE(loaded.has_value()) << loaded.error().to_string();
  EXPECT_TRUE(*loaded == graph);
}

TEST_F(GraphFileTest, LoadErrorsNameTheFile) {
  std::string missing = (dir_ / "missing.json").string();
  auto none = load_graph(missing, semantics_);
  ASSERT_FALSE(none.has_value());
  EXPECT_EQ(none.error().code(), ErrorCode::io_error);
  EXPECT_EQ(none.error().context().back(), "in graph file '" + missing + "'");

  std::string bad = (dir_ / "bad.json").string();
  ASSERT_TRUE(write_file_atomic(bad, R"({"format":"cleave.graph/1","tensors":[)").is_ok());
  auto broken = load_graph(bad, semantics_);
  ASSERT_FALSE(broken.has_value());
  EXPECT_EQ(broken.error().code(), ErrorCode::parse_error);
  EXPECT_NE(broken.error().message().find("truncated"), std::string::npos);
  EXPECT_EQ(broken.error().context(), std::vector<std::string>{"in graph file '" + bad + "'"});
}

}  // namespace
}  // namespace cleave::ir
