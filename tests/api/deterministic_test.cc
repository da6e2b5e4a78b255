// `--check` and `--deterministic` choose among a kernel's implementations by fixed rules
// (runtime::KernelChoice), so that one plan run twice gives the same numbers bit for bit; by
// default the convolution kernel times its variants and may pick another in another run.
#include <gtest/gtest.h>

#include "api/run.h"
#include "cluster/presets.h"
#include "search/search.h"

namespace cleave::api {
namespace {

TEST(RunPlan, TheKernelChoiceIsDeterministicUnderACheckOrTheFlag) {
  RunRequest request;
  EXPECT_EQ(kernel_choice(request), runtime::KernelChoice::fastest);
  request.deterministic = true;
  EXPECT_EQ(kernel_choice(request), runtime::KernelChoice::deterministic);
  request.deterministic = false;
  request.check = true;
  EXPECT_EQ(kernel_choice(request), runtime::KernelChoice::deterministic);
}

// A CNN whose convolutions have both a plain and a blocked implementation, data-parallel on two
// devices: two checked runs of the plan agree on every compared tensor's error exactly.
TEST(RunPlan, ACheckedRunRepeatsBitForBit) {
  auto registry = ops::OpRegistry::with_builtins();
  auto model = load_model("wrn:depth=10,width=1,batch=4,image=8", *registry, {});
  ASSERT_TRUE(model.has_value()) << model.error().to_string();
  auto cluster = cluster::load_cluster("cpu:devices=2");
  ASSERT_TRUE(cluster.has_value()) << cluster.error().to_string();
  cost::CostModel cost{*cluster};
  search::SearchContext ctx{model->training, *registry,    cost,
                            "cpu:devices=2", model->label, model->batch};
  auto plan = search::make_plan("data-parallel", ctx);
  ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
  PlanInput input{*plan, std::move(*model), *cluster};
  RunRequest request;
  request.check = true;
  auto first = run_plan(input, request, *registry, "loss");
  auto second = run_plan(input, request, *registry, "loss");
  ASSERT_TRUE(first.has_value()) << first.error().to_string();
  ASSERT_TRUE(second.has_value()) << second.error().to_string();
  ASSERT_TRUE(first->check && second->check);
  auto const& a = first->check->tensors;
  auto const& b = second->check->tensors;
  ASSERT_EQ(a.size(), b.size());
  ASSERT_FALSE(a.empty());
  for (std::size_t i = 0; i < a.size(); ++i)
    EXPECT_EQ(a[i].max_abs_error, b[i].max_abs_error) << a[i].tensor;
}

}  // namespace
}  // namespace cleave::api
