#include "search/pardnn/mapping.h"

#include <algorithm>
#include <numeric>

namespace cleave::search::pardnn {
namespace {

// Sums over ranges of time slots (Fenwick's binary indexed tree): adding and summing in O(log n).
class Fenwick {
 public:
  explicit Fenwick(std::size_t n) : tree_(n + 1, 0.0) {}
  void add(std::size_t i, double value) {
    for (++i; i < tree_.size(); i += i & (~i + 1))
      tree_[i] += value;
  }
  // The sum over slots [lo, hi].
  double sum(std::size_t lo, std::size_t hi) const { return prefix(hi + 1) - prefix(lo); }

 private:
  double prefix(std::size_t end) const {
    double s = 0;
    for (; end > 0; end -= end & (~end + 1))
      s += tree_[end];
    return s;
  }
  std::vector<double> tree_;
};

struct Mapper {
  OpGraph const& graph;
  UnitDag const& dag;
  Links const& links;
  Slicing const& slicing;
  std::vector<double> memory;     // per device: what its kept weights and state may take
  std::vector<int> device;        // per unit, -1 until mapped
  std::vector<Fenwick> work;      // per device, its units' compute by the slot of their top level
  std::vector<double> load;       // per device, its units' compute
  std::vector<double> held;       // per device, what its units hold (UnitDag::holds)
  std::vector<std::size_t> slot;  // per unit, its rank by top level
  std::vector<double> tops;       // the top levels, sorted
  double share = 0;               // a device's share of all the compute, balanced

  void place(std::vector<std::uint32_t> const& members, int d) {
    auto i = static_cast<std::size_t>(d);
    for (std::uint32_t u : members) {
      device[u] = d;
      work[i].add(slot[u], dag.seconds[u]);
      load[i] += dag.seconds[u];
      held[i] += static_cast<double>(dag.holds[u]);
    }
  }

  // The device for one secondary cluster (docs in mapping.h).
  int choose(int id, std::vector<std::uint32_t> const& members) {
    int const k = links.devices();
    double seconds = 0, kept = 0, end = 0;
    std::size_t first = SIZE_MAX;
    std::vector<std::int64_t> bytes(static_cast<std::size_t>(k), 0), messages(bytes);
    for (std::uint32_t u : members) {
      seconds += dag.seconds[u];
      kept += static_cast<double>(dag.holds[u]);
      first = std::min(first, slot[u]);
      end = std::max(end, slicing.levels.top[u] + dag.seconds[u]);
      for (auto [v, b] : graph.edges[u])
        if (device[v] >= 0 && slicing.cluster[v] != id) {
          bytes[static_cast<std::size_t>(device[v])] += b;
          ++messages[static_cast<std::size_t>(device[v])];
        }
    }
    std::size_t last =
        static_cast<std::size_t>(std::upper_bound(tops.begin(), tops.end(), end) - tops.begin());
    last = std::max(last, first + 1) - 1;
    auto fits = [&](int d) {
      auto i = static_cast<std::size_t>(d);
      return held[i] + kept <= memory[i];
    };
    auto most = static_cast<int>(std::max_element(bytes.begin(), bytes.end()) - bytes.begin());
    if (bytes[static_cast<std::size_t>(most)] > 0 && fits(most) &&
        (load[static_cast<std::size_t>(most)] + seconds <= share ||
         links.mean_seconds(bytes[static_cast<std::size_t>(most)]) >= seconds))
      return most;
    int best = -1;
    double best_cost = 0;
    for (int d = 0; d < k; ++d) {
      if (!fits(d)) continue;
      double cost = work[static_cast<std::size_t>(d)].sum(first, last);
      for (int e = 0; e < k; ++e)
        if (bytes[static_cast<std::size_t>(e)] > 0)
          cost += links.seconds(bytes[static_cast<std::size_t>(e)],
                                messages[static_cast<std::size_t>(e)], e, d);
      if (best < 0 || cost < best_cost ||
          (cost == best_cost &&
           load[static_cast<std::size_t>(d)] < load[static_cast<std::size_t>(best)]))
        best = d, best_cost = cost;
    }
    if (best >= 0) return best;
    // No device keeps it within its memory: the one with the most room, for the repair to settle.
    for (int d = 0; d < k; ++d)
      if (best < 0 ||
          memory[static_cast<std::size_t>(d)] - held[static_cast<std::size_t>(d)] >
              memory[static_cast<std::size_t>(best)] - held[static_cast<std::size_t>(best)])
        best = d;
    return best;
  }
};

}  // namespace

std::vector<int> map_clusters(SearchContext const& ctx, OpGraph const& graph, UnitDag const& dag,
                              Links const& links, Slicing const& slicing) {
  std::size_t const n = dag.size();
  auto const k = static_cast<std::size_t>(links.devices());
  Mapper m{graph,
           dag,
           links,
           slicing,
           {},
           std::vector<int>(n, -1),
           {},
           std::vector<double>(k, 0),
           std::vector<double>(k, 0),
           std::vector<std::size_t>(n),
           {}};
  for (auto const& d : ctx.cluster().devices())
    m.memory.push_back(0.9 * static_cast<double>(d.memory.value()));
  m.work.assign(k, Fenwick(n));
  m.share = std::accumulate(dag.seconds.begin(), dag.seconds.end(), 0.0) / static_cast<double>(k);
  std::vector<std::uint32_t> by_top(n);
  std::iota(by_top.begin(), by_top.end(), 0u);
  std::stable_sort(by_top.begin(), by_top.end(), [&](std::uint32_t a, std::uint32_t b) {
    return slicing.levels.top[a] < slicing.levels.top[b];
  });
  for (std::size_t r = 0; r < n; ++r) {
    m.slot[by_top[r]] = r;
    m.tops.push_back(slicing.levels.top[by_top[r]]);
  }
  std::vector<std::vector<std::uint32_t>> members(static_cast<std::size_t>(slicing.clusters));
  std::vector<double> critical(members.size(), 0.0);
  for (std::uint32_t u = 0; u < n; ++u) {
    auto c = static_cast<std::size_t>(slicing.cluster[u]);
    members[c].push_back(u);
    critical[c] = std::max(critical[c], slicing.levels.weight(u));
  }
  for (int c = 0; c < slicing.primaries; ++c)
    m.place(members[static_cast<std::size_t>(c)], c);
  std::vector<int> secondary(static_cast<std::size_t>(slicing.clusters - slicing.primaries));
  std::iota(secondary.begin(), secondary.end(), slicing.primaries);
  std::stable_sort(secondary.begin(), secondary.end(), [&](int a, int b) {
    return critical[static_cast<std::size_t>(a)] > critical[static_cast<std::size_t>(b)];
  });
  for (int c : secondary)
    m.place(members[static_cast<std::size_t>(c)],
            m.choose(c, members[static_cast<std::size_t>(c)]));
  return std::move(m.device);
}

}  // namespace cleave::search::pardnn
