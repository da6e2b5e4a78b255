// The baselines users compare against, as plans (issue 4): `single` (every op whole on device 0,
// memory ignored: Tofu's "Ideal" reference), `data-parallel` (every op split on its batch
// dimension over all devices; ops without one, such as optimizer updates, split on their largest
// dimension, so gradients are reduce-scattered and weights all-gathered, as ZeRO does) and
// `tensor-parallel` (linears split column then row, Megatron-style, everything else data
// parallel: on CNNs Krizhevsky's one weird trick; on language models its vocabulary path still
// moves far more than Megatron's vocabulary-parallel loss, docs/cost_model.md).
#pragma once

#include <string>
#include <vector>

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

std::vector<std::string> algorithms();
// Runs `algorithm` and records its name, config, seed and search time in the plan.
Expected<plan::Plan> make_plan(std::string const& algorithm, SearchContext const& ctx);

}  // namespace cleave::search
