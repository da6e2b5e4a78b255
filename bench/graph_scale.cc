// Scale benchmark (issue 2): build and verify a graph of N ops (default 1,000,000) with the real op
// registry, round-trip it through cleave.graph/1 JSON, and print each phase's time and the peak
// resident memory. Target: all of it under 10 s and 4 GiB on a 2-core machine.
//
//   graph_scale [--ops N] [--markdown]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/resource.h>

#include "bench_util.h"
#include "ir/graph_builder.h"
#include "ir/graph_json.h"
#include "ops/op_registry.h"

namespace {

using namespace cleave;
using namespace cleave::bench;

// A deep MLP: blocks of linear -> add(bias) -> gelu, each with its own weights, as a framework's
// dataflow graph has them (3 ops and 5 tensors per block).
ir::Graph build(ops::OpRegistry const& registry, std::int64_t num_ops) {
  ir::GraphBuilder b(registry);
  ir::TensorId x = must(b.add_source("x", {{32, 64}, ir::DType::fp32}, ir::TensorRole::input));
  for (std::int64_t i = 0; 3 * i < num_ops; ++i) {
    std::string s = std::to_string(i);
    auto w = must(b.add_source("w" + s, {{64, 64}, ir::DType::fp32}, ir::TensorRole::weight));
    auto bias = must(b.add_source("b" + s, {{64}, ir::DType::fp32}, ir::TensorRole::weight));
    auto y = must(b.add_op1({"linear", {x, w}, {}, "fc" + s, {}, {}}));
    auto z = must(b.add_op1({"add", {y, bias}, {}, "bias" + s, {}, {}}));
    x = must(b.add_op1({"gelu", {z}, {}, "act" + s, {}, {}}));
  }
  return must(b.finish());
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t num_ops = 1'000'000;
  bool markdown = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--ops" && i + 1 < argc) {
      num_ops = std::atoll(argv[++i]);
    } else if (a == "--markdown") {
      markdown = true;
    } else {
      std::fprintf(stderr, "usage: graph_scale [--ops N] [--markdown]\n");
      return 2;
    }
  }
  auto registry = ops::OpRegistry::with_builtins();

  auto t0 = Clock::now();
  ir::Graph g = build(*registry, num_ops);  // finish() verifies the whole graph
  double t_build = seconds_since(t0);

  t0 = Clock::now();
  std::string text = ir::graph_to_json(g);
  double t_write = seconds_since(t0);

  t0 = Clock::now();
  ir::Graph back = must(ir::graph_from_json(text, *registry));
  double t_read = seconds_since(t0);

  t0 = Clock::now();
  bool same = back == g && ir::graph_to_json(back) == text;
  double t_compare = seconds_since(t0);
  double total = t_build + t_write + t_read;
  double rss = peak_rss_gib();

  if (markdown) {
    std::printf("| ops | tensors | JSON size | build + verify | write JSON | read + verify JSON | "
                "total | peak RSS | round trip exact |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|\n");
    std::printf("| %zu | %zu | %.1f MiB | %.2f s | %.2f s | %.2f s | %.2f s | %.2f GiB | %s |\n",
                g.num_ops(), g.num_tensors(), static_cast<double>(text.size()) / (1 << 20), t_build,
                t_write, t_read, total, rss, same ? "yes" : "NO");
  } else {
    std::printf("ops                 %zu\n", g.num_ops());
    std::printf("tensors             %zu\n", g.num_tensors());
    std::printf("JSON size           %.1f MiB\n", static_cast<double>(text.size()) / (1 << 20));
    std::printf("build + verify      %.2f s\n", t_build);
    std::printf("write JSON          %.2f s\n", t_write);
    std::printf("read + verify JSON  %.2f s\n", t_read);
    std::printf("total               %.2f s (target < 10 s)\n", total);
    std::printf("compare             %.2f s (not in total)\n", t_compare);
    std::printf("peak RSS            %.2f GiB (target < 4 GiB)\n", rss);
    std::printf("round trip exact    %s\n", same ? "yes" : "NO");
  }
  return same ? 0 : 1;
}
