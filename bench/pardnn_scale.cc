// ParDNN's placement time at scale (issue 16): the median time of `make_plan("pardnn")` (op graph,
// slicing, mapping, the list schedule and one lowering and simulation of the plan that fits) on a
// zoo model's training graph, and the process's peak resident memory (graph included). Targets: a
// 200K-op graph under 5 s, a 1M-op graph under 30 s and 8 GiB (the paper: about 2 minutes for
// 205K nodes).
//
//   pardnn_scale [--model SPEC] [--cluster SPEC] [--algo NAME] [--runs N] [--markdown]
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "autodiff/training_graph.h"
#include "bench_util.h"
#include "cluster/presets.h"
#include "models/model_zoo.h"
#include "search/search.h"

int main(int argc, char** argv) {
  using namespace cleave;
  using namespace cleave::bench;
  std::string model = "rnn:layers=8,hidden=64,steps=1000,batch=8,vocab=64";
  std::string cluster_spec = "dgx2";
  std::string algo = "pardnn";
  int runs = 3;
  bool markdown = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--model" && i + 1 < argc) {
      model = argv[++i];
    } else if (a == "--cluster" && i + 1 < argc) {
      cluster_spec = argv[++i];
    } else if (a == "--algo" && i + 1 < argc) {
      algo = argv[++i];
    } else if (a == "--runs" && i + 1 < argc) {
      runs = std::atoi(argv[++i]);
    } else if (a == "--markdown") {
      markdown = true;
    } else {
      std::fprintf(stderr, "usage: pardnn_scale [--model SPEC] [--cluster SPEC] [--algo NAME] "
                           "[--runs N] [--markdown]\n");
      return 2;
    }
  }
  auto registry = ops::OpRegistry::with_builtins();
  auto t0 = Clock::now();
  auto forward = must(models::ModelZoo::with_builtins().build(model, *registry));
  ir::Graph graph = must(autodiff::build_training_graph(forward, *registry));
  double build_s = seconds_since(t0);
  auto cluster = must(cluster::load_cluster(cluster_spec));
  cost::CostModel cost(cluster);
  search::SearchContext ctx{graph, *registry, cost, cluster_spec, model, 0, 0, {}, {}};
  std::vector<double> times;
  std::string config;
  for (int r = 0; r < runs; ++r) {
    auto p = must(search::make_plan(algo, ctx));
    times.push_back(p.provenance.search_time_s);
    config = p.provenance.config;
  }
  double rss = peak_rss_gib();
  if (markdown) {
    std::printf("| model | ops | cluster | algorithm | graph build | placement (median of %d) | "
                "peak RSS | found |\n|---|---|---|---|---|---|---|---|\n",
                runs);
    std::printf("| `%s` | %zu | %s | %s | %.2f s | %.2f s | %.2f GiB | %s |\n", model.c_str(),
                graph.num_ops(), cluster_spec.c_str(), algo.c_str(), build_s, median(times), rss,
                config.c_str());
  } else {
    std::printf("%s: %zu ops, graph built in %.2f s; %s on %s: median %.2f s over %d runs; peak "
                "RSS %.2f GiB; %s\n",
                model.c_str(), graph.num_ops(), build_s, algo.c_str(), cluster_spec.c_str(),
                median(times), runs, rss, config.c_str());
  }
  return 0;
}
