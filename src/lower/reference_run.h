// Runs a lowered program with the reference interpreter: each device keeps the blocks it holds,
// compute tasks see only their device's blocks, transfers copy regions between devices, reduce
// tasks combine partial blocks, a swap-out moves a region to a host store (freeing the device's
// blocks inside it) and a swap-in copies it back; collectives run as their member tasks. The oracle
// that partitioned execution computes what the graph does; the runtime's --check compares against
// the same thing.
#pragma once

#include <map>
#include <string>

#include "lower/program.h"
#include "tdl/interpreter.h"

namespace cleave::lower {

// `sources` gives every source tensor's whole value by name (as ops::evaluate_graph takes them).
// The result holds, per tensor id, the value assembled from every block the devices hold at the
// end (produced tensors are always whole); a task that finds its data missing is an error.
Expected<std::vector<tdl::TensorData>>
run_reference(ir::Graph const& graph, Program const& program, ops::OpRegistry const& registry,
              std::map<std::string, tdl::TensorData, std::less<>> const& sources);

}  // namespace cleave::lower
