// Runs a whole graph with the reference interpreter (tdl/interpreter.h): every op evaluated on its
// full iteration space, in topological order. Slow and obviously correct: the oracle for gradient
// rules, partitioned execution and the runtime's --check.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ops/op_registry.h"
#include "tdl/interpreter.h"

namespace cleave::ops {

// `sources` gives the value of every source tensor (inputs, weights, optimizer state) by name.
// The result holds every tensor's value, indexed by tensor id.
Expected<std::vector<tdl::TensorData>>
evaluate_graph(ir::Graph const& graph, OpRegistry const& registry,
               std::map<std::string, tdl::TensorData, std::less<>> const& sources,
               tdl::EvalOptions options = {});

}  // namespace cleave::ops
