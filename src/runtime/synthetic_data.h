// Deterministic synthetic training data for `cleave run`: every source tensor's value from a seed
// and the tensor's name alone (not from the order tensors are visited), so a partitioned run and
// the unpartitioned reference see the same step.
//
// - floating inputs: uniform in [-1, 1);
// - integer inputs: uniform in [0, range), where range is what their readers accept (an
//   embedding's rows, a cross-entropy's classes: the last dimension of the first floating input of
//   the reading op), 2 if no reader says;
// - weights: uniform in [-1, 1) scaled by 1/sqrt(fan_in), fan_in being the elements per row of
//   the first dimension (a rank-1 weight, a bias or a norm's scale, gets 1 + uniform * 0.1);
// - optimizer state: zeros.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/executor.h"

namespace cleave::runtime {

Values synthetic_sources(ir::Graph const& graph, std::uint64_t seed);

// A weight or optimizer state, the op that updates it, and the tensor holding its next value.
struct StateUpdate {
  ir::TensorId state;
  ir::OpId update;
  ir::TensorId next;
};
// The lowering's rule (lower/lowering.cc): the first op reading the source tensor as its first
// input whose output is a weight or optimizer state and that records a forward op.
std::vector<StateUpdate> state_updates(ir::Graph const& graph);

}  // namespace cleave::runtime
