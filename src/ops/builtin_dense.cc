// Dense ops: matmul, batch_matmul, linear, einsum, conv2d, conv3d and pooling, each written as one
// TDL statement.
#include <cmath>
#include <set>

#include "ops/builtin_util.h"
#include "support/assert.h"
#include "support/checked.h"

namespace cleave::ops {
namespace {

using namespace detail;

std::string join_vars(std::vector<std::string> const& v, std::string const& extra) {
  std::string out;
  for (auto const& s : v)
    out += s + ",";
  return out + extra;
}

Expected<OpInstance> matmul(ir::Attrs const& a, std::span<ir::TensorType const> in) {
  CLEAVE_CHECK_OK(expect_rank("matmul", "A", in[0], 2, 2));
  CLEAVE_CHECK_OK(expect_rank("matmul", "B", in[1], 2, 2));
  std::string ai = a.get_int("transpose_a", 0) ? "k,i" : "i,k";
  std::string bi = a.get_int("transpose_b", 0) ? "j,k" : "k,j";
  return instance("Y[i,j] = sum(k) A[" + ai + "] * B[" + bi + "]", {"A", "B"});
}

Expected<OpInstance> batch_matmul(ir::Attrs const& a, std::span<ir::TensorType const> in) {
  CLEAVE_CHECK_OK(expect_rank("batch_matmul", "A", in[0], 3, 10));
  std::size_t batch = in[0].shape.size() - 2;
  if (in[1].shape.size() != 2 && in[1].shape.size() != batch + 2)
    return shape_error("batch_matmul",
                       "B must have rank 2 (shared by every batch) or the rank of A (" +
                           std::to_string(batch + 2) + "), got " +
                           ir::shape_to_string(in[1].shape));
  auto b = dim_vars(batch, "b");
  std::string ai = a.get_int("transpose_a", 0) ? "k,i" : "i,k";
  std::string bi = a.get_int("transpose_b", 0) ? "j,k" : "k,j";
  std::string bprefix = in[1].shape.size() == 2 ? "" : join_vars(b, "");
  return instance("Y[" + join_vars(b, "i,j") + "] = sum(k) A[" + join_vars(b, ai) + "] * B[" +
                      bprefix + bi + "]",
                  {"A", "B"});
}

Expected<OpInstance> linear(ir::Attrs const&, std::span<ir::TensorType const> in) {
  CLEAVE_CHECK_OK(expect_rank("linear", "X", in[0], 2, 10));
  CLEAVE_CHECK_OK(expect_rank("linear", "W", in[1], 2, 2));
  auto d = dim_vars(in[0].shape.size() - 1);
  return instance("Y[" + join_vars(d, "o") + "] = sum(i) X[" + join_vars(d, "i") + "] * W[o,i]",
                  {"X", "W"});
}

// Spatial attributes of conv and pooling, per spatial axis (depth, height, width or the last two):
// kernel, stride, dilation, and the pads before and after.
struct Window {
  std::vector<std::int64_t> k, s, d, lo, hi;
};

Expected<Window> window(std::string const& op, ir::Attrs const& a,
                        std::vector<std::int64_t> kernel) {
  std::size_t n = kernel.size();
  Window w{kernel,
           a.get_ints("stride", {}),
           a.get_ints("dilation", std::vector<std::int64_t>(n, 1)),
           a.get_ints("padding", std::vector<std::int64_t>(n, 0)),
           {}};
  if (w.s.empty()) w.s = kernel;  // pooling: stride defaults to the kernel
  if (w.s.size() != n || w.d.size() != n || (w.lo.size() != n && w.lo.size() != 2 * n))
    return Error(ErrorCode::invalid_argument,
                 op + (n == 2 ? ": stride and dilation take 2 values (h, w); padding takes 2 (h, "
                                "w) or 4 (top, left, bottom, right)"
                              : ": stride and dilation take 3 values (d, h, w); padding takes 3 "
                                "(d, h, w) or 6 (front, top, left, back, bottom, right)"));
  if (w.lo.size() == 2 * n) {
    w.hi.assign(w.lo.begin() + static_cast<std::ptrdiff_t>(n), w.lo.end());
    w.lo.resize(n);
  } else {
    w.hi = w.lo;
  }
  for (std::size_t i = 0; i < n; ++i)
    if (w.s[i] < 1 || w.d[i] < 1 || w.lo[i] < 0 || w.hi[i] < 0)
      return Error(ErrorCode::invalid_argument,
                   op + ": strides and dilations must be >= 1 and paddings >= 0");
  return w;
}

// The output's spatial extents for an input whose spatial extents are `in`.
Expected<std::vector<std::int64_t>> out_size(std::string const& op, Window const& w,
                                             std::span<std::int64_t const> in, bool ceil) {
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < in.size(); ++i) {
    // Attributes and shapes are the user's: sums past int64 are an error (found by
    // graph_json_fuzz).
    auto padded = checked_add(in[i], w.lo[i]);
    if (padded) padded = checked_add(*padded, w.hi[i]);
    auto reach = checked_mul(w.d[i], w.k[i] - 1);
    if (!padded || !reach)
      return shape_error(op, "the padded input or the dilated window overflows 64-bit integers");
    std::int64_t span = *padded - *reach - 1;
    std::int64_t o = span < 0 ? 0 : span / w.s[i] + (ceil && span % w.s[i] != 0 ? 1 : 0) + 1;
    if (ceil && o > 0 && (o - 1) * w.s[i] >= in[i] + w.lo[i])
      --o;  // the last window must start inside the input
    if (o < 1)
      return shape_error(op, "the window (" + ir::shape_to_string(w.k) + ", dilation " +
                                 ir::shape_to_string(w.d) + ") is larger than the padded input (" +
                                 ir::shape_to_string({in.begin(), in.end()}) + ")");
    out.push_back(o);
  }
  return out;
}

// The window's reads of X along every spatial axis: "y*sh+dy*dh-pt,x*sw+dx*dw-pl".
std::string window_reads(std::size_t n) {
  std::string out;
  for (auto const& ax : spatial_axes(n))
    out += std::string(out.empty() ? "" : ",") + ax.var + "*" + ax.stride + "+" + ax.tap + "*" +
           ax.dil + "-" + ax.pad;
  return out;
}

// The spatial axes' variables: "y,x" (field var) or "dy,dx" (field tap).
std::string axis_vars(std::size_t n, char const* SpatialAxis::*field) {
  std::string out;
  for (auto const& ax : spatial_axes(n))
    out += std::string(out.empty() ? "" : ",") + ax.*field;
  return out;
}

// conv2d (spatial = 2, NCHW) and conv3d (spatial = 3, NCDHW): one statement for any number of
// spatial axes, so that both split, cost and run alike.
Expected<OpInstance> conv(std::size_t spatial, ir::Attrs const& a,
                          std::span<ir::TensorType const> in) {
  std::string const op = spatial == 2 ? "conv2d" : "conv3d";
  CLEAVE_CHECK_OK(expect_rank(op, "X", in[0], spatial + 2, spatial + 2));
  CLEAVE_CHECK_OK(expect_rank(op, "W", in[1], spatial + 2, spatial + 2));
  auto const& x = in[0].shape;
  auto const& k = in[1].shape;
  std::int64_t groups = a.get_int("groups", 1);
  if (groups < 1 || x[1] % groups != 0 || k[0] % groups != 0)
    return shape_error(op, "groups=" + std::to_string(groups) + " must divide both the " +
                               std::to_string(x[1]) + " input channels of X and the " +
                               std::to_string(k[0]) + " output channels of W");
  if (k[1] != x[1] / groups)
    return shape_error(op, "W " + ir::shape_to_string(k) + " has " + std::to_string(k[1]) +
                               " input channels per group but X " + ir::shape_to_string(x) +
                               " gives " + std::to_string(x[1] / groups) +
                               " (groups=" + std::to_string(groups) + ")");
  CLEAVE_TRY(Window w, window(op, a, {k.begin() + 2, k.end()}));
  CLEAVE_TRY(auto o, out_size(op, w, std::span(x).subspan(2), false));
  std::string vars = axis_vars(spatial, &SpatialAxis::var);
  std::string taps = axis_vars(spatial, &SpatialAxis::tap);
  std::string reads = window_reads(spatial);
  OpInstance inst;
  if (groups == 1) {
    inst = instance("Y[n,co," + vars + "] = sum(ci," + taps + ") X[n,ci," + reads + "] * W[co,ci," +
                        taps + "]",
                    {"X", "W"}, window_params(w.s, w.d, w.lo));
  } else {
    inst = instance("Y[n,g*COG+co," + vars + "] = sum(ci," + taps + ") X[n,g*CIG+ci," + reads +
                        "] * W[g*COG+co,ci," + taps + "]",
                    {"X", "W"}, window_params(w.s, w.d, w.lo));
    inst.params["COG"] = static_cast<double>(k[0] / groups);
    inst.params["CIG"] = static_cast<double>(k[1]);
    inst.extents = {{"g", groups}, {"co", k[0] / groups}};
  }
  ir::Shape out = {x[0], k[0]};
  out.insert(out.end(), o.begin(), o.end());
  inst.output = ir::TensorType{out, in[0].dtype};
  return inst;
}

Expected<OpInstance> pool2d(std::string const& op, bool is_max, ir::Attrs const& a,
                            std::span<ir::TensorType const> in) {
  CLEAVE_CHECK_OK(expect_rank(op, "X", in[0], 4, 4));
  auto const& x = in[0].shape;
  auto kernel = a.get_ints("kernel", {});
  if (kernel.size() != 2 || kernel[0] < 1 || kernel[1] < 1)
    return Error(ErrorCode::invalid_argument, op + ": kernel takes 2 positive values (h, w)");
  CLEAVE_TRY(Window w, window(op, a, kernel));
  bool ceil = a.get_int("ceil_mode", 0) != 0;
  CLEAVE_TRY(auto hw, out_size(op, w, std::span(x).subspan(2), ceil));
  tdl::Params p = window_params(w.s, w.d, w.lo);
  p["KH"] = static_cast<double>(w.k[0]);
  p["KW"] = static_cast<double>(w.k[1]);
  std::string read = "X[n,c," + window_reads(2) + "]";
  std::string tdl;
  if (is_max) {
    tdl = "Y[n,c,y,x] = max(dy:KH,dx:KW) " + read + " ; pad(X=-inf)";
  } else if (a.get_int("count_include_pad", 1) != 0) {
    p["inv"] = 1.0 / static_cast<double>(w.k[0] * w.k[1]);
    tdl = "Y[n,c,y,x] = sum(dy:KH,dx:KW) " + read + " * inv";
  } else {
    // Divide by the number of window elements inside the input (ONNX's default).
    p["IH"] = static_cast<double>(x[2]);
    p["IW"] = static_cast<double>(x[3]);
    tdl = "Y[n,c,y,x] = sum(dy:KH,dx:KW) " + read +
          " / ((min(y*sh-pt+KH*dh, IH) - max(y*sh-pt, 0)) * (min(x*sw-pl+KW*dw, IW) - "
          "max(x*sw-pl, 0)))";
    if (w.d[0] != 1 || w.d[1] != 1 || ceil)
      return Error(ErrorCode::unsupported,
                   op + ": count_include_pad=0 is supported without dilation and ceil_mode only");
  }
  OpInstance inst = instance(tdl, {"X"}, std::move(p));
  inst.output = ir::TensorType{{x[0], x[1], hw[0], hw[1]}, in[0].dtype};
  return inst;
}

Expected<OpInstance> global_pool(bool is_max, std::span<ir::TensorType const> in) {
  std::string op = is_max ? "global_max_pool" : "global_avg_pool";
  CLEAVE_CHECK_OK(expect_rank(op, "X", in[0], 4, 4));
  auto const& x = in[0].shape;
  if (is_max) return instance("Y[n,c,0,0] = max(y,x) X[n,c,y,x]", {"X"});
  return instance("Y[n,c,0,0] = sum(y,x) X[n,c,y,x] * inv", {"X"},
                  {{"inv", 1.0 / static_cast<double>(x[2] * x[3])}});
}

std::vector<AttrSpec> transpose_attrs() {
  return {int_attr("transpose_a", 0, "1: read A transposed"),
          int_attr("transpose_b", 0, "1: read B transposed")};
}

std::vector<AttrSpec> pool_attrs(bool is_max) {
  std::vector<AttrSpec> attrs = {
      required_ints_attr("kernel", "window size (h, w)"),
      ints_attr("stride", {}, "(h, w); default: the kernel"),
      ints_attr("padding", {0, 0}, "(h, w) or (top, left, bottom, right)"),
      int_attr("ceil_mode", 0, "1: round the output size up")};
  if (is_max) {
    attrs.push_back(ints_attr("dilation", {1, 1}, "(h, w)"));
  } else {
    attrs.push_back(int_attr("count_include_pad", 1,
                             "1: divide by the full window (PyTorch's "
                             "default); 0: by its part inside the input"));
  }
  return attrs;
}

}  // namespace

