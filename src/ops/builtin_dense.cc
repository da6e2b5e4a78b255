// Dense ops: matmul, batch_matmul, linear, einsum, conv2d and pooling, each written as one TDL
// statement.
#include <cmath>
#include <set>

#include "ops/builtin_util.h"
#include "support/assert.h"

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

// Spatial attributes of conv and pooling: (top, left, bottom, right) pads, strides, dilations.
struct Window {
  std::int64_t kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
};

Expected<Window> window(std::string const& op, ir::Attrs const& a, std::int64_t kh,
                        std::int64_t kw) {
  Window w{kh, kw, 1, 1, 1, 1, 0, 0, 0, 0};
  auto stride = a.get_ints("stride", {});
  if (stride.empty()) stride = {kh, kw};  // pooling: stride defaults to the kernel
  auto dil = a.get_ints("dilation", {1, 1});
  auto pad = a.get_ints("padding", {0, 0});
  if (stride.size() != 2 || dil.size() != 2 || (pad.size() != 2 && pad.size() != 4))
    return Error(ErrorCode::invalid_argument,
                 op + ": stride and dilation take 2 values (h, w); padding takes 2 (h, w) or 4 "
                      "(top, left, bottom, right)");
  w.sh = stride[0];
  w.sw = stride[1];
  w.dh = dil[0];
  w.dw = dil[1];
  w.pt = pad[0];
  w.pl = pad[1];
  w.pb = pad.size() == 4 ? pad[2] : pad[0];
  w.pr = pad.size() == 4 ? pad[3] : pad[1];
  if (w.sh < 1 || w.sw < 1 || w.dh < 1 || w.dw < 1 || w.pt < 0 || w.pl < 0 || w.pb < 0 || w.pr < 0)
    return Error(ErrorCode::invalid_argument,
                 op + ": strides and dilations must be >= 1 and paddings >= 0");
  return w;
}

Expected<std::pair<std::int64_t, std::int64_t>> out_hw(std::string const& op, Window const& w,
                                                       std::int64_t h, std::int64_t wd, bool ceil) {
  auto one = [&](std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t d, std::int64_t p0,
                 std::int64_t p1) {
    std::int64_t span = in + p0 + p1 - d * (k - 1) - 1;
    if (span < 0) return std::int64_t{0};
    std::int64_t o = (ceil ? (span + s - 1) / s : span / s) + 1;
    if (ceil && (o - 1) * s >= in + p0) --o;  // the last window must start inside the input
    return o;
  };
  std::int64_t oh = one(h, w.kh, w.sh, w.dh, w.pt, w.pb);
  std::int64_t ow = one(wd, w.kw, w.sw, w.dw, w.pl, w.pr);
  if (oh < 1 || ow < 1)
    return shape_error(op, "the window (" + std::to_string(w.kh) + "x" + std::to_string(w.kw) +
                               ", dilation " + std::to_string(w.dh) + "x" + std::to_string(w.dw) +
                               ") is larger than the padded input (" + std::to_string(h) + "x" +
                               std::to_string(wd) + ")");
  return std::pair{oh, ow};
}

std::string window_index(char const* v, char const* k, char const* s, char const* d,
                         char const* p) {
  return std::string(v) + "*" + s + "+" + k + "*" + d + "-" + p;
}

tdl::Params window_params(Window const& w) {
  return {{"sh", w.sh}, {"sw", w.sw}, {"dh", w.dh}, {"dw", w.dw}, {"pt", w.pt}, {"pl", w.pl}};
}

