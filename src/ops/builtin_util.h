// Helpers shared by the builtin_*.cc files that write the TDL of each built-in op.
#pragma once

#include <map>
#include <span>
#include <string>
#include <vector>

#include "ops/op_registry.h"

namespace cleave::ops::detail {

// "d0", "d1", ... for a tensor of the given rank.
std::vector<std::string> dim_vars(std::size_t rank, std::string const& prefix = "d");
// The indices d with the one at `axis` replaced by `var`.
std::vector<std::string> with_axis(std::vector<std::string> d, std::size_t axis, std::string var);
// "X[a,b,c]".
std::string ref(std::string const& tensor, std::vector<std::string> const& indices);
// One sliced axis of a slice op (ONNX Slice semantics), validated and clamped to the input.
struct SliceAxis {
  std::size_t axis;
  std::int64_t start, end, step;  // 0 <= start < end <= extent, step >= 1
};
// The slice attributes (starts, ends, axes, steps) of `op` applied to an input of shape x.
Expected<std::vector<SliceAxis>> slice_axes(std::string const& op, ir::Attrs const& a,
                                            ir::Shape const& x);

// Batch norm's view of X [N, C, ...]: channel dimension 1, statistics over every other one.
struct BnDims {
  std::vector<std::string> d;                   // X's indices: n, c, d2, ...
  std::string others;                           // the reduced variables, "n,d2,d3"
  std::map<std::string, std::int64_t> extents;  // of the reduced variables
  double inv_count = 1;                         // 1 / the number of reduced elements
};
Expected<BnDims> bn_dims(std::string const& op, std::string const& input, ir::TensorType const& x);

// Axis in [-rank, rank) -> [0, rank), or an error naming the op.
Expected<std::size_t> normalize_axis(std::string const& op, std::int64_t axis, std::size_t rank);
Error shape_error(std::string const& op, std::string const& message);

AttrSpec int_attr(std::string name, std::int64_t fallback, std::string doc);
AttrSpec real_attr(std::string name, double fallback, std::string doc);
AttrSpec ints_attr(std::string name, std::vector<std::int64_t> fallback, std::string doc);
AttrSpec required_ints_attr(std::string name, std::string doc);
AttrSpec string_attr(std::string name, std::string fallback, std::string doc);

ir::TensorType f32(ir::Shape shape);

// An instance whose inputs are named X0, X1, ... in order (for variadic ops) or by `names`.
OpInstance instance(std::string tdl, std::vector<std::string> names, tdl::Params params = {});

// One spatial axis of a convolution or pooling window and the TDL names its statements use: the
// output position, the kernel tap, the stride, dilation and leading-pad parameters, and, for the
// gradients, the input position, the phase variable and its extent, and the input's and kernel's
// extents. conv3d's axes are (z, y, x); conv2d's (y, x) keep the names they always had.
struct SpatialAxis {
  char const *var, *tap, *stride, *dil, *pad, *in_var, *phase, *phases, *in_extent, *kernel;
};
// The last `n` (2 or 3) of depth, height, width.
std::span<SpatialAxis const> spatial_axes(std::size_t n);
// The stride, dilation and leading-pad parameters of a window's statements, per spatial axis
// (the forward ops and their gradients alike).
tdl::Params window_params(std::span<std::int64_t const> stride,
                          std::span<std::int64_t const> dilation,
                          std::span<std::int64_t const> pad);

// A rank check with a message that names the op and what it expects.
Status expect_rank(std::string const& op, std::string const& input, ir::TensorType const& t,
                   std::size_t min_rank, std::size_t max_rank);

}  // namespace cleave::ops::detail
