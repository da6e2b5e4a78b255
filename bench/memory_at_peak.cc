// What fills the fullest device at its peak (issue 5): the plan of one algorithm is lowered and
// simulated, and the blocks alive on the device with the highest peak, at the instant of that
// peak, are summed by what they are: blocks held before the step (by tensor role), outputs of
// compute and reduce tasks (by role; partial results apart), and fetched copies (transfers, by the
// role of the tensor moved). The memory rule is sim::predict's (lower/lifetime.h), so the total
// equals the predicted peak.
//
//   memory_at_peak MODEL [--cluster C] [--algo A] [--top N]
//     also splits the activations by the op type that wrote them, lists the N largest tensors
//     alive at the peak (default 10) and says how much of the fetched copies is read by both
//     forward and backward ops (shared across the passes).
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "autodiff/training_graph.h"
#include "bench_util.h"
#include "cluster/presets.h"
#include "lower/lifetime.h"
#include "lower/lowering.h"
#include "models/model_zoo.h"
#include "search/search.h"
#include "sim/predict.h"

namespace {

using namespace cleave;
using namespace cleave::bench;

std::int64_t first_input_batch(ir::Graph const& g) {
  for (auto const& t : g.tensors())
    if (t.role == ir::TensorRole::input && !t.type.shape.empty()) return t.type.shape[0];
  return 1;
}

double gib(std::int64_t b) {
  return static_cast<double>(b) / (1024.0 * 1024.0 * 1024.0);
}

struct Event {
  double time = 0;
  bool alloc = false;
  std::int64_t bytes = 0;
  std::size_t block = 0;  // index into blocks
};

struct BlockInfo {
  std::string category;
  ir::TensorId tensor;
};

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
  auto model = must(models::ModelZoo::with_builtins().build(spec, *registry));
  ir::Graph g = must(autodiff::build_training_graph(model, *registry));
  auto cluster = must(cluster::load_cluster(cluster_spec));
  std::int64_t batch = first_input_batch(model);
  cost::CostModel cost(cluster);
  search::SearchContext ctx{g, *registry, cost, cluster_spec, spec, batch, 0};
  plan::Plan p = must(search::make_plan(algo, ctx));
  lower::Program program = must(lower::lower(g, p, *registry));
  sim::Prediction pred = sim::predict(g, program, cost, batch);
  auto const& spans = pred.sim.spans;

  // Blocks and their lifetimes, as sim::predict's add_memory counts them.
  auto const& tasks = program.tasks;
  auto lifetimes = lower::output_lifetimes(program);
  std::vector<BlockInfo> blocks;
  std::vector<std::vector<Event>> events(static_cast<std::size_t>(program.num_devices));
  auto bytes_of = [&](ir::TensorId t, tdl::Box const& r) {
    return tdl::box_volume(r) * ir::dtype_bytes(g.tensor(t).type.dtype);
  };
  for (auto const& b : program.initial) {
    blocks.push_back({"held " + std::string(ir::role_name(g.tensor(b.tensor).role)), b.tensor});
    events[static_cast<std::size_t>(b.device)].push_back(
        {0.0, true, bytes_of(b.tensor, b.region), blocks.size() - 1});
  }
  std::int64_t across_phases = 0, fetched_total = 0;  // fetched copies read in both phases
  for (lower::TaskId i = 0; i < tasks.size(); ++i) {
    auto const& t = tasks[i];
    std::int64_t size = bytes_of(t.tensor, t.region);
    auto& on = events[static_cast<std::size_t>(t.device)];
    if (t.kind == lower::TaskKind::swap_out) {  // frees the block it copies (negative share)
      blocks.push_back({"swapped out", t.tensor});
      on.push_back({spans[i].end, false, size, blocks.size() - 1});
      continue;
    }
    std::string role(ir::role_name(g.tensor(t.tensor).role));
    std::string category = t.kind == lower::TaskKind::transfer
                               ? (t.partial ? "in flight partial " : "fetched ") + role
                           : t.partial ? "partial " + role
                                       : "written " + role;
    blocks.push_back({category, t.tensor});
    on.push_back({spans[i].start, true, size, blocks.size() - 1});
    double last = -1;
    bool fwd = false, bwd = false;
    for (auto r : lifetimes[i].readers) {
      last = std::max(last, spans[r].end);
      if (tasks[r].kind == lower::TaskKind::compute)
        (g.op(tasks[r].op).forward.valid() ? bwd : fwd) = true;
    }
    if (t.kind == lower::TaskKind::transfer && !t.partial) {
      fetched_total += size;
      if (fwd && bwd) across_phases += size;
    }
    if (last >= 0 && !lifetimes[i].swapped) on.push_back({last, false, size, blocks.size() - 1});
  }

