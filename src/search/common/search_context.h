// What every search algorithm receives (STYLE.md #6, #8): the training graph and the semantics it
// was built with, the cluster, what to record in the plan, and the seed. Every algorithm is a
// function (SearchContext) -> Plan; src/search/search.h registers them by name.
#pragma once

#include <cstdint>
#include <string>

#include "cluster/cluster.h"
#include "plan/plan.h"

namespace cleave::search {

struct SearchContext {
  ir::Graph const& graph;
  ops::OpRegistry const& registry;
  cluster::Cluster const& cluster;
  std::string cluster_spec;
  std::string model;       // the model spec or file, recorded in the plan
  std::int64_t batch = 0;  // samples per step: inputs whose first dimension is this are batched
  std::uint64_t seed = 0;
};

}  // namespace cleave::search
