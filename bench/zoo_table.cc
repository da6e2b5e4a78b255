// The zoo beside the papers (issue 3): for each model configuration a paper reports, our figure
// from the training graph (`cleave inspect`) and theirs, with the ratio. Prints Markdown;
// bench/run.sh writes it to bench/results/zoo.md and docs/zoo.md explains the rows.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "autodiff/training_graph.h"
#include "models/model_zoo.h"
#include "report/model_summary.h"

namespace {

using namespace cleave;

// What a paper reports and how to read ours against it.
enum class Measure {
  weight_size_gib,  // Tofu Table 2: weights + gradients + optimizer state, in GiB ("GB")
  memory_gb,        // SwapAdvisor Table 1: training memory, weights + state + saved activations
  training_ops,     // SwapAdvisor Table 1: ops in the training graph
  parameters,       // parameter counts
};

struct Row {
  char const* source;
  char const* model;  // as the paper names it
  std::string spec;
  Measure measure;
  double theirs;
};

double ours(report::ModelSummary const& s, Measure m) {
  switch (m) {
  case Measure::weight_size_gib:
    return static_cast<double>(s.training_state_bytes) / (1 << 30);
  case Measure::memory_gb:
    return static_cast<double>(s.training_state_bytes + s.activation_bytes) / 1e9;
  case Measure::training_ops:
    return static_cast<double>(s.training_ops);
  case Measure::parameters:
    return static_cast<double>(s.parameters);
  }
  return 0;
}

char const* unit(Measure m) {
  switch (m) {
  case Measure::weight_size_gib:
    return "GiB (weights+grads+momentum)";
  case Measure::memory_gb:
    return "GB (state + saved activations)";
  case Measure::training_ops:
    return "training ops";
  case Measure::parameters:
    return "parameters";
  }
  return "";
}

std::string number(double v, Measure m) {
  char buf[64];
  if (m == Measure::parameters || m == Measure::training_ops) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f", v);
  }
  return buf;
}

