// What load_model makes of --precision and the zoo's precision key, and the precision a model
// trains in by default on a cluster (docs/precision.md).
#include <gtest/gtest.h>

#include "api/model_input.h"
#include "cluster/presets.h"

namespace cleave::api {
namespace {

TEST(ModelInput, TransformersDefaultToAmpBf16OnA100AndH100) {
  auto a100 = *cluster::load_cluster("dgx-a100");
  auto v100 = *cluster::load_cluster("v100x1");
  TrainingFlags none;
  EXPECT_EQ(default_precision("gpt:layers=2", none, a100), "amp-bf16");
  EXPECT_EQ(default_precision("bert", none, *cluster::load_cluster("h100-2x8")), "amp-bf16");
  EXPECT_EQ(default_precision("gpt", none, v100), "");  // no bf16
  EXPECT_EQ(default_precision("resnet", none, a100), "");
  EXPECT_EQ(default_precision("gpt:precision=fp32", none, a100), "");  // the spec says
  EXPECT_EQ(default_precision("gpt:dtype=fp16", none, a100), "");
  TrainingFlags fp32;
  fp32.precision = "fp32";
  EXPECT_EQ(default_precision("gpt", fp32, a100), "");  // --precision says
}

TEST(ModelInput, PrecisionFlagAndKey) {
  auto registry = ops::OpRegistry::with_builtins();
  TrainingFlags flags;
  flags.precision = "amp-fp16";
  auto m = load_model("mlp:layers=2,hidden=8,input=4,classes=3,batch=2", *registry, flags);
  ASSERT_TRUE(m.has_value()) << m.error().to_string();
  EXPECT_EQ(m->precision, autodiff::Precision::amp_fp16);
  EXPECT_TRUE(m->label.ends_with(",precision=amp-fp16")) << m->label;
  EXPECT_TRUE(m->training.find_op("fc0.weight.grad_unscaled").has_value());
  auto clash = load_model("mlp:layers=2,hidden=8,input=4,classes=3,batch=2,precision=amp-bf16",
                          *registry, flags);
  ASSERT_FALSE(clash.has_value());
  EXPECT_NE(clash.error().to_string().find("disagree"), std::string::npos);
  flags.precision = "half";
  auto bad = load_model("mlp", *registry, flags);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().to_string().find("--precision"), std::string::npos);
}

}  // namespace
}  // namespace cleave::api
