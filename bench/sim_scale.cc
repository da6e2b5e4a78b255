// Simulator benchmark (issue 4): (1) delta simulation against full lowering + prediction after
// random single-op changes of a data-parallel GPT on a DGX A100 (target: delta at least 10x
// faster, with identical results); (2) full-simulation throughput on a program of 100,000+ tasks,
// with lowering, pricing, the event loop and the summary timed separately.
//
//   sim_scale [--changes N] [--runs N] [--markdown]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "autodiff/training_graph.h"
#include "bench_util.h"
#include "cluster/presets.h"
#include "models/model_zoo.h"
#include "search/search.h"
#include "sim/delta.h"

namespace {

using namespace cleave;
using namespace cleave::bench;

struct Setup {
  std::unique_ptr<ops::OpRegistry> registry = ops::OpRegistry::with_builtins();
  ir::Graph graph;
  cluster::Cluster cluster;
  plan::Plan plan;
  std::int64_t batch;

  Setup(std::string const& model, std::string const& cluster_spec, std::int64_t batch_size)
      : graph(must(autodiff::build_training_graph(
            must(models::ModelZoo::with_builtins().build(model, *registry)), *registry))),
        cluster(must(cluster::load_cluster(cluster_spec))), batch(batch_size) {
    cost::CostModel cost(cluster);
    search::SearchContext ctx{graph, *registry, cost, cluster_spec, model, batch, 0};
    plan = must(search::make_plan("data-parallel", ctx));
  }
};

// A random valid configuration: each splittable dimension split 1, 2, 4 or 8 ways (at most 8
// pieces), each piece on a random device.
plan::OpConfig random_config(Setup const& s, ir::OpId op, std::mt19937_64& rng) {
  auto bound = must(s.registry->bind(s.graph, op));
  plan::OpConfig c;
  c.degrees.assign(bound->dims().size(), 1);
  std::int64_t pieces = 1;
  for (std::size_t d = 0; d < bound->dims().size(); ++d) {
    auto const& dim = bound->dims()[d];
    std::int64_t k = std::int64_t{1} << (rng() % 4);
    if (!dim.splittable || k > dim.extent || pieces * k > 8) continue;
    c.degrees[d] = k;
    pieces *= k;
  }
  for (std::int64_t i = 0; i < pieces; ++i)
    c.devices.push_back(static_cast<int>(rng() % static_cast<unsigned>(s.plan.num_devices)));
  return c;
}

bool identical(sim::Prediction const& a, sim::Prediction const& b) {
  return a.step_time_s == b.step_time_s && a.device_compute_s == b.device_compute_s &&
         a.peak_memory_bytes == b.peak_memory_bytes && a.comm_bytes == b.comm_bytes &&
         a.link_bytes == b.link_bytes && a.breakdown.compute_s == b.breakdown.compute_s &&
         a.breakdown.exposed_comm_s == b.breakdown.exposed_comm_s &&
         a.breakdown.idle_s == b.breakdown.idle_s && a.breakdown.comm_s == b.breakdown.comm_s;
}

struct DeltaFigures {
  std::size_t ops = 0, tasks = 0;
  int changes = 0, checked = 0, same = 0;
  double full_s = 0, delta_s = 0, replayed = 0, priced = 0;
};

DeltaFigures delta_vs_full(int changes, int full_runs) {
  Setup s("gpt:layers=24,hidden=2048,heads=32,seq=1024,batch=8", "dgx-a100", 8);
  cost::CostModel cost(s.cluster);
  auto delta = must(sim::DeltaSimulator::create(s.graph, s.plan, *s.registry, cost, s.batch));
  DeltaFigures f;
  f.ops = s.graph.num_ops();
  f.tasks = delta.program().tasks.size();
  f.changes = changes;
  std::mt19937_64 rng(7);
  std::vector<double> delta_times, full_times, replayed, priced;
  plan::Plan plan = s.plan;
  for (int i = 0; i < changes;) {
    ir::OpId op(static_cast<std::uint32_t>(rng() % s.graph.num_ops()));
    auto config = random_config(s, op, rng);
    auto t0 = Clock::now();
    auto applied = delta.apply(op, config);
    if (!applied) continue;  // a split the op cannot take (a non-rectangular piece): draw again
    sim::Prediction got = std::move(applied).value();
    delta_times.push_back(seconds_since(t0));
    plan.ops[op.value()] = std::move(config);
    ++i;
    auto const& work = delta.last_work();
    replayed.push_back(static_cast<double>(work.nodes_replayed) / static_cast<double>(work.nodes));
    priced.push_back(static_cast<double>(work.tasks_priced));
    // Full lowering + prediction of the same plan, on every (changes / full_runs)-th change.
    if ((i - 1) % std::max(1, changes / full_runs) != 0) continue;
    t0 = Clock::now();
    auto program = must(lower::lower(s.graph, plan, *s.registry));
    auto full = sim::predict(s.graph, program, cost, s.batch);
    full_times.push_back(seconds_since(t0));
    ++f.checked;
    f.same += identical(got, full);
  }
  f.full_s = median(full_times);
  f.delta_s = median(delta_times);
  f.replayed = median(replayed);
  f.priced = median(priced);
  return f;
}

struct ThroughputFigures {
  std::string model, cluster;
  std::size_t ops = 0, tasks = 0, collectives = 0, nodes = 0;
  double lower_s = 0, price_s = 0, simulate_s = 0, summarize_s = 0;
};

ThroughputFigures throughput(int runs) {
  ThroughputFigures f{"gpt:layers=24,hidden=2048,heads=32,seq=1024,batch=16", "h100-2x8"};
  Setup s(f.model, f.cluster, 16);
  cost::CostModel cost(s.cluster);
  auto resources = sim::resources_of(s.cluster);
  std::vector<double> lower_t, price_t, sim_t, sum_t;
  for (int r = 0; r < runs; ++r) {
    auto t0 = Clock::now();
    auto program = must(lower::lower(s.graph, s.plan, *s.registry));
    lower_t.push_back(seconds_since(t0));
    t0 = Clock::now();
    auto costs = sim::collective_costs(program, s.graph, cost);
    auto timings = sim::timings_of(program, s.graph, cost, costs);
    price_t.push_back(seconds_since(t0));
    t0 = Clock::now();
    auto result = sim::simulate(program, timings, resources);
    sim_t.push_back(seconds_since(t0));
    t0 = Clock::now();
    auto p = sim::summarize(s.graph, program, cost, costs, timings, std::move(result), s.batch);
    sum_t.push_back(seconds_since(t0));
    f.tasks = program.tasks.size();
    f.collectives = program.collectives.size();
    f.nodes = f.collectives;
    for (auto const& t : program.tasks)
      f.nodes += t.collective == lower::no_collective;
  }
  f.ops = s.graph.num_ops();
  f.lower_s = median(lower_t);
  f.price_s = median(price_t);
  f.simulate_s = median(sim_t);
  f.summarize_s = median(sum_t);
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  int changes = 50, runs = 3;
  bool markdown = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--changes" && i + 1 < argc) {
      changes = std::atoi(argv[++i]);
    } else if (a == "--runs" && i + 1 < argc) {
      runs = std::atoi(argv[++i]);
    } else if (a == "--markdown") {
      markdown = true;
    } else {
      std::fprintf(stderr, "usage: sim_scale [--changes N] [--runs N] [--markdown]\n");
      return 2;
    }
  }
  DeltaFigures d = delta_vs_full(changes, runs);
  ThroughputFigures t = throughput(runs);
  double ratio = d.delta_s > 0 ? d.full_s / d.delta_s : 0;
  double rate = t.simulate_s > 0 ? static_cast<double>(t.tasks) / t.simulate_s : 0;
  if (markdown) {
    std::printf("## Delta simulation: gpt:layers=24,hidden=2048,heads=32,seq=1024,batch=8, "
                "data-parallel, dgx-a100\n\n");
    std::printf("| ops | tasks | changes | full lower + predict (median) | delta apply (median) | "
                "speedup | nodes replayed (median) | tasks priced (median) | identical |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|\n");
    std::printf("| %zu | %zu | %d | %.3f s | %.4f s | %.1fx | %.0f%% | %.0f | %d of %d |\n\n",
                d.ops, d.tasks, d.changes, d.full_s, d.delta_s, ratio, 100 * d.replayed, d.priced,
                d.same, d.checked);
    std::printf("## Full simulation throughput: %s, data-parallel, %s\n\n", t.model.c_str(),
                t.cluster.c_str());
    std::printf("| ops | tasks | collectives | nodes simulated | lower | price | simulate | "
                "summarize | simulate tasks/s |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|\n");
    std::printf("| %zu | %zu | %zu | %zu | %.3f s | %.3f s | %.3f s | %.3f s | %.2fM |\n", t.ops,
                t.tasks, t.collectives, t.nodes, t.lower_s, t.price_s, t.simulate_s, t.summarize_s,
                rate / 1e6);
  } else {
    std::printf("delta: %zu ops, %zu tasks; full %.3f s, delta %.4f s (%.1fx), replayed %.0f%%, "
                "priced %.0f, identical %d of %d\n",
                d.ops, d.tasks, d.full_s, d.delta_s, ratio, 100 * d.replayed, d.priced, d.same,
                d.checked);
    std::printf("throughput: %zu ops, %zu tasks, %zu collectives, %zu nodes; lower %.3f s, price "
                "%.3f s, simulate %.3f s (%.2fM tasks/s), summarize %.3f s\n",
                t.ops, t.tasks, t.collectives, t.nodes, t.lower_s, t.price_s, t.simulate_s,
                rate / 1e6, t.summarize_s);
  }
  return d.same == d.checked ? 0 : 1;
}
