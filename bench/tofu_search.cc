// Tofu's search time and memory (issue 5): for each case, the median of several runs of
// `make_plan("tofu")`, the process's peak resident memory, and the plan's communication bytes.
// Targets: WResNet-152 and RNN-10-8K on k80x8 under 2 s each (the paper: 8.3 s and 66.6 s),
// GPT-3 scale on 64 devices under 60 s.
//
//   tofu_search [--runs N] [--case NAME]   (NAME: wresnet152, rnn10, gpt3; default all)
//   tofu_search --explain MODEL --cluster C [--algo A] [--filter TEXT]
//     prints each forward op (whose name contains TEXT) with its cut: degree per dimension name
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <sys/resource.h>
#include <vector>

#include "autodiff/training_graph.h"
#include "bench_util.h"
#include "cluster/presets.h"
#include "models/model_zoo.h"
#include "search/search.h"

namespace {

using namespace cleave;

using namespace cleave::bench;

struct Case {
  std::string name, model, cluster, target;
  std::int64_t batch;
};

}  // namespace

int main(int argc, char** argv) {
  int runs = 3;
  std::string only, explain, cluster_spec = "k80x8", algo = "tofu", filter;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--runs") runs = std::atoi(argv[i + 1]);
    if (a == "--case") only = argv[i + 1];
    if (a == "--explain") explain = argv[i + 1];
    if (a == "--cluster") cluster_spec = argv[i + 1];
    if (a == "--algo") algo = argv[i + 1];
    if (a == "--filter") filter = argv[i + 1];
  }
  if (!explain.empty()) {
    auto registry = ops::OpRegistry::with_builtins();
    auto model = must(models::ModelZoo::with_builtins().build(explain, *registry));
    ir::Graph g = must(autodiff::build_training_graph(model, *registry));
    auto cluster = must(cluster::load_cluster(cluster_spec));
    cost::CostModel cost(cluster);
    search::SearchContext ctx{g, *registry, cost, cluster_spec, explain, 1, 0};
    plan::Plan p = must(search::make_plan(algo, ctx));
    std::printf("%s on %s: %s (%.2f s)\n", algo.c_str(), cluster_spec.c_str(),
                p.provenance.config.c_str(), p.provenance.search_time_s);
    for (auto const& op : g.ops()) {
      if (op.name.find(filter) == std::string::npos) continue;
      auto bound = must(registry->bind(g, op.id));
      std::string cut;
      for (std::size_t d = 0; d < bound->dims().size(); ++d)
        if (p.ops[op.id.value()].degrees[d] > 1)
          cut += " " + bound->dims()[d].name + "=" +
                 std::to_string(p.ops[op.id.value()].degrees[d]) +
                 (bound->dims()[d].kind == tdl::DimKind::reduction ? "(red)" : "");
      std::printf("%-50s %-22s %s |%s\n", op.name.c_str(), op.type.c_str(),
                  bound->describe_space().c_str(), cut.c_str());
    }
    return 0;
  }
  std::vector<Case> cases = {
      {"wresnet152", "resnet:depth=152,width=10", "k80x8", "< 2 s (paper 8.3 s)", 128},
      {"rnn10", "rnn:layers=10,hidden=8192,steps=20,batch=512", "k80x8", "< 2 s (paper 66.6 s)",
       512},
      {"gpt3", "gpt:layers=96,hidden=12288,heads=96,seq=2048", "cpu:devices=64", "< 60 s", 1},
  };
  auto registry = ops::OpRegistry::with_builtins();
  auto zoo = models::ModelZoo::with_builtins();
  std::printf(
      "| case | model | cluster | ops | median search, wall (s) | median CPU (s) | runs | peak RSS "
      "before / after "
      "search (GiB) | comm per step (GiB) | target |\n|---|---|---|---|---|---|---|---|---|---|\n");
  for (auto const& c : cases) {
    if (!only.empty() && only != c.name) continue;
    ir::Graph g =
        must(autodiff::build_training_graph(must(zoo.build(c.model, *registry)), *registry));
    auto cluster = must(cluster::load_cluster(c.cluster));
    double before = peak_rss_gib();
    std::vector<double> times, cpu_times;
    std::string config;
    for (int r = 0; r < runs; ++r) {
      cost::CostModel cost(cluster);
      search::SearchContext ctx{g, *registry, cost, c.cluster, c.model, c.batch, 0};
      // CPU time beside wall time: on a shared machine the wall time measures the neighbours.
      std::clock_t cpu0 = std::clock();
      plan::Plan p = must(search::make_plan("tofu", ctx));
      cpu_times.push_back(static_cast<double>(std::clock() - cpu0) / CLOCKS_PER_SEC);
      times.push_back(p.provenance.search_time_s);
      config = p.provenance.config;
    }
    auto at = config.find("comm_bytes=");
    double comm = at == std::string::npos ? 0 : std::atof(config.c_str() + at + 11);
    std::printf("| %s | `%s` | %s | %zu | %.2f | %.2f | %d | %.2f / %.2f | %.2f | %s |\n",
                c.name.c_str(), c.model.c_str(), c.cluster.c_str(), g.num_ops(), median(times),
                median(cpu_times), runs, before, peak_rss_gib(), comm / (1024.0 * 1024.0 * 1024.0),
                c.target.c_str());
    std::fflush(stdout);
  }
}
