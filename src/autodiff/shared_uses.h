// Weights read by several ops (RNN steps, shared layers, a shared output layer): the uses that are
// one op applied to slices of a stack, so that autodiff can differentiate them as one batched use
// and emit one weight-gradient op, whose reduction a plan then splits once (issue 14, part 7;
// docs/autodiff.md).
#pragma once

#include <vector>

#include "ops/op_registry.h"

namespace cleave::autodiff {

// Forward ops of one type, attributes and input types that read the same shared weights at the
// same input positions, and whose op is uniform over a new leading axis: stacking every other
// input along it stacks the output, the axis read nowhere else. Then the gradient of the weights
// through the op on the stacks is the sum of the gradients through each op.
struct SharedUse {
  std::vector<ir::OpId> ops;           // at least two, in topological order
  std::vector<std::size_t> positions;  // the inputs that are the shared weights
};

// The groups of uses of the tensors marked in `shared` (by tensor id), in topological order of
// their first op. Uses that form no group of two keep their own gradient ops.
std::vector<SharedUse> shared_uses(ir::Graph const& forward, ops::OpRegistry const& registry,
                                   std::vector<bool> const& shared);

}  // namespace cleave::autodiff