// An einsum equation "ij,jk->ik": one or two operands, letters only, no index repeated within a
// term, the output explicit (so that a gradient is the equation read backwards).
struct EinsumTerms {
  std::vector<std::string> inputs;
  std::string output;
};

Expected<EinsumTerms> parse_einsum(std::string const& equation, std::size_t operands) {
  auto bad = [&](std::string const& why) {
    return Error(ErrorCode::invalid_argument, "einsum: equation \"" + equation + "\" " + why);
  };
  std::string eq;
  for (char c : equation)
    if (c != ' ') eq += c;
  EinsumTerms t;
  auto arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::size_t start = 0;
  while (true) {
    auto comma = lhs.find(',', start);
    t.inputs.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (arrow == std::string::npos) return bad("has no \"->\" and output term");
  t.output = eq.substr(arrow + 2);
  if (t.inputs.size() != operands)
    return bad("has " + std::to_string(t.inputs.size()) + " operands; the op has " +
               std::to_string(operands) + " inputs");
  for (auto const& term : std::vector<std::string>{t.inputs[0], t.inputs.back(), t.output}) {
    std::set<char> seen;
    for (char c : term) {
      if (!std::isalpha(static_cast<unsigned char>(c)))
        return bad("uses '" + std::string(1, c) +
                   "'; only letters are indices (no ellipsis, written out instead)");
      if (!seen.insert(c).second)
        return bad("repeats index '" + std::string(1, c) +
                   "' in one term (diagonals are not "
                   "supported)");
    }
  }
  return t;
}

// Y[output] = sum(indices only in the inputs) X0[..] * X1[..]. `shape` gives the extents of
// output indices that no input has (the gradient of an index summed inside one operand).
Expected<OpInstance> einsum(ir::Attrs const& a, std::span<ir::TensorType const> in) {
  std::string const eq = a.get_string("equation", "");
  CLEAVE_TRY(EinsumTerms t, parse_einsum(eq, in.size()));
  std::map<char, std::int64_t> extent;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (t.inputs[i].size() != in[i].shape.size())
      return shape_error("einsum", "term \"" + t.inputs[i] + "\" of \"" + eq + "\" has " +
                                       std::to_string(t.inputs[i].size()) + " indices but X" +
                                       std::to_string(i) + " is " +
                                       ir::shape_to_string(in[i].shape));
    for (std::size_t k = 0; k < t.inputs[i].size(); ++k)
      extent.emplace(t.inputs[i][k], in[i].shape[k]);
  }
  auto given = a.get_ints("shape", {});
  if (!given.empty() && given.size() != t.output.size())
    return shape_error("einsum", "shape " + ir::shape_to_string(given) + " does not have the " +
                                     std::to_string(t.output.size()) + " output indices of \"" +
                                     eq + "\"");
  auto var = [](char c) { return std::string("e") + c; };
  auto vars = [&](std::string const& term) {
    std::vector<std::string> v;
    for (char c : term)
      v.push_back(var(c));
    return v;
  };
  OpInstance inst;
  ir::Shape out;
  for (std::size_t k = 0; k < t.output.size(); ++k) {
    char c = t.output[k];
    if (!given.empty()) inst.extents[var(c)] = given[k];
    if (!extent.count(c) && given.empty())
      return shape_error("einsum", "output index '" + std::string(1, c) + "' of \"" + eq +
                                       "\" is in no input; give its extent with shape");
    out.push_back(given.empty() ? extent[c] : given[k]);
  }
  std::string reduced;
  for (auto [c, n] : extent)
    if (t.output.find(c) == std::string::npos) reduced += (reduced.empty() ? "" : ",") + var(c);
  std::string rhs = reduced.empty() ? "" : "sum(" + reduced + ") ";
  std::vector<std::string> names;
  for (std::size_t i = 0; i < in.size(); ++i) {
    names.push_back("X" + std::to_string(i));
    rhs += (i ? " * " : "") + ref(names.back(), vars(t.inputs[i]));
  }
  inst.tdl = ref("Y", vars(t.output)) + " = " + rhs;
  inst.input_names = names;
  inst.output = ir::TensorType{out, in[0].dtype};
  return inst;
}