  // The device with the highest peak, and the instant of it (frees before allocations at equal
  // times, as add_memory orders them).
  std::size_t worst = 0;
  for (std::size_t d = 1; d < pred.peak_memory_bytes.size(); ++d)
    if (pred.peak_memory_bytes[d] > pred.peak_memory_bytes[worst]) worst = d;
  auto& ev = events[worst];
  std::stable_sort(ev.begin(), ev.end(), [](Event const& a, Event const& b) {
    return a.time != b.time ? a.time < b.time : (!a.alloc && b.alloc);
  });
  std::int64_t now = 0, peak = 0;
  std::size_t peak_at = 0;
  for (std::size_t e = 0; e < ev.size(); ++e) {
    now += ev[e].alloc ? ev[e].bytes : -ev[e].bytes;
    if (now > peak) {
      peak = now;
      peak_at = e;
    }
  }
  std::vector<std::int64_t> live(blocks.size(), 0);
  for (std::size_t e = 0; e <= peak_at && e < ev.size(); ++e)
    live[ev[e].block] += ev[e].alloc ? ev[e].bytes : -ev[e].bytes;
  std::map<std::string, std::int64_t> by_category;
  std::map<std::string, std::int64_t> by_tensor;
  std::map<std::string, std::int64_t> activations_by_producer;  // op type of the producer
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    if (live[b] == 0) continue;
    by_category[blocks[b].category] += live[b];
    if (blocks[b].category == "written activation")
      activations_by_producer[g.op(g.producer(blocks[b].tensor)).type] += live[b];
    by_tensor[g.tensor(blocks[b].tensor).name + " (" + blocks[b].category + ")"] += live[b];
  }

  // The peak with no fetched copy at all, over every device: what no way of scheduling or
  // sharing fetches can go below.
  std::int64_t floor = 0;
  for (auto& on : events) {
    std::stable_sort(on.begin(), on.end(), [](Event const& a, Event const& b) {
      return a.time != b.time ? a.time < b.time : (!a.alloc && b.alloc);
    });
    std::int64_t level = 0;
    for (auto const& e : on) {
      if (blocks[e.block].category.rfind("fetched ", 0) == 0) continue;
      level += e.alloc ? e.bytes : -e.bytes;
      floor = std::max(floor, level);
    }
  }

  // What runs on the device at the peak: forward or backward.
  double at = ev.empty() ? 0 : ev[peak_at].time;
  std::string running;
  for (lower::TaskId i = 0; i < tasks.size(); ++i)
    if (tasks[i].device == static_cast<int>(worst) && tasks[i].kind == lower::TaskKind::compute &&
        spans[i].start <= at && at < spans[i].end)
      running = g.op(tasks[i].op).name;

  std::printf("%s on %s, %s: step %.3f s, comm %.2f GiB, peak %.2f GiB on device %zu of %.2f GiB "
              "(predicted %.2f) at t=%.3f s (running %s)\n",
              spec.c_str(), cluster_spec.c_str(), algo.c_str(), pred.step_time_s,
              gib(pred.comm_bytes), gib(peak), worst, gib(pred.memory_capacity_bytes[worst]),
              gib(pred.peak_memory_bytes[worst]), at, running.empty() ? "-" : running.c_str());
  std::vector<std::pair<std::int64_t, std::string>> sorted;
  for (auto const& [c, b] : by_category)
    sorted.push_back({b, c});
  std::sort(sorted.rbegin(), sorted.rend());
  std::printf("\n| at the peak | GiB | share |\n|---|---|---|\n");
  for (auto const& [b, c] : sorted)
    std::printf("| %s | %.2f | %.0f %% |\n", c.c_str(), gib(b),
                100.0 * static_cast<double>(b) / static_cast<double>(peak));
  std::printf("\nwritten activations by the op type that wrote them (GiB):");
  char const* sep = " ";
  for (auto const& [type, b] : activations_by_producer) {
    if (b < (std::int64_t{1} << 20)) continue;  // under 1 MiB
    std::printf("%s%s %.2f", sep, type.c_str(), gib(b));
    sep = ", ";
  }
  std::printf(".\n");
  std::printf("\nfetched copies (all devices, whole step): %.2f GiB, of which read by forward and "
              "backward ops both: %.2f GiB.\n",
              gib(fetched_total), gib(across_phases));
  std::printf("\nthe highest peak over all devices without any fetched copy: %.2f GiB.\n",
              gib(floor));
  sorted.clear();
  for (auto const& [c, b] : by_tensor)
    sorted.push_back({b, c});
  std::sort(sorted.rbegin(), sorted.rend());
  if (top > 0 && !sorted.empty()) std::printf("\nlargest tensors alive at the peak:\n\n");
  for (std::size_t i = 0; i < sorted.size() && i < static_cast<std::size_t>(top); ++i)
    std::printf("- %.3f GiB %s\n", gib(sorted[i].first), sorted[i].second.c_str());
  return 0;
}
