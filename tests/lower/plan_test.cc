#include <gtest/gtest.h>
#include <tuple>

#include "ir/graph_builder.h"
#include "ir/graph_json.h"
#include "models/model_zoo.h"
#include "plan/plan_json.h"

namespace cleave::plan {
namespace {

TEST(PlanJson, RoundTripsAndRejectsBadFiles) {
  auto registry = ops::OpRegistry::with_builtins();
  auto g = *models::ModelZoo::with_builtins().build(
      "mlp:layers=1,hidden=4,input=3,classes=2,batch=4", *registry);
  Plan p = single_device_plan(g, *registry);
  p.num_devices = 2;
  p.cluster = "cpu:devices=2";
  p.ops[0].degrees[0] = 2;
  p.ops[0].devices = {0, 1};
  p.provenance = {"test",       "{\"x\":1}",  42,    0.5,         {},
                  std::nullopt, std::nullopt, false, std::nullopt};
  ASSERT_TRUE(validate(p, g, *registry).is_ok());
  std::string text = plan_to_json(p);
  auto back = plan_from_json(text);
  ASSERT_TRUE(back.has_value()) << back.error().to_string();
  EXPECT_EQ(plan_to_json(*back), text);
  EXPECT_EQ(back->ops[0].devices, (std::vector<int>{0, 1}));
  EXPECT_EQ(back->provenance.seed, 42u);
  EXPECT_EQ(back->graph_fingerprint, ir::graph_fingerprint(g));
  EXPECT_EQ(back->fetch, FetchPolicy::shared);
  // The fetch policy: written, read back; absent (older plans) is shared; anything else an error.
  p.fetch = FetchPolicy::per_pass;
  EXPECT_EQ(plan_from_json(plan_to_json(p))->fetch, FetchPolicy::per_pass);
  std::string old = text;
  old.erase(old.find("\"fetch\":\"shared\","), std::string("\"fetch\":\"shared\",").size());
  EXPECT_EQ(plan_from_json(old)->fetch, FetchPolicy::shared);
  std::string bad = text;
  bad.replace(bad.find("\"shared\""), 8, "\"lazy\"");
  auto rejected = plan_from_json(bad);
  ASSERT_FALSE(rejected.has_value());
  EXPECT_NE(rejected.error().message().find("\"fetch\" is \"lazy\""), std::string::npos)
      << rejected.error().message();

  EXPECT_FALSE(plan_from_json(text.substr(0, text.size() / 2)).has_value());
  EXPECT_FALSE(plan_from_json("{\"format\":\"cleave.graph/1\"}").has_value());
  auto missing = plan_from_json("{\"format\":\"cleave.plan/1\",\"graph\":\"x\"}");
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().message().find("malformed plan"), std::string::npos);
}

// Every integer of a plan is checked against the range of its field (issue 23, found by
// fuzz/plan_json_fuzz.cc): a device count of 1e300 was undefined behaviour, a negative seed a huge
// one. Each is an error naming the range and the value.
TEST(PlanJson, IntegersOutsideTheirFieldsRangeAreErrors) {
  auto registry = ops::OpRegistry::with_builtins();
  auto g = *models::ModelZoo::with_builtins().build(
      "mlp:layers=1,hidden=4,input=3,classes=2,batch=4", *registry);
  std::string const text = plan_to_json(single_device_plan(g, *registry));
  auto with = [&](std::string const& from, std::string const& to) {
    std::string t = text;
    auto at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return plan_from_json(t.replace(at, from.size(), to));
  };
  for (auto const& [from, to, message] :
       {std::tuple{"\"devices\":1,", "\"devices\":1e300,",
                   "[-2147483648, 2147483647], found 1e+300"},
        {"\"devices\":1,", "\"devices\":4294967296,", "found 4294967296"},
        {"\"seed\":0", "\"seed\":-1", "[0, 18446744073709551615], found -1"},
        {"\"degrees\":[", "\"degrees\":[0.5,", "found 0.5"},
        {"\"degrees\":[", "\"degrees\":7,\"x\":[", "expected an array of integers, found 7"},
        // Found by plan_json_fuzz: the search course's counts were read unchecked.
        {"\"seed\":0", "\"seed\":0,\"course\":{\"iterations\":1e300,\"accepted\":0,\"best\":[]}",
         "found 1e+300"}}) {
    auto p = with(from, to);
    ASSERT_FALSE(p.has_value()) << to;
    EXPECT_NE(p.error().message().find(message), std::string::npos) << p.error().message();
    EXPECT_NE(p.error().message().find("malformed plan"), std::string::npos);
  }
}

// The search contract's provenance (options, budget) round-trips; plans written before it load
// with no options, an unlimited budget and budget_exhausted false.
TEST(PlanJson, ProvenanceRoundTripsAndOlderOnesLoad) {
  auto registry = ops::OpRegistry::with_builtins();
  auto g = *models::ModelZoo::with_builtins().build(
      "mlp:layers=1,hidden=4,input=3,classes=2,batch=4", *registry);
  Plan p = single_device_plan(g, *registry);
  p.provenance = {"tofu", "ways=2", 7,    0.25,         {{"fetch", "shared"}, {"ways", "2"}},
                  1.5,    3,        true, std::nullopt, /*interrupted=*/true};
  std::string text = plan_to_json(p);
  auto back = plan_from_json(text);
  ASSERT_TRUE(back.has_value()) << back.error().to_string();
  EXPECT_EQ(back->provenance.options, p.provenance.options);
  EXPECT_EQ(back->provenance.budget_time_s, std::optional<double>(1.5));
  EXPECT_EQ(back->provenance.budget_iterations, std::optional<std::int64_t>(3));
  EXPECT_TRUE(back->provenance.budget_exhausted);
  EXPECT_TRUE(back->provenance.interrupted);
  EXPECT_EQ(plan_to_json(*back), text);

  std::string old = text;
  for (std::string added : {R"("budget":{"iterations":3,"time_s":1.5},"budget_exhausted":true,)",
                            R"("options":{"fetch":"shared","ways":"2"},)"}) {
    ASSERT_NE(old.find(added), std::string::npos) << old;
    old.erase(old.find(added), added.size());
  }
  auto older = plan_from_json(old);
  ASSERT_TRUE(older.has_value()) << older.error().to_string();
  EXPECT_TRUE(older->provenance.options.empty());
  EXPECT_FALSE(older->provenance.budget_time_s.has_value());
  EXPECT_FALSE(older->provenance.budget_iterations.has_value());
  EXPECT_FALSE(older->provenance.budget_exhausted);
  EXPECT_EQ(older->provenance.seed, 7u);
}

TEST(PlanValidate, OrdersMustListEachPieceOnceOnItsDevice) {
  auto registry = ops::OpRegistry::with_builtins();
  auto g = *models::ModelZoo::with_builtins().build(
      "mlp:layers=1,hidden=4,input=3,classes=2,batch=4", *registry);
  Plan p = single_device_plan(g, *registry);
  p.order = {{}};
  for (std::uint32_t op = 0; op < g.num_ops(); ++op)
    p.order[0].push_back({op, 0});
  EXPECT_TRUE(validate(p, g, *registry).is_ok());
  p.order[0].pop_back();
  auto st = validate(p, g, *registry);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.error().message().find("list " + std::to_string(g.num_ops() - 1) + " of the plan's"),
            std::string::npos);
  p.order[0].push_back({0, 0});
  EXPECT_FALSE(validate(p, g, *registry).is_ok());
}