Expected<OpInstance> conv2d(ir::Attrs const& a, std::span<ir::TensorType const> in) {
  CLEAVE_CHECK_OK(expect_rank("conv2d", "X", in[0], 4, 4));
  CLEAVE_CHECK_OK(expect_rank("conv2d", "W", in[1], 4, 4));
  auto const& x = in[0].shape;
  auto const& k = in[1].shape;
  std::int64_t groups = a.get_int("groups", 1);
  if (groups < 1 || x[1] % groups != 0 || k[0] % groups != 0)
    return shape_error("conv2d", "groups=" + std::to_string(groups) + " must divide both the " +
                                     std::to_string(x[1]) + " input channels of X and the " +
                                     std::to_string(k[0]) + " output channels of W");
  if (k[1] != x[1] / groups)
    return shape_error("conv2d", "W " + ir::shape_to_string(k) + " has " + std::to_string(k[1]) +
                                     " input channels per group but X " + ir::shape_to_string(x) +
                                     " gives " + std::to_string(x[1] / groups) +
                                     " (groups=" + std::to_string(groups) + ")");
  CLEAVE_TRY(Window w, window("conv2d", a, k[2], k[3]));
  CLEAVE_TRY(auto hw, out_hw("conv2d", w, x[2], x[3], false));
  std::string yi = window_index("y", "dy", "sh", "dh", "pt");
  std::string xi = window_index("x", "dx", "sw", "dw", "pl");
  OpInstance inst;
  if (groups == 1) {
    inst = instance("Y[n,co,y,x] = sum(ci,dy,dx) X[n,ci," + yi + "," + xi + "] * W[co,ci,dy,dx]",
                    {"X", "W"}, window_params(w));
  } else {
    inst = instance("Y[n,g*COG+co,y,x] = sum(ci,dy,dx) X[n,g*CIG+ci," + yi + "," + xi +
                        "] * W[g*COG+co,ci,dy,dx]",
                    {"X", "W"}, window_params(w));
    inst.params["COG"] = static_cast<double>(k[0] / groups);
    inst.params["CIG"] = static_cast<double>(k[1]);
    inst.extents = {{"g", groups}, {"co", k[0] / groups}};
  }
  inst.output = ir::TensorType{{x[0], k[0], hw.first, hw.second}, in[0].dtype};
  return inst;
}

Expected<OpInstance> pool2d(std::string const& op, bool is_max, ir::Attrs const& a,
                            std::span<ir::TensorType const> in) {
  CLEAVE_CHECK_OK(expect_rank(op, "X", in[0], 4, 4));
  auto const& x = in[0].shape;
  auto kernel = a.get_ints("kernel", {});
  if (kernel.size() != 2 || kernel[0] < 1 || kernel[1] < 1)
    return Error(ErrorCode::invalid_argument, op + ": kernel takes 2 positive values (h, w)");
  CLEAVE_TRY(Window w, window(op, a, kernel[0], kernel[1]));
  bool ceil = a.get_int("ceil_mode", 0) != 0;
  CLEAVE_TRY(auto hw, out_hw(op, w, x[2], x[3], ceil));
  tdl::Params p = window_params(w);
  p["KH"] = static_cast<double>(w.kh);
  p["KW"] = static_cast<double>(w.kw);
  std::string yi = window_index("y", "dy", "sh", "dh", "pt");
  std::string xi = window_index("x", "dx", "sw", "dw", "pl");
  std::string read = "X[n,c," + yi + "," + xi + "]";
  std::string tdl;
  if (is_max) {
    tdl = "Y[n,c,y,x] = max(dy:KH,dx:KW) " + read + " ; pad(X=-inf)";
  } else if (a.get_int("count_include_pad", 1) != 0) {
    p["inv"] = 1.0 / static_cast<double>(w.kh * w.kw);
    tdl = "Y[n,c,y,x] = sum(dy:KH,dx:KW) " + read + " * inv";
  } else {
    // Divide by the number of window elements inside the input (ONNX's default).
    p["IH"] = static_cast<double>(x[2]);
    p["IW"] = static_cast<double>(x[3]);
    tdl = "Y[n,c,y,x] = sum(dy:KH,dx:KW) " + read +
          " / ((min(y*sh-pt+KH*dh, IH) - max(y*sh-pt, 0)) * (min(x*sw-pl+KW*dw, IW) - "
          "max(x*sw-pl, 0)))";
    if (w.dh != 1 || w.dw != 1 || ceil)
      return Error(ErrorCode::unsupported,
                   op + ": count_include_pad=0 is supported without dilation and ceil_mode only");
  }
  OpInstance inst = instance(tdl, {"X"}, std::move(p));
  inst.output = ir::TensorType{{x[0], x[1], hw.first, hw.second}, in[0].dtype};
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
  must(r.add({"conv2d",
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
              conv2d}));
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
