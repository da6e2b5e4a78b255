#include "search/mincut/mincut.h"

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "search/common/list_schedule.h"
#include "search/common/memory_repair.h"
#include "search/common/op_graph.h"
#include "search/mincut/partition.h"

namespace cleave::search::mincut {
namespace {

// Per device, its units' time (on device 0) over its share of the whole by speed.
std::vector<double> loads(OpGraph const& graph, std::vector<int> const& device,
                          std::vector<double> const& speeds) {
  std::vector<double> load(speeds.size(), 0.0);
  for (std::size_t u = 0; u < graph.units.size(); ++u)
    load[static_cast<std::size_t>(device[u])] += graph.units[u].seconds;
  double total = std::accumulate(load.begin(), load.end(), 0.0);
  double speed_sum = std::accumulate(speeds.begin(), speeds.end(), 0.0);
  for (std::size_t d = 0; d < load.size(); ++d)
    load[d] = total > 0 ? load[d] / (total * speeds[d] / speed_sum) : 1.0;
  return load;
}

// METIS knows nothing of split ops: pieces of one op that landed on one device go to the least
// loaded devices the op does not use yet.
void separate_pieces(OpGraph const& graph, std::vector<int>& device,
                     std::vector<double> const& speeds) {
  auto load = loads(graph, device, speeds);
  std::map<int, std::vector<std::size_t>> groups;
  for (std::size_t u = 0; u < graph.units.size(); ++u)
    if (graph.units[u].exclusive >= 0) groups[graph.units[u].exclusive].push_back(u);
  for (auto const& [op, members] : groups) {
    std::vector<bool> used(speeds.size(), false);
    for (std::size_t u : members) {
      auto d = static_cast<std::size_t>(device[u]);
      if (used[d]) {
        std::size_t best = SIZE_MAX;
        for (std::size_t e = 0; e < used.size(); ++e)
          if (!used[e] && (best == SIZE_MAX || load[e] < load[best])) best = e;
        d = best;  // heavy_splits makes at most one piece per device
        device[u] = static_cast<int>(d);
      }
      used[d] = true;
    }
  }
}

std::string fixed(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", value);
  return text;
}

Expected<plan::Plan> run(SearchContext const& ctx, Options const& options, bool split) {
  CLEAVE_TRY(OpGraph graph, build_op_graph(ctx, {}));
  auto speeds = device_speeds(ctx, graph);
  std::vector<Split> splits;
  if (split) {
    CLEAVE_TRY(splits, heavy_splits(ctx, graph, speeds));
    if (!splits.empty()) {
      CLEAVE_TRY(graph, build_op_graph(ctx, splits));
    }
  }
  CLEAVE_CHECK_OK(units_fit_some_device(ctx, graph));
  PartitionSettings settings;
  settings.recursive = options.choice("partitioner") == "recursive";
  settings.time_tolerance = 1.0 + static_cast<double>(options.integer("imbalance")) / 1000;
  settings.memory_tolerance = 1.0 + static_cast<double>(options.integer("memory_imbalance")) / 1000;
  CLEAVE_TRY(Partition part, partition(ctx, graph, speeds, settings));
  separate_pieces(graph, part.device, speeds);
  int const num_devices = static_cast<int>(ctx.cluster().num_devices());
  auto plan_of = [&](std::vector<int> const& device) -> Expected<plan::Plan> {
    return placement_plan(ctx, graph, device);
  };
  CLEAVE_TRY(Repaired repaired, repair_memory(ctx, graph.units, part.device, plan_of));
  std::int64_t cut = cut_bytes(graph, repaired.device);
  auto load = loads(graph, repaired.device, speeds);
  repaired.plan.provenance.config =
      "parts=" + std::to_string(num_devices) + " units=" + std::to_string(graph.units.size()) +
      " splits=" + std::to_string(splits.size()) + " cut_bytes=" + std::to_string(cut) +
      " balance=" + fixed(*std::max_element(load.begin(), load.end())) +
      " metis_s=" + fixed(part.metis_seconds) + " memory_moves=" + std::to_string(repaired.moves);
  return std::move(repaired.plan);
}

}  // namespace

std::vector<OptionSpec> mincut_options() {
  return {
      {"partitioner",
       OptionType::choice,
       "kway",
       "METIS's k-way partitioning or its recursive bisection",
       {"kway", "recursive"}},
      {"imbalance",
       OptionType::integer,
       "30",
       "per mille a part's compute time may exceed its target (METIS's ubvec)",
       {}},
      {"memory_imbalance",
       OptionType::integer,
       "100",
       "per mille a part's memory may exceed its target, at least (up to its devices' capacity)",
       {}},
  };
}

Expected<plan::Plan> mincut(SearchContext const& ctx, Options const& options) {
  return run(ctx, options, false);
}

Expected<plan::Plan> mincut_split(SearchContext const& ctx, Options const& options) {
  return run(ctx, options, true);
}

}  // namespace cleave::search::mincut
