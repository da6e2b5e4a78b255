#include "ops/split.h"

#include <algorithm>
#include <numeric>

namespace cleave::ops {

Expected<std::vector<ir::TensorId>> add_split(ir::GraphBuilder& builder, ir::TensorId x,
                                              std::int64_t axis,
                                              std::vector<std::int64_t> const& sizes,
                                              std::string const& name) {
  ir::Shape const& shape = builder.type_of(x).shape;
  auto rank = static_cast<std::int64_t>(shape.size());
  if (axis < -rank || axis >= rank)
    return Error(ErrorCode::invalid_argument, "split '" + name + "': axis " + std::to_string(axis) +
                                                  " is out of range for rank " +
                                                  std::to_string(rank));
  if (axis < 0) axis += rank;
  std::int64_t total = std::accumulate(sizes.begin(), sizes.end(), std::int64_t{0});
  bool positive = std::all_of(sizes.begin(), sizes.end(), [](std::int64_t s) { return s > 0; });
  if (!positive || total != shape[static_cast<std::size_t>(axis)])
    return Error(ErrorCode::shape_mismatch,
                 "split '" + name + "': sizes must be positive and add up to " +
                     std::to_string(shape[static_cast<std::size_t>(axis)]) + " (axis " +
                     std::to_string(axis) + " of " + ir::shape_to_string(shape) + "), got " +
                     std::to_string(total));
  std::vector<ir::TensorId> parts;
  std::int64_t start = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    ir::OpSpec spec;
    spec.type = "slice";
    spec.inputs = {x};
    spec.attrs = ir::Attrs{{"starts", std::vector<std::int64_t>{start}},
                           {"ends", std::vector<std::int64_t>{start + sizes[i]}},
                           {"axes", std::vector<std::int64_t>{axis}}};
    spec.name = name + ":" + std::to_string(i);
    CLEAVE_TRY(ir::TensorId part, builder.add_op1(std::move(spec)));
    parts.push_back(part);
    start += sizes[i];
  }
  return parts;
}

}  // namespace cleave::ops
