// Import coverage (issue 22): one model of every torchvision classification family and PyTorch's
// own transformer encoder and decoder, exported by PyTorch at test time
// (scripts/export_coverage_models.py, a ctest fixture), through the `cleave` program. Each imports
// with PyTorch's parameter count and is planned and simulated; seven, at 32x32, pass the
// runtime's --check (a Tofu plan on two CPU devices computes what the undivided graph computes).
#include <cstdio>
#include <filesystem>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cleave_cli.h"

namespace {

using cli_test::cleave;
using cli_test::Outcome;
using cli_test::slurp;

std::string model_path(std::string const& name) {
  return std::string(CLEAVE_COVERAGE_MODELS) + "/" + name + ".onnx";
}

class CoverageModel : public ::testing::TestWithParam<std::string> {};

TEST_P(CoverageModel, ImportsWithPyTorchsParametersAndPlansAndSimulates) {
  std::string name = GetParam();
  auto meta =
      nlohmann::json::parse(slurp(std::string(CLEAVE_COVERAGE_MODELS) + "/" + name + ".json"));
  Outcome inspect = cleave("inspect " + model_path(name) + " --json");
  ASSERT_EQ(inspect.code, 0) << inspect.err;
  auto s = nlohmann::json::parse(inspect.out);
  EXPECT_EQ(s.value("parameters", std::int64_t{-1}), meta["parameters"].get<std::int64_t>());
  EXPECT_GT(s.value("flops_per_step", 0.0), 0.0);
  Outcome plan = cleave("plan " + model_path(name) + " --cluster dgx-a100 --algo data-parallel");
  EXPECT_EQ(plan.code, 0) << plan.err;
  EXPECT_NE(plan.out.find("data-parallel"), std::string::npos) << plan.out;
  std::printf("%s (%s, input %s): %lld parameters; inspect %.2f s, plan %.2f s\n", name.c_str(),
              meta["mode"].get<std::string>().c_str(), meta["input_shape"].dump().c_str(),
              static_cast<long long>(meta["parameters"].get<std::int64_t>()), inspect.seconds,
              plan.seconds);
}

// Under the sanitizers (a Debug build) a few models that cover the new mappings: HardSwish and
// HardSigmoid, Pad, Expand and the folded masks of shifted windows, PyTorch's transformer layers.
INSTANTIATE_TEST_SUITE_P(Models, CoverageModel,
                         ::testing::Values(
#ifndef CLEAVE_SANITIZED
                             "alexnet", "convnext_tiny", "efficientnet_b0", "efficientnet_v2_s",
                             "googlenet", "inception_v3", "maxvit_t", "mnasnet0_5", "mobilenet_v2",
                             "regnet_x_400mf", "regnet_y_400mf", "resnet18", "resnext50_32x4d",
                             "shufflenet_v2_x0_5", "squeezenet1_0", "vgg11_bn", "vit_b_16",
                             "wide_resnet50_2", "vit_small", "torch_decoder",
#endif
                             "mobilenet_v3_large", "densenet121", "swin_t", "torch_encoder"));

// The runtime's check on small-image versions of seven models (32x32, batch 8): not under the
// sanitizers, whose Debug build's kernels would take minutes.
#ifndef CLEAVE_SANITIZED
class CoverageCheck : public ::testing::TestWithParam<std::string> {};

TEST_P(CoverageCheck, TofuPlanOnTwoCpusPassesTheRuntimeCheck) {
  std::string name = GetParam();
  auto plan = std::filesystem::temp_directory_path() /
              ("cleave_coverage_" + name + "_" + std::to_string(::getpid()) + ".json");
  Outcome p = cleave("plan " + model_path(name) +
                     " --cluster cpu:devices=2,memory=8GiB --algo tofu -o " + plan.string());
  ASSERT_EQ(p.code, 0) << p.err;
  Outcome r = cleave("run " + plan.string() + " --check");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("passed"), std::string::npos) << r.out;
  std::printf("%s: plan %.2f s, run --check %.2f s\n", name.c_str(), p.seconds, r.seconds);
  std::filesystem::remove(plan);
}

// Six torchvision families and PyTorch's decoder, with bench/results/check_conditioning.md's
// figures for the Tofu plan (deterministic kernels, as --check runs): resnet18 8.6e-6,
// squeezenet1_0 7.2e-7, regnet_y_400mf 2.4e-5, mobilenet_v3_large 3.9e-5. Left out: ShuffleNet
// (7.2e-5) and DenseNet (9.2e-5), too near 1e-4 to hold on another CPU's kernels, EfficientNet-B0
// (1.3e-4), MobileNetV2 (2.1e-4) and MNASNet (2.0e-4): PyTorch's own fp32 gradients of these miss
// its fp64 ones by 4.5e-4 to 0.22 at this size (batch norm over few values), so no order of fp32
// sums can be held to 1e-4 on them (docs/import.md, "How well-conditioned").
INSTANTIATE_TEST_SUITE_P(Families, CoverageCheck,
                         ::testing::Values("resnet18", "squeezenet1_0", "regnet_y_400mf",
                                           "mobilenet_v3_large", "swin_t", "vit_small",
                                           "torch_decoder"));
#endif

}  // namespace