void add_dense_ops(OpRegistry& r) {
  auto must = [](Status s) { CLEAVE_ASSERT(s.is_ok(), "duplicate built-in op"); };
  must(r.add({"matmul",
              "Y = A @ B (2-D)",
              transpose_attrs(),
              false,
              2,
              2,
              {f32({64, 32}), f32({32, 16})},
              {},
              matmul}));
  must(r.add({"batch_matmul",
              "Y[b..] = A[b..] @ B[b..] (B may be 2-D, shared)",
              transpose_attrs(),
              false,
              2,
              2,
              {f32({4, 16, 32}), f32({4, 32, 8})},
              {},
              batch_matmul}));
  must(r.add({"linear",
              "Y[..,o] = sum(i) X[..,i] * W[o,i] (bias: a separate add)",
              {},
              false,
              2,
              2,
              {f32({8, 64}), f32({32, 64})},
              {},
              linear}));
  must(r.add({"einsum",
              "Y = einsum(equation, X0[, X1]): products summed over the indices Y lacks",
              {string_attr("equation", "", "e.g. \"bhid,bhjd->bhij\" (letters, no ellipsis)"),
               ints_attr("shape", {}, "Y's shape, for output indices no input has")},
              false,
              1,
              2,
              {f32({8, 4, 16, 32}), f32({8, 4, 16, 32})},
              ir::Attrs{{"equation", std::string("bhid,bhjd->bhij")}},
              einsum}));
  must(r.add(
      {"conv2d",
       "2-D convolution, NCHW, weights [CO, CI/groups, KH, KW]",
       {ints_attr("stride", {1, 1}, "(h, w)"),
        ints_attr("padding", {0, 0}, "(h, w) or (top, left, bottom, right)"),
        ints_attr("dilation", {1, 1}, "(h, w)"), int_attr("groups", 1, "channel groups")},
       false,
       2,
       2,
       {f32({8, 3, 32, 32}), f32({16, 3, 3, 3})},
       ir::Attrs{{"stride", std::vector<std::int64_t>{2, 2}},
                 {"padding", std::vector<std::int64_t>{1, 1}}},
       [](ir::Attrs const& a, std::span<ir::TensorType const> in) { return conv(2, a, in); }}));
  must(r.add(
      {"conv3d",
       "3-D convolution, NCDHW, weights [CO, CI/groups, KD, KH, KW]",
       {ints_attr("stride", {1, 1, 1}, "(d, h, w)"),
        ints_attr("padding", {0, 0, 0}, "(d, h, w) or (front, top, left, back, bottom, right)"),
        ints_attr("dilation", {1, 1, 1}, "(d, h, w)"), int_attr("groups", 1, "channel groups")},
       false,
       2,
       2,
       {f32({2, 3, 8, 16, 16}), f32({8, 3, 2, 3, 3})},
       ir::Attrs{{"padding", std::vector<std::int64_t>{0, 1, 1, 1, 1, 1}}},
       [](ir::Attrs const& a, std::span<ir::TensorType const> in) { return conv(3, a, in); }}));
  must(r.add({"max_pool2d",
              "max pooling, NCHW (padding reads -inf)",
              pool_attrs(true),
              false,
              1,
              1,
              {f32({8, 16, 32, 32})},
              ir::Attrs{{"kernel", std::vector<std::int64_t>{3, 3}},
                        {"stride", std::vector<std::int64_t>{2, 2}},
                        {"padding", std::vector<std::int64_t>{1, 1}}},
              [](ir::Attrs const& a, std::span<ir::TensorType const> in) {
                return pool2d("max_pool2d", true, a, in);
              }}));
  must(r.add({"avg_pool2d",
              "average pooling, NCHW",
              pool_attrs(false),
              false,
              1,
              1,
              {f32({8, 16, 32, 32})},
              ir::Attrs{{"kernel", std::vector<std::int64_t>{2, 2}}},
              [](ir::Attrs const& a, std::span<ir::TensorType const> in) {
                return pool2d("avg_pool2d", false, a, in);
              }}));
  must(r.add({"global_avg_pool",
              "mean over H, W; output [N, C, 1, 1]",
              {},
              false,
              1,
              1,
              {f32({8, 64, 7, 7})},
              {},
              [](ir::Attrs const&, std::span<ir::TensorType const> in) {
                return global_pool(false, in);
              }}));
  must(r.add({"global_max_pool",
              "max over H, W; output [N, C, 1, 1]",
              {},
              false,
              1,
              1,
              {f32({8, 64, 7, 7})},
              {},
              [](ir::Attrs const&, std::span<ir::TensorType const> in) {
                return global_pool(true, in);
              }}));
}

}  // namespace cleave::ops