// A dimension TDL marks unsplittable (softmax's normalised axis) cannot be split, and the error
// names the op, the dimension and why; a plan made for another graph says so.
TEST(PlanValidate, UnsplittableDimensionsAndOtherGraphs) {
  auto registry = ops::OpRegistry::with_builtins();
  ir::GraphBuilder b(*registry);
  auto x = b.add_source("x", {{4, 10}, ir::DType::fp32}, ir::TensorRole::input);
  ASSERT_TRUE(x.has_value());
  auto y = b.add_op1({"softmax", {*x}, {{"axis", std::int64_t{-1}}}, "probs", {}, {}});
  ASSERT_TRUE(y.has_value()) << y.error().to_string();
  auto g = b.finish();
  ASSERT_TRUE(g.has_value());
  Plan p = single_device_plan(*g, *registry);
  p.num_devices = 2;
  p.ops[0].degrees = {1, 2};
  p.ops[0].devices = {0, 1};
  auto st = validate(p, *g, *registry);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.error().message().find("plan for op 'probs' (softmax): dimension"),
            std::string::npos)
      << st.error().message();
  EXPECT_NE(st.error().message().find("cannot be split"), std::string::npos);
  p.ops[0].degrees = {2, 1};
  EXPECT_TRUE(validate(p, *g, *registry).is_ok());
  auto other = *models::ModelZoo::with_builtins().build("mlp:batch=4", *registry);
  auto wrong = validate(p, other, *registry);
  ASSERT_FALSE(wrong.is_ok());
  EXPECT_NE(wrong.error().message().find("the plan was made for graph"), std::string::npos);
}

}  // namespace
}  // namespace cleave::plan