std::vector<Row> rows() {
  std::vector<Row> r;
  // Tofu Table 2 (PAPERS.md §1): WResNet at widening factor 4/6/8/10, RNN at hidden 4K/6K/8K.
  double const wres[3][4] = {
      {4.2, 9.6, 17.1, 26.7}, {7.8, 17.1, 30.6, 47.7}, {10.5, 23.4, 41.7, 65.1}};
  int const depth[3] = {50, 101, 152};
  for (int d = 0; d < 3; ++d)
    for (int w = 0; w < 4; ++w)
      r.push_back(
          {"Tofu T2", "WResNet",
           "resnet:depth=" + std::to_string(depth[d]) + ",width=" + std::to_string(4 + 2 * w),
           Measure::weight_size_gib, wres[d][w]});
  double const rnn[3][3] = {{8.4, 18.6, 33.0}, {11.4, 28.5, 45.3}, {14.4, 32.1, 57.0}};
  for (int l = 0; l < 3; ++l)
    for (int h = 0; h < 3; ++h)
      r.push_back({"Tofu T2", "RNN",
                   "rnn:layers=" + std::to_string(6 + 2 * l) +
                       ",hidden=" + std::to_string(4096 + 2048 * h) + ",steps=20,batch=512,vocab=2",
                   Measure::weight_size_gib, rnn[l][h]});
  // SwapAdvisor Table 1 (PAPERS.md §4).
  r.push_back({"SwapAdvisor T1", "WResNet-152-10", "resnet:depth=152,width=10,batch=64",
               Measure::memory_gb, 180});
  r.push_back({"SwapAdvisor T1", "WResNet-152-10", "resnet:depth=152,width=10,batch=64",
               Measure::training_ops, 882});
  r.push_back({"SwapAdvisor T1", "RNN-8-8K", "rnn:layers=8,hidden=8192,batch=256,vocab=2",
               Measure::memory_gb, 118});
  r.push_back({"SwapAdvisor T1", "RNN-8-8K", "rnn:layers=8,hidden=8192,batch=256,vocab=2",
               Measure::training_ops, 8594});
  // NasNet-25 read as NASNet-A (25 @ 4032), the NASNet paper's (N @ filters) naming, at the
  // zoo's CNN batch of 64 (the paper gives no batch; docs/zoo.md).
  r.push_back({"SwapAdvisor T1", "NasNet-25", "nasnet:cells=25,batch=64", Measure::memory_gb, 193});
  r.push_back(
      {"SwapAdvisor T1", "NasNet-25", "nasnet:cells=25,batch=64", Measure::training_ops, 5533});
  // ParDNN Table 3 (PAPERS.md §3), in billions of parameters.
  r.push_back({"ParDNN T3", "Word-RNN", "rnn:layers=8,hidden=2048,vocab=20000", Measure::parameters,
               0.34e9});
  r.push_back({"ParDNN T3", "Word-RNN-2", "rnn:layers=32,hidden=2048,vocab=20000",
               Measure::parameters, 1.18e9});
  r.push_back({"ParDNN T3", "TRN", "gpt:layers=52,hidden=2048,heads=16,seq=2048,ffn=2",
               Measure::parameters, 1.99e9});
  r.push_back({"ParDNN T3", "TRN-2", "gpt:layers=48,hidden=2048,heads=16,seq=2048",
               Measure::parameters, 5.1e9});
  r.push_back({"ParDNN T3", "Char-CRN", "crn:layers=8,hidden=1792", Measure::parameters, 0.23e9});
  r.push_back(
      {"ParDNN T3", "Char-CRN-2", "crn:layers=32,hidden=2048", Measure::parameters, 1.09e9});
  r.push_back({"ParDNN T3", "WRN", "wrn:depth=610,width=14", Measure::parameters, 1.91e9});
  r.push_back({"ParDNN T3", "WRN-2", "wrn:depth=304,width=28", Measure::parameters, 3.77e9});
  r.push_back({"ParDNN T3", "E3D", "e3d:hidden=640", Measure::parameters, 0.95e9});
  r.push_back({"ParDNN T3", "E3D-2", "e3d:hidden=1024", Measure::parameters, 2.4e9});
  // Standard parameter counts (torchvision, Hugging Face, the GPT papers).
  r.push_back({"torchvision", "ResNet-50", "resnet:depth=50", Measure::parameters, 25557032});
  r.push_back({"torchvision", "ResNet-152", "resnet:depth=152", Measure::parameters, 60192808});
  r.push_back({"torchvision", "VGG-16", "vgg:depth=16", Measure::parameters, 138357544});
  r.push_back({"torchvision", "VGG-19", "vgg:depth=19", Measure::parameters, 143667240});
  r.push_back({"torchvision", "Inception-v3 (no aux)", "inception:version=3", Measure::parameters,
               23834568});
  // The NASNet paper (Zoph et al. 2018: its ImageNet and mobile tables), in millions.
  r.push_back({"NASNet paper", "NASNet-A (6 @ 4032)", "nasnet", Measure::parameters, 88.9e6});
  r.push_back({"NASNet paper", "NASNet-A (4 @ 1056)",
               "nasnet:cells=4,filters=1056,stem=32,image=224", Measure::parameters, 5.3e6});
  r.push_back({"HF BertModel", "BERT-large", "bert:layers=24,hidden=1024,heads=16",
               Measure::parameters, 335141888});
  r.push_back({"GPT-2", "GPT-2 small", "gpt", Measure::parameters, 124439808});
  r.push_back({"GPT-2", "GPT-2 medium", "gpt:layers=24,hidden=1024,heads=16", Measure::parameters,
               354823168});
  r.push_back({"GPT-2", "GPT-2 large", "gpt:layers=36,hidden=1280,heads=20", Measure::parameters,
               774030080});
  r.push_back(
      {"GPT-2", "GPT-2 XL", "gpt:layers=48,hidden=1600,heads=25", Measure::parameters, 1557611200});
  r.push_back({"GPT-3", "GPT-3 175B", "gpt:layers=96,hidden=12288,heads=96,seq=2048",
               Measure::parameters, 175e9});
  return r;
}

}  // namespace

int main() {
  auto registry = ops::OpRegistry::with_builtins();
  auto zoo = models::ModelZoo::with_builtins();
  std::printf("| source | model | our spec | measure | ours | theirs | ours/theirs |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  std::string cached_spec;
  report::ModelSummary summary;
  double slowest = 0;
  for (auto const& row : rows()) {
    if (row.spec != cached_spec) {
      auto t0 = std::chrono::steady_clock::now();
      auto fwd = zoo.build(row.spec, *registry);
      if (!fwd) {
        std::fprintf(stderr, "%s\n", fwd.error().to_string().c_str());
        return 1;
      }
      auto train = autodiff::build_training_graph(*fwd, *registry);
      if (!train) {
        std::fprintf(stderr, "%s\n", train.error().to_string().c_str());
        return 1;
      }
      auto s =
          report::summarize(row.spec, *train, static_cast<std::int64_t>(fwd->num_ops()), *registry);
      if (!s) {
        std::fprintf(stderr, "%s\n", s.error().to_string().c_str());
        return 1;
      }
      summary = std::move(*s);
      cached_spec = row.spec;
      slowest = std::max(
          slowest, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    double o = ours(summary, row.measure);
    std::printf("| %s | %s | `%s` | %s | %s | %s | %.2f |\n", row.source, row.model,
                row.spec.c_str(), unit(row.measure), number(o, row.measure).c_str(),
                number(row.theirs, row.measure).c_str(), o / row.theirs);
  }
  std::printf("\nSlowest model (build + autodiff + inspect): %.2f s.\n", slowest);
  return 0;
}
