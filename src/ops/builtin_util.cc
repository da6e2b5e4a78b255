#include "ops/builtin_util.h"

#include <algorithm>
#include <numeric>

#include "support/assert.h"

namespace cleave::ops::detail {

std::vector<std::string> dim_vars(std::size_t rank, std::string const& prefix) {
  std::vector<std::string> out;
  for (std::size_t d = 0; d < rank; ++d)
    out.push_back(prefix + std::to_string(d));
  return out;
}

std::vector<std::string> with_axis(std::vector<std::string> d, std::size_t axis, std::string var) {
  d[axis] = std::move(var);
  return d;
}

Expected<std::vector<SliceAxis>> slice_axes(std::string const& op, ir::Attrs const& a,
                                            ir::Shape const& x) {
  auto starts = a.get_ints("starts", {});
  auto ends = a.get_ints("ends", {});
  auto axes = a.get_ints("axes", {});
  auto steps = a.get_ints("steps", {});
  if (axes.empty()) {
    axes.resize(starts.size());
    std::iota(axes.begin(), axes.end(), 0);
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (starts.size() != ends.size() || axes.size() != starts.size() || steps.size() != starts.size())
    return Error(ErrorCode::invalid_argument,
                 op + ": starts, ends, axes and steps must have the same length");
  std::vector<SliceAxis> out;
  for (std::size_t k = 0; k < starts.size(); ++k) {
    CLEAVE_TRY(std::size_t ax, normalize_axis(op, axes[k], x.size()));
    if (steps[k] < 1)
      return Error(ErrorCode::unsupported,
                   op + ": steps must be >= 1, got " + std::to_string(steps[k]));
    auto clamp = [&](std::int64_t v) {
      if (v < 0) v += x[ax];
      return std::clamp<std::int64_t>(v, 0, x[ax]);
    };
    std::int64_t s = clamp(starts[k]), e = clamp(ends[k]);
    if (e <= s)
      return shape_error(op, "axis " + std::to_string(ax) + " selects nothing (start " +
                                 std::to_string(s) + ", end " + std::to_string(e) + ")");
    out.push_back({ax, s, e, steps[k]});
  }
  return out;
}

std::string ref(std::string const& tensor, std::vector<std::string> const& indices) {
  std::string out = tensor + "[";
  for (std::size_t i = 0; i < indices.size(); ++i)
    out += (i ? "," : "") + indices[i];
  return out + "]";
}

Expected<BnDims> bn_dims(std::string const& op, std::string const& input, ir::TensorType const& x) {
  CLEAVE_CHECK_OK(expect_rank(op, input, x, 2, 12));
  BnDims b;
  b.d = dim_vars(x.shape.size());
  b.d[0] = "n";
  b.d[1] = "c";
  std::int64_t count = 1;
  for (std::size_t i = 0; i < x.shape.size(); ++i) {
    if (i == 1) continue;
    b.others += (b.others.empty() ? "" : ",") + b.d[i];
    b.extents[b.d[i]] = x.shape[i];
    count *= x.shape[i];
  }
  b.inv_count = 1.0 / static_cast<double>(count);
  return b;
}

Expected<std::size_t> normalize_axis(std::string const& op, std::int64_t axis, std::size_t rank) {
  auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r)
    return shape_error(op, "axis " + std::to_string(axis) + " is out of range for rank " +
                               std::to_string(rank) + " (use -" + std::to_string(rank) + ".." +
                               std::to_string(r - 1) + ")");
  return static_cast<std::size_t>(axis < 0 ? axis + r : axis);
}

Error shape_error(std::string const& op, std::string const& message) {
  return Error(ErrorCode::shape_mismatch, op + ": " + message);
}

AttrSpec int_attr(std::string name, std::int64_t fallback, std::string doc) {
  return {std::move(name), AttrKind::integer, ir::AttrValue(fallback), std::move(doc)};
}
AttrSpec real_attr(std::string name, double fallback, std::string doc) {
  return {std::move(name), AttrKind::real, ir::AttrValue(fallback), std::move(doc)};
}
AttrSpec ints_attr(std::string name, std::vector<std::int64_t> fallback, std::string doc) {
  return {std::move(name), AttrKind::integers, ir::AttrValue(std::move(fallback)), std::move(doc)};
}
AttrSpec required_ints_attr(std::string name, std::string doc) {
  return {std::move(name), AttrKind::integers, std::nullopt, std::move(doc)};
}
AttrSpec string_attr(std::string name, std::string fallback, std::string doc) {
  return {std::move(name), AttrKind::string, ir::AttrValue(std::move(fallback)), std::move(doc)};
}

ir::TensorType f32(ir::Shape shape) {
  return {std::move(shape), ir::DType::fp32};
}

OpInstance instance(std::string tdl, std::vector<std::string> names, tdl::Params params) {
  OpInstance inst;
  inst.tdl = std::move(tdl);
  inst.input_names = std::move(names);
  inst.params = std::move(params);
  return inst;
}

Status expect_rank(std::string const& op, std::string const& input, ir::TensorType const& t,
                   std::size_t min_rank, std::size_t max_rank) {
  std::size_t r = t.shape.size();
  if (r >= min_rank && r <= max_rank) return Status::ok();
  std::string want = min_rank == max_rank
                         ? std::to_string(min_rank)
                         : std::to_string(min_rank) + ".." + std::to_string(max_rank);
  return shape_error(op, "input " + input + " must have rank " + want + ", got " +
                             ir::shape_to_string(t.shape) + " (rank " + std::to_string(r) + ")");
}

std::span<SpatialAxis const> spatial_axes(std::size_t n) {
  static constexpr SpatialAxis axes[] = {
      {"z", "dz", "sd", "dd", "pf", "t", "qz", "QD", "ID", "KD"},
      {"y", "dy", "sh", "dh", "pt", "h", "qy", "QH", "IH", "KH"},
      {"x", "dx", "sw", "dw", "pl", "w", "qx", "QW", "IW", "KW"}};
  CLEAVE_ASSERT(n >= 1 && n <= 3, "a window has 1 to 3 spatial axes");
  return std::span<SpatialAxis const>(axes).last(n);
}

tdl::Params window_params(std::span<std::int64_t const> stride,
                          std::span<std::int64_t const> dilation,
                          std::span<std::int64_t const> pad) {
  tdl::Params p;
  auto axes = spatial_axes(stride.size());
  for (std::size_t i = 0; i < axes.size(); ++i) {
    p[axes[i].stride] = static_cast<double>(stride[i]);
    p[axes[i].dil] = static_cast<double>(dilation[i]);
    p[axes[i].pad] = static_cast<double>(pad[i]);
  }
  return p;
}

}  // namespace cleave::ops::detail
