#include "search/search.h"

#include <algorithm>
#include <chrono>

#include "cluster/cluster_json.h"
#include "search/baselines/baselines.h"
#include "search/flexflow/flexflow.h"
#include "search/mincut/mincut.h"
#include "search/pardnn/pardnn.h"
#include "search/swapadvisor/swapadvisor.h"
#include "search/tofu/tofu.h"

namespace cleave::search {
namespace {

using Run = std::function<Expected<plan::Plan>(SearchContext const&, Options const&)>;

struct Algorithm {
  AlgorithmInfo info;
  Run run;
};

// The algorithms that declare no options.
Run plain(Expected<plan::Plan> (*fn)(SearchContext const&)) {
  return [fn](SearchContext const& ctx, Options const&) { return fn(ctx); };
}

std::vector<Algorithm> const& table() {
  static std::vector<Algorithm> const all = {
      {{"single", "every op whole on device 0, memory ignored (Tofu's Ideal reference)", "", {}},
       plain(single)},
      {{"data-parallel",
        "every op split on its batch dimension over all devices; weight updates sharded (ZeRO)",
        "",
        {}},
       plain(data_parallel)},
      {{"expert",
        "by hand: Megatron-LM (sequence parallel) on transformers, one weird trick on CNNs, "
        "layer-wise round-robin placement on unrolled RNNs",
        "",
        {}},
       plain(expert)},
      {{"tofu",
        "Tofu: every op cut over all devices, one dimension per recursive 2-way step, chosen by a "
        "DP minimising communication bytes",
        "one recursive step's DP (past the budget: the plan cut so far, on fewer devices)",
        tofu::tofu_options()},
       tofu::tofu},
      {{"tofu-ranked",
        "Tofu's DP once per step sequence (8: 8, 4x2, 2x4, 2x2x2) and fetch policy, the plans "
        "ranked by simulated step time, fitting in memory first",
        "one candidate plan searched, lowered and simulated (past the budget: the best so far)",
        tofu::dp_options()},
       tofu::tofu_ranked},
      {{"optcnn",
        "OptCNN's DP (not recursive, no output reduction): per op a k-way cut of its parallel "
        "dimensions minimising communication bytes",
        "one node elimination of the DP (past the budget: the rest approximately)",
        tofu::dp_options()},
       tofu::optcnn},
      {{"allrow-greedy",
        "Tofu Fig. 10: every op cut on its output's rows, else the cheapest single cut, greedily",
        "",
        {}},
       plain(tofu::allrow_greedy)},
      {{"equal-chop",
        "Tofu Fig. 10: every op chops its parallel dimensions as equally as k allows",
        "",
        {}},
       plain(tofu::equal_chop)},
      {{"flexflow",
        "FlexFlow: MCMC over per-op SOAP configurations (degrees per dimension, devices per "
        "piece) from data-parallel, expert, tofu and random plans, priced by the delta simulator",
        "one proposal priced by the delta simulator (no budget given: " +
            std::to_string(flexflow::default_iterations) + " proposals)",
        flexflow::flexflow_options()},
       flexflow::flexflow},
      {{"mincut",
        "balanced min-cut: the op graph cut by METIS into a part per device (nodes first, parts "
        "in proportion to device speed, time and memory balanced), list-scheduled, every op whole",
        "", mincut::mincut_options()},
       mincut::mincut},
      {{"mincut-split",
        "mincut after cutting the ops heavier than a balanced part along their batch dimension", "",
        mincut::mincut_options()},
       mincut::mincut_split},
      {{"pardnn",
        "ParDNN: every op whole; heaviest paths sliced into primary and secondary clusters, "
        "mapped by work overlap and transfers per link, then units moved off overflowing "
        "devices by least added transfer per byte",
        "",
        {}},
       plain(pardnn::pardnn)},
      {{"critical-path",
        "critical-path placement under memory (m-ETF): every op whole, by bottom level, each on "
        "the device where it finishes earliest, then the memory step of pardnn",
        "",
        {}},
       plain(pardnn::critical_path)},
      {{"linear-clustering",
        "Kim and Browne's linear clustering: every op whole, heaviest paths taken as clusters "
        "until none is left (levels recomputed each time), merged onto the devices by load, then "
        "the memory step of pardnn",
        "",
        {}},
       plain(pardnn::linear_clustering)},
      {{"swapadvisor",
        "SwapAdvisor: device 0's op schedule, memory pool (size classes, objects per class) and "
        "swaps to the host, searched by a genetic algorithm over the swap planner (Belady among "
        "blocks idle for a while) and the simulator",
        "one chromosome planned and simulated (no budget given: the generations option)",
        swapadvisor::swapadvisor_options()},
       swapadvisor::swapadvisor},
      {{"lru-swap",
        "on-demand swapping on device 0: the graph's order, the least recently used block "
        "copied out when memory runs short, copied back one op before its use",
        "",
        {}},
       plain(swapadvisor::lru_swap)},
      {{"ideal",
        "SwapAdvisor's Ideal: every op whole on device 0 with unlimited memory (single)",
        "",
        {}},
       plain(single)},
  };
  return all;
}

Algorithm const* find(std::string const& name) {
  for (auto const& a : table())
    if (a.info.name == name) return &a;
  return nullptr;
}

}  // namespace

std::vector<AlgorithmInfo> algorithm_infos() {
  std::vector<AlgorithmInfo> out;
  for (auto const& a : table())
    out.push_back(a.info);
  return out;
}

std::vector<std::string> algorithms() {
  std::vector<std::string> out;
  for (auto const& info : algorithm_infos())
    out.push_back(info.name);
  return out;
}

std::string algorithms_help() {
  std::string out;
  for (auto const& info : algorithm_infos()) {
    out += "  " + info.name + ": " + info.summary + "\n";
    if (!info.iteration.empty()) out += "      iteration: " + info.iteration + "\n";
    for (auto const& o : info.options)
      out += "      --option " + o.name + "=<" + type_text(o) +
             "> (default: " + (o.default_value.empty() ? "none" : o.default_value) +
             "): " + o.help + "\n";
  }
  return out;
}

Expected<OptionSettings> settings_for(std::string const& algorithm,
                                      std::vector<std::string> const& algorithms,
                                      OptionSettings const& settings) {
  auto declares = [](Algorithm const* a, std::string const& key) {
    return a && std::any_of(a->info.options.begin(), a->info.options.end(),
                            [&](OptionSpec const& o) { return o.name == key; });
  };
  OptionSettings out;
  for (auto const& setting : settings) {
    if (declares(find(algorithm), setting.first)) {
      out.push_back(setting);
      continue;
    }
    if (std::any_of(algorithms.begin(), algorithms.end(),
                    [&](auto const& a) { return declares(find(a), setting.first); }))
      continue;
    std::string valid;
    for (auto const& name : algorithms)
      if (auto const* a = find(name))
        for (auto const& o : a->info.options)
          valid += (valid.empty() ? "" : ", ") + name + ": " + o.name + " (" + type_text(o) + ")";
    return Error(ErrorCode::invalid_argument,
                 "unknown option '" + setting.first + "': no algorithm compared declares it; " +
                     (valid.empty() ? "they have no options" : "valid keys: " + valid));
  }
  return out;
}

Expected<plan::Plan> make_plan(std::string const& algorithm, SearchContext const& ctx) {
  Algorithm const* found = find(algorithm);
  if (!found) {
    std::string known;
    for (auto const& a : algorithms())
      known += (known.empty() ? "" : ", ") + a;
    return Error(ErrorCode::not_found,
                 "unknown algorithm '" + algorithm + "'; available: " + known);
  }
  if ((ctx.budget.time && !(ctx.budget.time->value() > 0)) ||
      (ctx.budget.iterations && *ctx.budget.iterations < 1))
    return Error(ErrorCode::invalid_argument,
                 "a search budget needs a time above 0 s and at least 1 iteration");
  CLEAVE_TRY(Options options, Options::parse(algorithm, found->info.options, ctx.options));
  auto t0 = std::chrono::steady_clock::now();
  auto p = found->run(ctx, options);
  if (ctx.progress) {
    Progress done;
    done.done = true;
    ctx.progress(done);
  }
  if (!p) return p;
  p->num_devices = static_cast<int>(ctx.cluster().num_devices());
  p->cluster = ctx.cluster_spec;
  p->cluster_fingerprint = cluster::fingerprint_hex(ctx.cluster());
  p->model = ctx.model;
  auto& prov = p->provenance;
  prov.algorithm = algorithm;
  prov.options = options.settings();
  prov.seed = ctx.seed;
  if (ctx.budget.time) prov.budget_time_s = ctx.budget.time->value();
  prov.budget_iterations = ctx.budget.iterations;
  prov.interrupted = ctx.budget.stop && ctx.budget.stop->load();
  prov.search_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return p;
}

}  // namespace cleave::search
