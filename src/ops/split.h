// Framework "split" ops (ONNX Split, torch.split) in cleave's one-output-per-op IR: one slice op
// per part.
#pragma once

#include <string>
#include <vector>

#include "ir/graph_builder.h"

namespace cleave::ops {

// Splits x along axis into consecutive parts of the given sizes (which must add up to the axis'
// extent); the slices are named "<name>:<i>".
Expected<std::vector<ir::TensorId>> add_split(ir::GraphBuilder& builder, ir::TensorId x,
                                              std::int64_t axis,
                                              std::vector<std::int64_t> const& sizes,
                                              std::string const& name);

}  // namespace cleave::ops
