#include <gtest/gtest.h>

#include "models/model_zoo.h"
#include "models/zoo_test_util.h"

namespace cleave::models {
namespace {

using testing::parameters;

class Zoo : public ::testing::Test {
 protected:
  std::unique_ptr<ops::OpRegistry> registry_ = ops::OpRegistry::with_builtins();
  ModelZoo zoo_ = ModelZoo::with_builtins();
};

TEST_F(Zoo, SpecParsing) {
  auto s = parse_model_spec("resnet:depth=50,width=2");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->name, "resnet");
  ASSERT_EQ(s->args.size(), 2u);
  EXPECT_EQ(s->args[1], (std::pair<std::string, std::string>{"width", "2"}));
  EXPECT_FALSE(parse_model_spec("resnet:depth").has_value());
  EXPECT_FALSE(parse_model_spec(":depth=2").has_value());
  EXPECT_FALSE(parse_model_spec("mlp:layers=").has_value());
}

TEST_F(Zoo, MlpParametersAndLoss) {
  auto g = zoo_.build("mlp:layers=2,hidden=32,input=16,classes=4,batch=8", *registry_);
  ASSERT_TRUE(g.has_value()) << g.error().to_string();
  EXPECT_EQ(parameters(*g), (16 * 32 + 32) + (32 * 32 + 32) + (32 * 4 + 4));
  auto loss = g->find_tensor("loss");
  ASSERT_TRUE(loss.has_value());
  EXPECT_TRUE(g->tensor(*loss).type.shape.empty());
}

TEST_F(Zoo, CanonicalSpecSpellsOutEveryKey) {
  auto args = zoo_.resolve(*parse_model_spec("mlp:hidden=8"));
  ASSERT_TRUE(args.has_value());
  EXPECT_EQ(args->canonical(), "mlp:layers=3,hidden=8,input=784,classes=10,batch=64,dtype=fp32");
}

// Every model takes a precision (autodiff/precision.h); the canonical spec names it unless it is
// the default, so fp32 specs read as before the key existed.
TEST_F(Zoo, EveryModelTakesAPrecision) {
  for (auto const& name : zoo_.names()) {
    auto args = zoo_.resolve(*parse_model_spec(name + ":precision=amp-bf16"));
    ASSERT_TRUE(args.has_value()) << name;
    EXPECT_EQ(args->precision(), "amp-bf16");
    EXPECT_TRUE(args->canonical().ends_with(",dtype=fp32,precision=amp-bf16")) << name;
  }
  auto fp32 = zoo_.resolve(*parse_model_spec("mlp:precision=fp32"));
  ASSERT_TRUE(fp32.has_value());
  EXPECT_EQ(fp32->canonical().find("precision"), std::string::npos);
  auto both = zoo_.resolve(*parse_model_spec("mlp:dtype=bf16,precision=amp-bf16"));
  ASSERT_FALSE(both.has_value());
  EXPECT_NE(both.error().to_string().find("use dtype=fp32"), std::string::npos);
  auto bad = zoo_.resolve(*parse_model_spec("mlp:precision=fp8"));
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().to_string().find("amp-fp16"), std::string::npos);
}

TEST_F(Zoo, BadSpecsListWhatIsAccepted) {
  testing::BadSpec const cases[] = {
      {"mlpp", "unknown model 'mlpp'; the zoo has"},
      {"mlp:depth=3", "model 'mlp' has no key 'depth'; accepted keys:\n  layers (default 3)"},
      {"mlp:hidden=-4", "hidden=-4 is below the smallest accepted value 1"},
      {"mlp:hidden=abc", "hidden=abc is not an integer"},
      {"mlp:dtype=fp64", "dtype=fp64 is not accepted"},
      {"mlp:batch=2,batch=3", "key 'batch' is given twice"},
  };
  testing::expect_errors(zoo_, *registry_, cases);
}

TEST_F(Zoo, EveryModelBuildsAtItsDefaults) {
  for (auto const& name : zoo_.names()) {
    auto g = zoo_.build(name, *registry_);
    ASSERT_TRUE(g.has_value()) << name << ": " << g.error().to_string();
    EXPECT_TRUE(g->find_tensor("loss").has_value()) << name;
    EXPECT_GT(parameters(*g), 0) << name;
  }
}

}  // namespace
}  // namespace cleave::models

namespace cleave::models {
namespace {

// heads defaults to hidden/64 (head size 64), rounded down to a divisor of hidden, so the issue's
// gpt:layers=24,hidden=2048 works without naming heads; an explicit value still must divide.
TEST(ZooDerivedDefaults, HeadsFollowHidden) {
  auto zoo = ModelZoo::with_builtins();
  auto heads = [&](std::string const& text) -> std::int64_t {
    auto spec = parse_model_spec(text);
    EXPECT_TRUE(spec.has_value());
    auto args = zoo.resolve(*spec);
    EXPECT_TRUE(args.has_value()) << text;
    return args ? args->integer("heads") : -1;
  };
  EXPECT_EQ(heads("gpt"), 12);
  EXPECT_EQ(heads("gpt:hidden=2048"), 32);
  EXPECT_EQ(heads("gpt:hidden=1600"), 25);   // GPT-2 XL
  EXPECT_EQ(heads("bert:hidden=1024"), 16);  // BERT-large
  EXPECT_EQ(heads("gpt:hidden=200"), 2);     // 200/64 = 3 does not divide 200
  EXPECT_EQ(heads("gpt:hidden=2048,heads=8"), 8);
  auto registry = ops::OpRegistry::with_builtins();
  EXPECT_FALSE(zoo.build("gpt:hidden=2048,heads=12", *registry).has_value());
}

}  // namespace
}  // namespace cleave::models
