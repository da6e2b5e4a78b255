#include "search/pardnn/slicing.h"

#include <algorithm>
#include <numeric>

namespace cleave::search::pardnn {
namespace {

constexpr std::uint32_t none = UINT32_MAX;

// Makes the heaviest path through `start` among the units in no cluster the cluster `id`: from
// `start` back along the predecessor that makes its top level, and on along the successor that
// makes its bottom level, transfers priced by the mean link.
void take_path(UnitDag const& dag, Links const& links, Levels const& lv, std::vector<int>& cluster,
               std::uint32_t start, int id) {
  cluster[start] = id;
  for (std::uint32_t u = start;;) {
    std::uint32_t best = none;
    double best_top = 0;
    for (std::size_t e = dag.pred_begin[u]; e < dag.pred_begin[u + 1]; ++e) {
      auto const& p = dag.preds[e];
      double top = lv.top[p.to] + dag.seconds[p.to] + links.mean_seconds(p.bytes);
      if (cluster[p.to] < 0 && (best == none || top > best_top)) best = p.to, best_top = top;
    }
    if (best == none) break;
    cluster[best] = id;
    u = best;
  }
  for (std::uint32_t u = start;;) {
    std::uint32_t best = none;
    double best_bottom = 0;
    for (std::size_t e = dag.succ_begin[u]; e < dag.succ_begin[u + 1]; ++e) {
      auto const& s = dag.succs[e];
      double bottom = links.mean_seconds(s.bytes) + lv.bottom[s.to];
      if (cluster[s.to] < 0 && (best == none || bottom > best_bottom))
        best = s.to, best_bottom = bottom;
    }
    if (best == none) break;
    cluster[best] = id;
    u = best;
  }
}

}  // namespace

Slicing slice(UnitDag const& dag, Links const& links, int num_devices) {
  std::size_t const n = dag.size();
  Slicing out;
  out.cluster.assign(n, -1);
  for (int k = 0; k < num_devices; ++k) {
    auto lv = levels(dag, links, out.cluster);
    std::uint32_t start = none;
    for (std::uint32_t u = 0; u < n; ++u)
      if (out.cluster[u] < 0 && (start == none || lv.weight(u) > lv.weight(start))) start = u;
    if (start == none) break;
    take_path(dag, links, lv, out.cluster, start, out.clusters++);
  }
  out.primaries = out.clusters;
  auto lv = levels(dag, links, out.cluster);
  std::vector<std::uint32_t> left;
  for (std::uint32_t u = 0; u < n; ++u)
    if (out.cluster[u] < 0) left.push_back(u);
  std::stable_sort(left.begin(), left.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return lv.weight(a) > lv.weight(b); });
  for (std::uint32_t u : left)
    if (out.cluster[u] < 0) take_path(dag, links, lv, out.cluster, u, out.clusters++);
  out.levels = levels(dag, links, out.cluster);
  return out;
}

Slicing linear_clusters(UnitDag const& dag, Links const& links) {
  Slicing out;
  out.cluster.assign(dag.size(), -1);
  std::vector<std::uint32_t> left = dag.topo;
  while (!left.empty()) {
    auto lv = levels(dag, links, out.cluster, &left);
    std::uint32_t start = left[0];
    for (std::uint32_t u : left)
      if (lv.weight(u) > lv.weight(start)) start = u;
    take_path(dag, links, lv, out.cluster, start, out.clusters++);
    std::erase_if(left, [&](std::uint32_t u) { return out.cluster[u] >= 0; });
  }
  out.levels = levels(dag, links, out.cluster);
  return out;
}

}  // namespace cleave::search::pardnn
