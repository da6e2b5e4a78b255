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

// Makes the heaviest path of the graph left once the clustered units are removed (`left`: the
// units in no cluster, in a topological order, not empty) a new cluster, and drops its units
// from `left`. With the levels of the whole graph instead, the heaviest unit left can owe its
// weight to clustered neighbours and its path among the units left be a stub (on Word-RNN half
// of ParDNN's primaries were units of no compute, and its step 1.6x longer).
void take_heaviest(UnitDag const& dag, Links const& links, Slicing& out,
                   std::vector<std::uint32_t>& left) {
  auto lv = levels(dag, links, out.cluster, &left);
  std::uint32_t start = left[0];
  for (std::uint32_t u : left)
    if (lv.weight(u) > lv.weight(start)) start = u;
  take_path(dag, links, lv, out.cluster, start, out.clusters++);
  std::erase_if(left, [&](std::uint32_t u) { return out.cluster[u] >= 0; });
}

}  // namespace

Slicing slice(UnitDag const& dag, Links const& links, int num_devices) {
  Slicing out;
  out.cluster.assign(dag.size(), -1);
  std::vector<std::uint32_t> left = dag.topo;
  for (int k = 0; k < num_devices && !left.empty(); ++k)
    take_heaviest(dag, links, out, left);
  out.primaries = out.clusters;
  auto lv = levels(dag, links, out.cluster);
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
  while (!left.empty())
    take_heaviest(dag, links, out, left);
  out.levels = levels(dag, links, out.cluster);
  return out;
}

}  // namespace cleave::search::pardnn
