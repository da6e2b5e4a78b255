#include "search/search.h"

#include <chrono>
#include <functional>

#include "cluster/cluster_json.h"
#include "search/baselines/baselines.h"
#include "search/tofu/tofu.h"

namespace cleave::search {
namespace {

struct Algorithm {
  AlgorithmInfo info;
  std::function<Expected<plan::Plan>(SearchContext const&)> run;
};

std::vector<Algorithm> const& table() {
  static std::vector<Algorithm> const all = {
      {{"single", "every op whole on device 0, memory ignored (Tofu's Ideal reference)"}, single},
      {{"data-parallel",
        "every op split on its batch dimension over all devices; weight updates sharded (ZeRO)"},
       data_parallel},
      {{"expert",
        "by hand: Megatron-LM (sequence parallel) on transformers, one weird trick on CNNs, "
        "layer-wise round-robin placement on unrolled RNNs"},
       expert},
      {{"tofu",
        "Tofu: every op cut over all devices, one dimension per recursive 2-way step, chosen by a "
        "DP minimising communication bytes"},
       tofu::tofu},
      {{"tofu-ranked",
        "Tofu's DP once per step sequence (8: 8, 4x2, 2x4, 2x2x2), the plans ranked by simulated "
        "step time, fitting in memory first"},
       tofu::tofu_ranked},
      {{"optcnn", "OptCNN's DP (not recursive, no output reduction): per op a k-way cut of its "
                  "parallel dimensions minimising communication bytes"},
       tofu::optcnn},
      {{"allrow-greedy", "Tofu Fig. 10: every op cut on its output's rows, else the cheapest "
                         "single cut, greedily"},
       tofu::allrow_greedy},
      {{"equal-chop",
        "Tofu Fig. 10: every op chops its parallel dimensions as equally as k allows"},
       tofu::equal_chop},
  };
  return all;
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
  for (auto const& a : table())
    out.push_back(a.info.name);
  return out;
}

Expected<plan::Plan> make_plan(std::string const& algorithm, SearchContext const& ctx) {
  Algorithm const* found = nullptr;
  for (auto const& a : table())
    if (a.info.name == algorithm) found = &a;
  if (!found) {
    std::string known;
    for (auto const& a : algorithms())
      known += (known.empty() ? "" : ", ") + a;
    return Error(ErrorCode::not_found,
                 "unknown algorithm '" + algorithm + "'; available: " + known);
  }
  auto t0 = std::chrono::steady_clock::now();
  CLEAVE_TRY(plan::Plan p, found->run(ctx));
  p.num_devices = static_cast<int>(ctx.cluster.num_devices());
  p.cluster = ctx.cluster_spec;
  p.cluster_fingerprint = cluster::fingerprint_hex(ctx.cluster);
  p.model = ctx.model;
  p.provenance.algorithm = algorithm;
  p.provenance.seed = ctx.seed;
  p.provenance.search_time_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return p;
}

}  // namespace cleave::search
