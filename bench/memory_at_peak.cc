// What fills the fullest device at its peak (issue 5): the plan of one algorithm is evaluated
// (sim::evaluate) and what is live on the device with the highest peak, at the instant of that
// peak, is summed by role (sim/memory_use.h: the simulator's memory rule, lower/lifetime.h, so the
// parts add up to the predicted peak).
//
//   memory_at_peak MODEL [--cluster C] [--algo A] [--top N]
//     also splits the saved activations by the op type that wrote them, lists the N largest blocks
//     alive at the peak (default 10), says how much of the fetched copies is read by both forward
//     and backward ops (shared across the passes) and the highest peak without any fetched copy.
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "api/model_input.h"
#include "bench_util.h"
#include "cluster/presets.h"
#include "lower/lifetime.h"
#include "search/search.h"
#include "sim/evaluate.h"

namespace {

using namespace cleave;
using namespace cleave::bench;

double gib(std::int64_t b) {
  return static_cast<double>(b) / (1024.0 * 1024.0 * 1024.0);
}

// Per block, the bytes live on `device` after every event up to `at` (the peak's instant: the
// events at it are frees and then the allocations that reach the peak).
std::vector<std::int64_t> live_at(sim::MemoryUse const& use, std::size_t device, double at) {
  std::vector<std::int64_t> live(use.blocks.size(), 0);
  for (auto const& e : use.events[device])
    if (e.time_s <= at) live[e.block] += e.bytes;
  return live;
}

// Fetched copies over the step, and those read by both forward and backward ops.
std::pair<std::int64_t, std::int64_t> fetched_across_phases(ir::Graph const& g,
                                                            lower::Program const& program,
                                                            sim::MemoryUse const& use) {
  auto lifetimes = lower::output_lifetimes(program);
  std::int64_t total = 0, across = 0;
  for (auto const& b : use.blocks) {
    if (b.role != sim::MemoryRole::fetched) continue;
    bool fwd = false, bwd = false;
    for (auto r : lifetimes[b.task].readers)
      if (program.tasks[r].kind == lower::TaskKind::compute)
        (g.op(program.tasks[r].op).forward.valid() ? bwd : fwd) = true;
    total += b.bytes;
    if (fwd && bwd) across += b.bytes;
  }
  return {total, across};
}

// The peak with no fetched copy at all, over every device: what no way of scheduling or sharing
// fetches can go below.
std::int64_t peak_without_fetched(sim::MemoryUse const& use) {
  std::int64_t floor = 0;
  for (auto const& on : use.events) {
    std::int64_t level = 0;
    for (auto const& e : on) {
      if (use.blocks[e.block].role == sim::MemoryRole::fetched) continue;
      level += e.bytes;
      floor = std::max(floor, level);
    }
  }
  return floor;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: memory_at_peak MODEL [--cluster C] [--algo A] [--top N]\n");
    return 2;
  }
  std::string spec = argv[1], cluster_spec = "k80x8", algo = "tofu";
  int top = 10;
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--cluster") cluster_spec = argv[i + 1];
    if (a == "--algo") algo = argv[i + 1];
    if (a == "--top") top = std::atoi(argv[i + 1]);
  }
  auto registry = ops::OpRegistry::with_builtins();
  auto model = must(api::load_model(spec, *registry, {}));
  ir::Graph const& g = model.training;
  auto cluster = must(cluster::load_cluster(cluster_spec));
  cost::CostModel cost(cluster);
  search::SearchContext ctx{g, *registry, cost, cluster_spec, model.label, model.batch, 0};
  plan::Plan p = must(search::make_plan(algo, ctx));
  auto e = must(sim::evaluate({g, *registry, p, cost, model.batch, static_cast<std::size_t>(top)}));
  auto const& pred = e.prediction;
  std::size_t worst = 0;
  for (std::size_t d = 1; d < e.devices.size(); ++d)
    if (e.devices[d].memory.peak_bytes > e.devices[worst].memory.peak_bytes) worst = d;
  auto const& m = e.devices[worst].memory;
  auto use = sim::memory_use(g, e.program, pred.sim.spans);
  auto live = live_at(use, worst, m.peak_s);

  // What runs on the device at the peak.
  std::string running;
  for (lower::TaskId i = 0; i < e.program.tasks.size(); ++i) {
    auto const& t = e.program.tasks[i];
    if (t.device == static_cast<int>(worst) && t.kind == lower::TaskKind::compute &&
        pred.sim.spans[i].start <= m.peak_s && m.peak_s < pred.sim.spans[i].end)
      running = g.op(t.op).name;
  }
  std::printf("%s on %s, %s: step %.3f s, comm %.2f GiB, peak %.2f GiB on device %zu of %.2f GiB "
              "at t=%.3f s (running %s)\n",
              spec.c_str(), cluster_spec.c_str(), algo.c_str(), pred.step_time_s,
              gib(pred.comm_bytes), gib(m.peak_bytes), worst, gib(m.capacity_bytes), m.peak_s,
              running.empty() ? "-" : running.c_str());
  std::vector<std::pair<std::int64_t, std::string>> sorted;
  for (std::size_t r = 0; r < sim::memory_role_count; ++r)
    if (m.peak_by_role[r] != 0)
      sorted.push_back(
          {m.peak_by_role[r], std::string(sim::memory_role_name(static_cast<sim::MemoryRole>(r)))});
  std::sort(sorted.rbegin(), sorted.rend());
  std::printf("\n| at the peak | GiB | share |\n|---|---|---|\n");
  for (auto const& [b, c] : sorted)
    std::printf("| %s | %.2f | %.0f %% |\n", c.c_str(), gib(b),
                100.0 * static_cast<double>(b) / static_cast<double>(m.peak_bytes));

  std::map<std::string, std::int64_t> activations_by_producer;  // op type of the producer
  for (std::size_t b = 0; b < use.blocks.size(); ++b)
    if (live[b] > 0 && use.blocks[b].role == sim::MemoryRole::saved_activations)
      activations_by_producer[g.op(g.producer(use.blocks[b].tensor)).type] += live[b];
  std::printf("\nsaved activations by the op type that wrote them (GiB):");
  char const* sep = " ";
  for (auto const& [type, b] : activations_by_producer) {
    if (b < (std::int64_t{1} << 20)) continue;  // under 1 MiB
    std::printf("%s%s %.2f", sep, type.c_str(), gib(b));
    sep = ", ";
  }
  auto [fetched, across] = fetched_across_phases(g, e.program, use);
  std::printf(".\n\nfetched copies (all devices, whole step): %.2f GiB, of which read by forward "
              "and backward ops both: %.2f GiB.\n",
              gib(fetched), gib(across));
  std::printf("\nthe highest peak over all devices without any fetched copy: %.2f GiB.\n",
              gib(peak_without_fetched(use)));
  if (!m.largest_at_peak.empty()) std::printf("\nlargest blocks alive at the peak:\n\n");
  for (auto const& b : m.largest_at_peak)
    std::printf("- %.3f GiB %s %s (%s)\n", gib(b.bytes), b.tensor.c_str(),
                tdl::box_to_string(b.region).c_str(),
                std::string(sim::memory_role_name(b.role)).c_str());
  return 0;
}
