// The op graph cut by METIS 5 into one part per device, following the cluster's hierarchy: the
// nodes first (a part per node, target weights in proportion to the node's devices' speeds and
// memory), then each node's part among its devices (in proportion to each device's). Two balance
// constraints (METIS's ncon = 2): compute time and memory. Seeded from the context's seed.
#pragma once

#include <cstdint>
#include <vector>

#include "search/common/op_graph.h"

namespace cleave::search::mincut {

struct PartitionSettings {
  bool recursive = false;         // METIS_PartGraphRecursive instead of METIS_PartGraphKway
  double time_tolerance = 1.03;   // METIS's ubvec: the heaviest part over its target
  double memory_tolerance = 1.1;  // at least: up to capacity over demand
};

struct Partition {
  std::vector<int> device;  // per unit
  double metis_seconds = 0;
  std::int64_t cut_bytes = 0;  // the edges between units on different devices
};

// `speeds` per device (device_speeds). The error names METIS's failure.
Expected<Partition> partition(SearchContext const& ctx, OpGraph const& graph,
                              std::vector<double> const& speeds, PartitionSettings const& settings);

}  // namespace cleave::search::mincut
