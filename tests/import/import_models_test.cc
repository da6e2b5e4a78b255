// Real models exported by PyTorch (scripts/export_test_models.py, a ctest fixture) through the
// `cleave` program: parameters equal PyTorch's sum(p.numel()), op counts and FLOPs are printed,
// FLOPs match the zoo's own model of the same configuration, and plans simulate on dgx-a100.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cleave_cli.h"

namespace {

using cli_test::cleave;
using cli_test::Outcome;
using cli_test::slurp;

std::string model_path(std::string const& name) {
  return std::string(CLEAVE_ONNX_MODELS) + "/" + name + ".onnx";
}

nlohmann::json sidecar(std::string const& name) {
  return nlohmann::json::parse(slurp(std::string(CLEAVE_ONNX_MODELS) + "/" + name + ".json"));
}

nlohmann::json inspect(std::string const& model) {
  Outcome r = cleave("inspect " + model + " --json");
  EXPECT_EQ(r.code, 0) << r.err;
  std::printf("inspect %s: %.2f s\n", model.c_str(), r.seconds);
  return r.code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json::object();
}

class ImportedModel : public ::testing::TestWithParam<std::string> {};

TEST_P(ImportedModel, ParametersEqualPyTorchsAndInspectPrintsOpsAndFlops) {
  std::string name = GetParam();
  auto meta = sidecar(name);
  Outcome text = cleave("inspect " + model_path(name));
  ASSERT_EQ(text.code, 0) << text.err;
  std::printf("%s", text.out.c_str());
  auto s = inspect(model_path(name));
  EXPECT_EQ(s.value("parameters", std::int64_t{-1}), meta["parameters"].get<std::int64_t>())
      << name;
  EXPECT_GT(s.value("forward_flops", std::int64_t{0}), 0);
  Outcome imp = cleave("import " + model_path(name) + " -o " +
                       (std::filesystem::temp_directory_path() / (name + ".graph.json")).string());
  EXPECT_EQ(imp.code, 0) << imp.err;
  std::printf("%s(import: %.2f s)\n", imp.out.c_str(), imp.seconds);
}

TEST_P(ImportedModel, DataParallelPlanSimulatesOnDgxA100) {
  Outcome r = cleave("plan " + model_path(GetParam()) + " --cluster dgx-a100 --algo data-parallel");
  EXPECT_EQ(r.code, 0) << r.err;
  std::printf("%s(%.2f s)\n", r.out.c_str(), r.seconds);
}

INSTANTIATE_TEST_SUITE_P(Models, ImportedModel,
                         ::testing::Values("resnet18", "resnet50", "resnet152", "vgg19",
                                           "wide_resnet50_2", "gpt", "transformer"));

// Bad files through the program: a clear error naming the cause and exit code 1, no crash.
TEST(ImportCli, BadFilesExitNonZeroWithTheCause) {
  auto dir =
      std::filesystem::temp_directory_path() / ("cleave_import_bad_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string whole = slurp(model_path("resnet18"));
  std::ofstream(dir / "truncated.onnx", std::ios::binary) << whole.substr(0, whole.size() / 3);
  std::ofstream(dir / "text.onnx") << "this is not a model\n";
  for (auto const* name : {"truncated.onnx", "text.onnx"}) {
    for (auto const* cmd : {"import", "inspect"}) {
      std::string args = std::string(cmd) + " " + (dir / name).string();
      if (std::string(cmd) == "import") args += " -o " + (dir / "out.json").string();
      Outcome r = cleave(args);
      EXPECT_EQ(r.code, 1) << args << "\n" << r.err;
      EXPECT_NE(r.err.find("is not an ONNX model"), std::string::npos) << r.err;
    }
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "out.json"));
  Outcome missing = cleave("plan " + (dir / "absent.onnx").string() + " --cluster dgx-a100");
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.err.find("cannot open"), std::string::npos) << missing.err;
}

// Tofu's search on the models it finishes in seconds (measured times in docs/import.md).
class TofuPlan : public ::testing::TestWithParam<std::string> {};

TEST_P(TofuPlan, SimulatesOnDgxA100) {
  Outcome r = cleave("plan " + model_path(GetParam()) + " --cluster dgx-a100 --algo tofu");
  EXPECT_EQ(r.code, 0) << r.err;
  std::printf("%s(%.2f s)\n", r.out.c_str(), r.seconds);
}

// resnet152's search takes about 7 s (RelWithDebInfo), many times that under the sanitizers:
// there it is planned with data-parallel only (above).
INSTANTIATE_TEST_SUITE_P(Models, TofuPlan,
                         ::testing::Values("resnet18", "resnet50", "vgg19", "wide_resnet50_2",
#ifndef CLEAVE_SANITIZED
                                           "resnet152",
#endif
                                           "gpt", "transformer"));

// An imported model runs for real: a Tofu plan of the BERT-style encoder on two CPU devices
// computes what the unpartitioned graph computes (the runtime's --check). Not under the
// sanitizers: the Debug build's kernels would take minutes.
#ifndef CLEAVE_SANITIZED
TEST(ImportedModelRuns, TransformerPassesTheRuntimeCheck) {
  auto plan = std::filesystem::temp_directory_path() /
              ("cleave_import_run_" + std::to_string(::getpid()) + ".json");
  Outcome p = cleave("plan " + model_path("transformer") + " --cluster cpu:devices=2,memory=8GiB " +
                     "--algo tofu -o " + plan.string());
  ASSERT_EQ(p.code, 0) << p.err;
  Outcome r = cleave("run " + plan.string() + " --check");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("passed"), std::string::npos) << r.out;
  std::filesystem::remove(plan);
}
#endif

// FLOPs of a training step against the zoo's model of the same configuration (batch 8).
struct ZooPair {
  char const* onnx;
  char const* zoo;
};

void PrintTo(ZooPair const& p, std::ostream* os) {
  *os << p.onnx << " vs " << p.zoo;
}

class FlopsAgainstZoo : public ::testing::TestWithParam<ZooPair> {};

TEST_P(FlopsAgainstZoo, WithinFivePercent) {
  auto [onnx, zoo] = GetParam();
  auto a = inspect(model_path(onnx));
  auto b = inspect(zoo);
  double fa = a.value("flops_per_step", 0.0), fb = b.value("flops_per_step", 1.0);
  double ra = a.value("forward_flops", 0.0), rb = b.value("forward_flops", 1.0);
  std::printf("%s vs %s: step FLOPs %.4g / %.4g = %.4f; forward %.4g / %.4g = %.4f\n", onnx, zoo,
              fa, fb, fa / fb, ra, rb, ra / rb);
  EXPECT_NEAR(fa / fb, 1.0, 0.05);
  EXPECT_NEAR(ra / rb, 1.0, 0.05);
}

INSTANTIATE_TEST_SUITE_P(Models, FlopsAgainstZoo,
                         ::testing::Values(ZooPair{"resnet50", "resnet:depth=50,batch=8"},
                                           ZooPair{"resnet152", "resnet:depth=152,batch=8"},
                                           ZooPair{"vgg19", "vgg:depth=19,batch=8"}),
                         [](auto const& info) { return std::string(info.param.onnx); });

}  // namespace
