// ParDNN's step 1a, slicing (docs/search_pardnn.md, PAPERS.md §3): K times, the heaviest path of
// the graph left once the primary clusters so far are removed (through the unit of the largest
// top + bottom level there, extended back and forth along the heaviest neighbours; levels computed
// again each time) becomes a primary cluster; then, with the levels of the whole graph and no
// transfer inside a cluster, every unit left, heaviest first, starts a secondary cluster: the
// heaviest path through it among the units left. O(K (V + E) + V log V).
#pragma once

#include <vector>

#include "search/pardnn/dag.h"

namespace cleave::search::pardnn {

struct Slicing {
  std::vector<int> cluster;  // per unit; clusters 0 .. primaries - 1 are the primary ones
  int primaries = 0;
  int clusters = 0;
  Levels levels;  // with no transfer inside any cluster
};

Slicing slice(UnitDag const& dag, Links const& links, int num_devices);

// Kim and Browne's linear clustering, ParDNN's baseline: until every unit is in a cluster, the
// heaviest path of the graph that is left once the clustered units are removed (levels computed
// again each time) becomes a cluster. Clusters come out heaviest path first; `primaries` is 0.
// O(clusters (V + E)): quadratic where the paths are short (the paper: 12 h for 205K nodes).
Slicing linear_clusters(UnitDag const& dag, Links const& links);

}  // namespace cleave::search::pardnn
