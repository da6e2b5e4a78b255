#include <gtest/gtest.h>

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
  p.provenance = {"test", "{\"x\":1}", 42, 0.5};
  ASSERT_TRUE(validate(p, g, *registry).is_ok());
  std::string text = plan_to_json(p);
  auto back = plan_from_json(text);
  ASSERT_TRUE(back.has_value()) << back.error().to_string();
  EXPECT_EQ(plan_to_json(*back), text);
  EXPECT_EQ(back->ops[0].devices, (std::vector<int>{0, 1}));
  EXPECT_EQ(back->provenance.seed, 42u);
  EXPECT_EQ(back->graph_fingerprint, ir::graph_fingerprint(g));

  EXPECT_FALSE(plan_from_json(text.substr(0, text.size() / 2)).has_value());
  EXPECT_FALSE(plan_from_json("{\"format\":\"cleave.graph/1\"}").has_value());
  auto missing = plan_from_json("{\"format\":\"cleave.plan/1\",\"graph\":\"x\"}");
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().message().find("malformed plan"), std::string::npos);
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

}  // namespace
}  // namespace cleave::plan
