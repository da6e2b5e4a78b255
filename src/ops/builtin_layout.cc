// Layout ops: concat, slice, pad, expand, transpose, reshape and embedding (gather). Reads outside
// a tensor's bounds give 0, so concat is the sum of its inputs shifted along the axis (a piece
// reads only the inputs its part of the axis overlaps) and pad a read shifted by the leading pads.
#include <algorithm>
#include <numeric>

#include "ops/builtin_util.h"
#include "support/assert.h"

namespace cleave::ops {
namespace {

using namespace detail;

Expected<OpInstance> concat(ir::Attrs const& a, std::span<ir::TensorType const> in) {
  std::size_t rank = in[0].shape.size();
  CLEAVE_CHECK_OK(expect_rank("concat", "X0", in[0], 1, 12));
  CLEAVE_TRY(std::size_t axis, normalize_axis("concat", a.get_int("axis", 0), rank));
  auto d = dim_vars(rank);
  ir::Shape out = in[0].shape;
  out[axis] = 0;
  std::string body;
  std::vector<std::string> names;
  for (std::size_t i = 0; i < in.size(); ++i) {
    std::string name = "X" + std::to_string(i);
    bool same = in[i].shape.size() == rank && in[i].dtype == in[0].dtype;
    for (std::size_t k = 0; same && k < rank; ++k)
      same = k == axis || in[i].shape[k] == in[0].shape[k];
    if (!same)
      return shape_error("concat", name + " is " + ir::type_to_string(in[i]) + " but X0 is " +
                                       ir::type_to_string(in[0]) +
                                       ": inputs must agree on every dimension but the axis (" +
                                       std::to_string(axis) + ") and on dtype");
    auto idx = d;
    if (out[axis] > 0) idx[axis] = d[axis] + "-" + std::to_string(out[axis]);
    body += (i ? " + " : "") + ref(name, idx);
    names.push_back(name);
    out[axis] += in[i].shape[axis];
  }
  OpInstance inst = instance(ref("Y", d) + " = " + body, names);
  inst.extents = {{d[axis], out[axis]}};
  inst.output = ir::TensorType{out, in[0].dtype};
  return inst;
}

Expected<OpInstance> slice(ir::Attrs const& a, std::span<ir::TensorType const> in) {
  auto const& x = in[0].shape;
  CLEAVE_TRY(auto axes, slice_axes("slice", a, x));
  auto d = dim_vars(x.size());
  auto idx = d;
  ir::Shape out = x;
  OpInstance inst;
  for (auto const& s : axes) {
    out[s.axis] = (s.end - s.start + s.step - 1) / s.step;
    idx[s.axis] = d[s.axis] + "*" + std::to_string(s.step) + "+" + std::to_string(s.start);
    inst.extents[d[s.axis]] = out[s.axis];
  }
  inst.tdl = ref("Y", d) + " = " + ref("X", idx);
  inst.input_names = {"X"};
  inst.output = ir::TensorType{out, in[0].dtype};
  return inst;
}

// Zeros around X: pads = [begin_0, ..., begin_r-1, end_0, ..., end_r-1] (ONNX Pad, constant 0).
Expected<OpInstance> pad(ir::Attrs const& a, std::span<ir::TensorType const> in) {
  auto const& x = in[0].shape;
  auto pads = a.get_ints("pads", {});
  if (pads.size() != 2 * x.size())
    return Error(ErrorCode::invalid_argument, "pad: pads has " + std::to_string(pads.size()) +
                                                  " values; X " + ir::shape_to_string(x) +
                                                  " needs " + std::to_string(2 * x.size()) +
                                                  " (the begins, then the ends)");
  auto d = dim_vars(x.size());
  auto idx = d;
  ir::Shape out = x;
  OpInstance inst;
  for (std::size_t k = 0; k < x.size(); ++k) {
    std::int64_t begin = pads[k], end = pads[k + x.size()];
    if (begin < 0 || end < 0 || begin > (1 << 20) || end > (1 << 20))
      return Error(ErrorCode::invalid_argument, "pad: pads must be in [0, 2^20]");
    out[k] = x[k] + begin + end;
    if (begin) idx[k] = d[k] + "-" + std::to_string(begin);
    inst.extents[d[k]] = out[k];
  }
  inst.tdl = ref("Y", d) + " = " + ref("X", idx);
  inst.input_names = {"X"};
  inst.output = ir::TensorType{out, in[0].dtype};
  return inst;
}

// X broadcast to `shape` (NumPy rules, as ONNX Expand): a stretched dimension reads X's row 0.
Expected<OpInstance> expand(ir::Attrs const& a, std::span<ir::TensorType const> in) {
  auto const& x = in[0].shape;
  auto want = a.get_ints("shape", {});
  std::size_t rank = std::max(x.size(), want.size());
  ir::Shape out(rank);
  for (std::size_t k = 0; k < rank; ++k) {
    std::int64_t dx = k + x.size() >= rank ? x[k + x.size() - rank] : 1;
    std::int64_t dw = k + want.size() >= rank ? want[k + want.size() - rank] : 1;
    if (dw < 1 || (dx != dw && dx != 1 && dw != 1))
      return shape_error("expand", "X " + ir::shape_to_string(x) + " does not broadcast to " +
                                       ir::shape_to_string(want));
    out[k] = std::max(dx, dw);
  }
  if (!ir::is_valid_shape(out)) return shape_error("expand", "the output is too large");
  auto d = dim_vars(rank);
  std::vector<std::string> idx;
  for (std::size_t j = 0; j < x.size(); ++j) {
    std::size_t od = rank - x.size() + j;
    idx.push_back(x[j] == 1 && out[od] != 1 ? "0" : d[od]);
  }
  OpInstance inst = instance(ref("Y", d) + " = " + ref("X", idx), {"X"});
  inst.output = ir::TensorType{out, in[0].dtype};
  return inst;
}

Expected<OpInstance> transpose(ir::Attrs const& a, std::span<ir::TensorType const> in) {
  std::size_t rank = in[0].shape.size();
  std::vector<std::int64_t> rev(rank);
  for (std::size_t i = 0; i < rank; ++i)
    rev[i] = static_cast<std::int64_t>(rank - 1 - i);
  auto perm = a.get_ints("perm", rev);
  std::vector<bool> seen(rank, false);
  bool ok = perm.size() == rank;
  for (auto p : perm) {
    ok = ok && p >= 0 && static_cast<std::size_t>(p) < rank && !seen[static_cast<std::size_t>(p)];
    if (ok) seen[static_cast<std::size_t>(p)] = true;
  }
  if (!ok)
    return Error(ErrorCode::invalid_argument,
                 "transpose: perm must be a permutation of 0.." + std::to_string(rank - 1));
  auto d = dim_vars(rank);
  std::vector<std::string> out;
  for (auto p : perm)
    out.push_back(d[static_cast<std::size_t>(p)]);
  return instance(ref("Y", out) + " = " + ref("X", d), {"X"});
}

// Output dims and input dims are grouped where their prefix products meet; inside a group the
// input index is (flat / stride) % size of the group's flat output index, so a split of an output
// dimension reads exactly the input rows it covers when the grouping allows it.
Expected<OpInstance> reshape(ir::Attrs const& a, std::span<ir::TensorType const> in) {
  auto const& x = in[0].shape;
  auto want = a.get_ints("shape", {});
  ir::Shape out;
  int infer = -1;
  for (std::size_t k = 0; k < want.size(); ++k) {
    if (want[k] == -1) {
      if (infer >= 0) return Error(ErrorCode::invalid_argument, "reshape: at most one -1 in shape");
      infer = static_cast<int>(k);
      out.push_back(1);
    } else if (want[k] == 0 && k < x.size()) {
      out.push_back(x[k]);  // ONNX: 0 copies the input dimension
    } else if (want[k] < 1) {
      return Error(ErrorCode::invalid_argument,
                   "reshape: bad dimension " + std::to_string(want[k]));
    } else {
      out.push_back(want[k]);
    }
  }
  // The attribute is the user's: a product past int64 is an error, not a wrapped count (issue 23).
  if (!ir::is_valid_shape(out))
    return shape_error("reshape", "shape " + ir::shape_to_string(out) + " has too many elements");
  std::int64_t total = ir::num_elements(x);
  if (infer >= 0) {
    std::int64_t rest = ir::num_elements(out);
    if (total % rest != 0)
      return shape_error("reshape", "cannot infer -1: " + std::to_string(total) +
                                        " elements do not divide by " + std::to_string(rest));
    out[static_cast<std::size_t>(infer)] = total / rest;
  }
  if (ir::num_elements(out) != total)
    return shape_error("reshape", "X " + ir::shape_to_string(x) + " has " + std::to_string(total) +
                                      " elements, shape " + ir::shape_to_string(out) + " has " +
                                      std::to_string(ir::num_elements(out)));
  auto o = dim_vars(out.size(), "o");
  std::vector<std::string> idx(x.size());
  std::size_t i = 0, j = 0;
  while (i < x.size() || j < out.size()) {
    std::vector<std::size_t> gi, gj;
    std::int64_t pi = 1, pj = 1;
    if (i < x.size()) pi *= x[i], gi.push_back(i++);
    if (j < out.size()) pj *= out[j], gj.push_back(j++);
    while (pi != pj) {
      if (pi < pj) {
        pi *= x[i];
        gi.push_back(i++);
      } else {
        pj *= out[j];
        gj.push_back(j++);
      }
    }
    std::string flat = gj.empty() ? "0" : "";
    std::int64_t stride = pj;
    for (auto k : gj) {
      stride /= out[k];
      flat += (flat.empty() ? "" : "+") + o[k] + (stride == 1 ? "" : "*" + std::to_string(stride));
    }
    stride = pi;
    for (std::size_t n = 0; n < gi.size(); ++n) {
      stride /= x[gi[n]];
      std::string e = flat;
      if (gi.size() > 1) {  // several input dims share the group: (flat / stride) % size
        bool sum = gj.size() > 1;
        if (stride != 1) {
          e = (sum ? "(" + e + ")" : e) + "/" + std::to_string(stride);
          sum = false;
        }
        if (n > 0) e = (sum || stride != 1 ? "(" + e + ")" : e) + "%" + std::to_string(x[gi[n]]);
      }
      idx[gi[n]] = e;
    }
  }
  OpInstance inst = instance(ref("Y", o) + " = " + ref("X", idx), {"X"});
  inst.output = ir::TensorType{out, in[0].dtype};
  return inst;
}

Expected<OpInstance> embedding(ir::Attrs const&, std::span<ir::TensorType const> in) {
  CLEAVE_CHECK_OK(expect_rank("embedding", "W", in[0], 2, 2));
  if (ir::is_floating(in[1].dtype))
    return shape_error("embedding",
                       "indices I must be int32 or int64, got " + ir::type_to_string(in[1]));
  auto d = dim_vars(in[1].shape.size());
  auto out = d;
  out.push_back("h");
  return instance(ref("Y", out) + " = W[" + ref("I", d) + ",h]", {"W", "I"});
}

}  // namespace

void add_layout_ops(OpRegistry& r) {
  auto must = [](Status s) { CLEAVE_ASSERT(s.is_ok(), "duplicate built-in op"); };
  ir::TensorType ids{{8, 128}, ir::DType::int64};
  must(r.add({"concat",
              "join X0, X1, ... along axis",
              {int_attr("axis", 0, "the joined axis")},
              false,
              1,
              -1,
              {f32({8, 16}), f32({8, 48})},
              ir::Attrs{{"axis", std::int64_t{1}}},
              concat}));
  must(r.add({"slice",
              "Y = X[start:end:step] on the given axes (ONNX Slice, positive steps)",
              {required_ints_attr("starts", "first index per axis (negative: from the end)"),
               required_ints_attr("ends", "end per axis, exclusive (clamped)"),
               ints_attr("axes", {}, "default: 0, 1, ..."), ints_attr("steps", {}, "default: 1")},
              false,
              1,
              1,
              {f32({8, 64})},
              ir::Attrs{{"starts", std::vector<std::int64_t>{16}},
                        {"ends", std::vector<std::int64_t>{48}},
                        {"axes", std::vector<std::int64_t>{1}}},
              slice}));
  must(r.add({"pad",
              "X surrounded by zeros: pads = begins then ends per dimension (ONNX Pad)",
              {required_ints_attr("pads", "[begin_0, .., begin_r-1, end_0, .., end_r-1]")},
              false,
              1,
              1,
              {f32({8, 3, 14, 14})},
              ir::Attrs{{"pads", std::vector<std::int64_t>{0, 0, 1, 1, 0, 0, 1, 1}}},
              pad}));
  must(r.add({"expand",
              "X broadcast to shape (NumPy rules, ONNX Expand)",
              {required_ints_attr("shape", "the shape to broadcast to")},
              false,
              1,
              1,
              {f32({1, 1, 64})},
              ir::Attrs{{"shape", std::vector<std::int64_t>{8, 1, 64}}},
              expand}));
  must(r.add({"transpose",
              "permute dimensions: Y dim k = X dim perm[k]",
              {ints_attr("perm", {}, "default: reverse")},
              false,
              1,
              1,
              {f32({8, 16, 64})},
              ir::Attrs{{"perm", std::vector<std::int64_t>{0, 2, 1}}},
              transpose}));
  must(r.add({"reshape",
              "same elements, new shape (-1 inferred, 0 copies)",
              {required_ints_attr("shape", "the new shape")},
              false,
              1,
              1,
              {f32({8, 16, 64})},
              ir::Attrs{{"shape", std::vector<std::int64_t>{8, 16, 4, 16}}},
              reshape}));
  must(r.add({"embedding",
              "Y[.., h] = W[I[..], h] (gather rows of W)",
              {},
              false,
              2,
              2,
              {f32({1000, 64}), ids},
              {},
              embedding}));
}

}  // namespace cleave::ops
