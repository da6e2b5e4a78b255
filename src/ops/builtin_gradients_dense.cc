// Gradients of the dense ops (linear, conv2d, conv3d, pooling, batch_matmul with a shared B), each
// one TDL statement. The gradient with respect to the input of a strided window op is written
// gather-style, so that it stays quasi-affine: input row h receives from output row y = (h + pt -
// dy*dh) / sh through kernel tap dy exactly when the division is exact (a 0/1 factor using '%');
// rows outside the output read 0. Without dilation the convolution enumerates only the taps of h's
// phase instead, so its FLOPs are those of the transposed convolution (conv_tap).
#include "ops/builtin_gradient_util.h"

namespace cleave::ops {
namespace {

using namespace detail;

// Window geometry as the forward op reads it, after the forward op has validated the attributes:
// per spatial axis, stride, dilation and leading pad.
struct Geometry {
  std::vector<std::int64_t> s, d, p;
};

Geometry geometry(ir::Attrs const& a, std::vector<std::int64_t> const& kernel) {
  std::size_t n = kernel.size();
  Geometry g{a.get_ints("stride", {}), a.get_ints("dilation", std::vector<std::int64_t>(n, 1)),
             a.get_ints("padding", std::vector<std::int64_t>(n, 0))};
  if (g.s.empty()) g.s = kernel;  // pooling: the stride defaults to the kernel
  g.p.resize(n);                  // (front,) top, left of the 2n form
  return g;
}

// The forward output position whose window reads input position `v` through kernel tap `k`:
// `index` = (v+p-k*d)/s, and `hit` = a factor that is 1 when the division is exact (empty for
// stride 1). An index past the output reads 0, so it needs no test.
struct Transposed {
  std::string index, hit;
};

Transposed transposed(std::string const& v, std::string const& k, std::string const& s,
                      std::string const& d, std::string const& p, std::int64_t stride) {
  std::string num = v + "+" + p + "-" + k + "*" + d;
  if (stride == 1) return {num, ""};
  return {"(" + num + ")/" + s, " * ((" + num + ") % " + s + " == 0)"};
}

// The convolution's version: which (output position, kernel tap) pairs feed input position `v`.
// With stride 1 every tap does: y = v+p-k*d. With a larger stride and no dilation, only the taps
// of v's phase do: tap = (v+p)%s + s*q and y = (v+p)/s - q for q < ceil(K/s), with no wasted
// products (taps past the kernel read W's padding, 0). With both, the masked form of transposed().
struct ConvTap {
  std::string var;          // the reduction variable, with its extent where no dimension gives it
  std::string out;          // dY's index
  std::string tap;          // W's index
  std::string hit;          // a 0/1 factor, or empty
  std::int64_t phases = 0;  // the extent of q (phase form only)
};

ConvTap conv_tap(std::string const& v, std::string const& k, std::string const& q,
                 std::string const& s, std::string const& d, std::string const& p,
                 std::string const& extent, std::int64_t stride, std::int64_t dilation,
                 std::int64_t kernel) {
  if (stride == 1 || dilation != 1) {
    Transposed t = transposed(v, k, s, d, p, stride);
    return {k, t.index, k, t.hit};
  }
  std::string at = "(" + v + "+" + p + ")";
  return {q + ":" + extent, at + "/" + s + "-" + q, at + "%" + s + "+" + s + "*" + q, "",
          (kernel + stride - 1) / stride};
}

std::string shape_of(ir::Shape const& s) {
  return ir::shape_to_string(s);
}

Expected<OpInstance> linear_grad_input(ir::Attrs const&, std::span<ir::TensorType const> in) {
  std::string const op = "linear_grad_input";
  CLEAVE_CHECK_OK(expect_rank(op, "dY", in[0], 2, 10));
  CLEAVE_CHECK_OK(expect_rank(op, "W", in[1], 2, 2));
  if (in[0].shape.back() != in[1].shape[0])
    return shape_error(op, "dY " + shape_of(in[0].shape) + " has " +
                               std::to_string(in[0].shape.back()) + " outputs but W " +
                               shape_of(in[1].shape) + " has " + std::to_string(in[1].shape[0]));
  auto d = dim_vars(in[0].shape.size() - 1);
  return instance("dX[" + join(d, ",") + ",i] = sum(o) dY[" + join(d, ",") + ",o] * W[o,i]",
                  {"dY", "W"});
}

Expected<OpInstance> linear_grad_weight(ir::Attrs const&, std::span<ir::TensorType const> in) {
  std::string const op = "linear_grad_weight";
  CLEAVE_CHECK_OK(expect_rank(op, "dY", in[0], 2, 10));
  CLEAVE_CHECK_OK(expect_rank(op, "X", in[1], 2, 10));
  ir::Shape lead_y(in[0].shape.begin(), in[0].shape.end() - 1);
  ir::Shape lead_x(in[1].shape.begin(), in[1].shape.end() - 1);
  if (lead_y != lead_x)
    return shape_error(op, "dY " + shape_of(in[0].shape) + " and X " + shape_of(in[1].shape) +
                               " must agree on every dimension but the last");
  auto d = join(dim_vars(lead_y.size()), ",");
  return instance("dW[o,i] = sum(" + d + ") dY[" + d + ",o] * X[" + d + ",i]", {"dY", "X"});
}

// conv2d's and conv3d's gradient with respect to X, over the last `spatial` axes.
Expected<OpInstance> conv_grad_input(std::size_t spatial, OpRegistry const& r, ir::Attrs const& a,
                                     std::span<ir::TensorType const> in) {
  std::string const fwd = spatial == 2 ? "conv2d" : "conv3d";
  std::string const op = fwd + "_grad_input";
  int const rank = static_cast<int>(spatial) + 2;
  CLEAVE_CHECK_OK(expect_rank(op, "dY", in[0], spatial + 2, spatial + 2));
  CLEAVE_CHECK_OK(expect_rank(op, "W", in[1], spatial + 2, spatial + 2));
  CLEAVE_TRY(ir::Shape x, shape_attr(op, a, "input_shape", rank));
  auto const& k = in[1].shape;
  CLEAVE_TRY(ir::TensorType y, forward_output(r, op, fwd, a, {{x, in[0].dtype}, in[1]}));
  CLEAVE_CHECK_OK(expect_shape(op, "dY", in[0], y.shape,
                               fwd + " of X " + shape_of(x) + " and W " + shape_of(k)));
  Geometry g = geometry(a, {k.begin() + 2, k.end()});
  tdl::Params p = window_params(g.s, g.d, g.p);
  std::string vars = "sum(co", at, taps, hits, ins;
  auto axes = spatial_axes(spatial);
  for (std::size_t i = 0; i < spatial; ++i) {
    auto const& ax = axes[i];
    ConvTap t = conv_tap(ax.in_var, ax.tap, ax.phase, ax.stride, ax.dil, ax.pad, ax.phases, g.s[i],
                         g.d[i], k[i + 2]);
    p[ax.in_extent] = static_cast<double>(x[i + 2]);
    p[ax.phases] = static_cast<double>(t.phases);
    vars += "," + t.var;
    at += "," + t.out;
    taps += "," + t.tap;
    hits += t.hit;
    ins += std::string(",") + ax.in_var + ":" + ax.in_extent;
  }
  vars += ") ";
  std::int64_t groups = a.get_int("groups", 1);
  OpInstance inst;
  if (groups == 1) {
    inst = instance("dX[n,ci" + ins + "] = " + vars + "dY[n,co" + at + "] * W[co,ci" + taps + "]" +
                        hits,
                    {"dY", "W"}, std::move(p));
  } else {
    p["COG"] = static_cast<double>(k[0] / groups);
    p["CIG"] = static_cast<double>(k[1]);
    inst = instance("dX[n,g*CIG+ci" + ins + "] = " + vars + "dY[n,g*COG+co" + at +
                        "] * W[g*COG+co,ci" + taps + "]" + hits,
                    {"dY", "W"}, std::move(p));
    inst.extents = {{"g", groups}, {"co", k[0] / groups}};
  }
  inst.output = ir::TensorType{x, in[0].dtype};
  return inst;
}

// conv2d's and conv3d's gradient with respect to W, over the last `spatial` axes.
Expected<OpInstance> conv_grad_weight(std::size_t spatial, OpRegistry const& r, ir::Attrs const& a,
                                      std::span<ir::TensorType const> in) {
  std::string const fwd = spatial == 2 ? "conv2d" : "conv3d";
  std::string const op = fwd + "_grad_weight";
  CLEAVE_CHECK_OK(expect_rank(op, "dY", in[0], spatial + 2, spatial + 2));
  CLEAVE_CHECK_OK(expect_rank(op, "X", in[1], spatial + 2, spatial + 2));
  CLEAVE_TRY(ir::Shape kernel, shape_attr(op, a, "kernel", static_cast<int>(spatial)));
  auto const& x = in[1].shape;
  std::int64_t groups = a.get_int("groups", 1);
  ir::Shape w = {in[0].shape[1], groups >= 1 ? x[1] / groups : x[1]};
  w.insert(w.end(), kernel.begin(), kernel.end());
  CLEAVE_TRY(ir::TensorType y, forward_output(r, op, fwd, a, {in[1], {w, in[1].dtype}}));
  CLEAVE_CHECK_OK(expect_shape(op, "dY", in[0], y.shape,
                               fwd + " of X " + shape_of(x) + " with weights " + shape_of(w)));
  Geometry g = geometry(a, kernel);
  tdl::Params p = window_params(g.s, g.d, g.p);
  std::string taps, vars, reads;
  auto axes = spatial_axes(spatial);
  for (std::size_t i = 0; i < spatial; ++i) {
    auto const& ax = axes[i];
    p[ax.kernel] = static_cast<double>(kernel[i]);
    taps += std::string(",") + ax.tap + ":" + ax.kernel;
    vars += std::string(",") + ax.var;
    reads +=
        std::string(",") + ax.var + "*" + ax.stride + "+" + ax.tap + "*" + ax.dil + "-" + ax.pad;
  }
  OpInstance inst;
  if (groups == 1) {
    inst = instance("dW[co,ci" + taps + "] = sum(n" + vars + ") dY[n,co" + vars + "] * X[n,ci" +
                        reads + "]",
                    {"dY", "X"}, std::move(p));
  } else {
    p["COG"] = static_cast<double>(w[0] / groups);
    p["CIG"] = static_cast<double>(w[1]);
    inst = instance("dW[g*COG+co,ci" + taps + "] = sum(n" + vars + ") dY[n,g*COG+co" + vars +
                        "] * X[n,g*CIG+ci" + reads + "]",
                    {"dY", "X"}, std::move(p));
    inst.extents = {{"g", groups}, {"co", w[0] / groups}, {"ci", w[1]}};
  }
  inst.output = ir::TensorType{w, in[1].dtype};
  return inst;
}

// Ties: every position equal to its window's max receives the window's gradient (PyTorch gives it
// to the first one only); with continuous inputs ties have probability zero.
Expected<OpInstance> max_pool2d_grad(OpRegistry const& r, ir::Attrs const& a,
                                     std::span<ir::TensorType const> in) {
  std::string const op = "max_pool2d_grad";
  CLEAVE_CHECK_OK(expect_rank(op, "X", in[0], 4, 4));
  CLEAVE_TRY(ir::TensorType y, forward_output(r, op, "max_pool2d", a, {in[0]}));
  std::string why = "max_pool2d of X " + shape_of(in[0].shape);
  CLEAVE_CHECK_OK(expect_shape(op, "Y", in[1], y.shape, why));
  CLEAVE_CHECK_OK(expect_shape(op, "dY", in[2], y.shape, why));
  auto kernel = a.get_ints("kernel", {});
  Geometry g = geometry(a, kernel);
  tdl::Params p = window_params(g.s, g.d, g.p);
  p["KH"] = static_cast<double>(kernel[0]);
  p["KW"] = static_cast<double>(kernel[1]);
  Transposed ty = transposed("h", "dy", "sh", "dh", "pt", g.s[0]);
  Transposed tx = transposed("w", "dx", "sw", "dw", "pl", g.s[1]);
  std::string at = "[n,c," + ty.index + "," + tx.index + "]";
  return instance("dX[n,c,h,w] = sum(dy:KH,dx:KW) (X[n,c,h,w] == Y" + at + ") * dY" + at + ty.hit +
                      tx.hit,
                  {"X", "Y", "dY"}, std::move(p));
}

Expected<OpInstance> avg_pool2d_grad(OpRegistry const& r, ir::Attrs const& a,
                                     std::span<ir::TensorType const> in) {
  std::string const op = "avg_pool2d_grad";
  CLEAVE_CHECK_OK(expect_rank(op, "dY", in[0], 4, 4));
  CLEAVE_TRY(ir::Shape x, shape_attr(op, a, "input_shape", 4));
  CLEAVE_TRY(ir::TensorType y, forward_output(r, op, "avg_pool2d", a, {{x, in[0].dtype}}));
  CLEAVE_CHECK_OK(expect_shape(op, "dY", in[0], y.shape, "avg_pool2d of X " + shape_of(x)));
  auto kernel = a.get_ints("kernel", {});
  Geometry g = geometry(a, kernel);
  tdl::Params p = window_params(g.s, g.d, g.p);
  p["KH"] = static_cast<double>(kernel[0]);
  p["KW"] = static_cast<double>(kernel[1]);
  p["IH"] = static_cast<double>(x[2]);
  p["IW"] = static_cast<double>(x[3]);
  Transposed ty = transposed("h", "dy", "sh", "dh", "pt", g.s[0]);
  Transposed tx = transposed("w", "dx", "sw", "dw", "pl", g.s[1]);
  std::string tdl = "dX[n,c,h:IH,w:IW] = sum(dy:KH,dx:KW) dY[n,c," + ty.index + "," + tx.index +
                    "]" + ty.hit + tx.hit;
  if (a.get_int("count_include_pad", 1) != 0) {
    p["inv"] = 1.0 / static_cast<double>(kernel[0] * kernel[1]);
    tdl += " * inv";
  } else {
    // The forward window of output row y starts at y*sh-pt = h-dy (no dilation here, see
    // avg_pool2d); divide by its part inside X, as the forward op does.
    tdl += " / ((min(h-dy+KH, IH) - max(h-dy, 0)) * (min(w-dx+KW, IW) - max(w-dx, 0)))";
  }
  OpInstance inst = instance(tdl, {"dY"}, std::move(p));
  inst.output = ir::TensorType{x, in[0].dtype};
  return inst;
}

Expected<OpInstance> global_avg_pool_grad(ir::Attrs const& a, std::span<ir::TensorType const> in) {
  std::string const op = "global_avg_pool_grad";
  CLEAVE_CHECK_OK(expect_rank(op, "dY", in[0], 4, 4));
  CLEAVE_TRY(ir::Shape x, shape_attr(op, a, "input_shape", 4));
  CLEAVE_CHECK_OK(
      expect_shape(op, "dY", in[0], {x[0], x[1], 1, 1}, "global_avg_pool of X " + shape_of(x)));
  OpInstance inst =
      instance("dX[n,c,h:IH,w:IW] = dY[n,c,0,0] * inv", {"dY"},
               {{"IH", x[2]}, {"IW", x[3]}, {"inv", 1.0 / static_cast<double>(x[2] * x[3])}});
  inst.output = ir::TensorType{x, in[0].dtype};
  return inst;
}

Expected<OpInstance> global_max_pool_grad(ir::Attrs const&, std::span<ir::TensorType const> in) {
  std::string const op = "global_max_pool_grad";
  CLEAVE_CHECK_OK(expect_rank(op, "X", in[0], 4, 4));
  auto const& x = in[0].shape;
  std::string why = "global_max_pool of X " + shape_of(x);
  CLEAVE_CHECK_OK(expect_shape(op, "Y", in[1], {x[0], x[1], 1, 1}, why));
  CLEAVE_CHECK_OK(expect_shape(op, "dY", in[2], {x[0], x[1], 1, 1}, why));
  return instance("dX[n,c,h,w] = (X[n,c,h,w] == Y[n,c,0,0]) * dY[n,c,0,0]", {"X", "Y", "dY"});
}

// The gradient of batch_matmul's B when B is 2-D (shared by every batch): summed over the batch,
// laid out as B is.
Expected<OpInstance> batch_matmul_grad_shared(ir::Attrs const& a,
                                              std::span<ir::TensorType const> in) {
  std::string const op = "batch_matmul_grad_shared";
  CLEAVE_CHECK_OK(expect_rank(op, "A", in[0], 3, 10));
  auto const& as = in[0].shape;
  auto const& ys = in[1].shape;
  std::size_t batch = as.size() - 2;
  bool ta = a.get_int("transpose_a", 0) != 0;
  std::int64_t m = ta ? as[batch + 1] : as[batch];
  ir::Shape want(as.begin(), as.begin() + static_cast<std::ptrdiff_t>(batch));
  want.push_back(m);
  if (ys.size() != as.size() || !std::equal(want.begin(), want.end(), ys.begin()))
    return shape_error(op, "dY " + shape_of(ys) + " must be A's batch dimensions and rows (" +
                               shape_of(want) + ") followed by the columns of B");
  auto b = dim_vars(batch, "b");
  std::string lead = join(b, ",") + ",";
  std::string out = a.get_int("transpose_b", 0) ? "dB[j,k]" : "dB[k,j]";
  return instance(out + " = sum(" + lead + "i) A[" + lead + (ta ? "k,i" : "i,k") + "] * dY[" +
                      lead + "i,j]",
                  {"A", "dY"});
}

ir::Attrs ints_attrs(std::initializer_list<std::pair<std::string, std::vector<std::int64_t>>> kv) {
  ir::Attrs out;
  for (auto const& [k, v] : kv)
    out.set(k, v);
  return out;
}

}  // namespace

void add_gradient_ops(OpRegistry& r) {
  add_dense_gradient_ops(r);
  add_pointwise_gradient_ops(r);
}

void add_dense_gradient_ops(OpRegistry& r) {
  OpRegistry const* reg = &r;  // gradient ops check their shapes against their forward ops
  auto with = [reg](auto f) {
    return
        [reg, f](ir::Attrs const& a, std::span<ir::TensorType const> in) { return f(*reg, a, in); };
  };
  // conv2d's (spatial = 2) or conv3d's (3) gradient `f`.
  auto conv = [reg](std::size_t spatial, auto f) {
    return [reg, spatial, f](ir::Attrs const& a, std::span<ir::TensorType const> in) {
      return f(spatial, *reg, a, in);
    };
  };
  must_add(r, fixed_schema("linear_grad_input", "dX[..,i] = sum(o) dY[..,o] * W[o,i]", {},
                           {f32({8, 32}), f32({32, 64})}, {}, linear_grad_input));
  must_add(r, fixed_schema("linear_grad_weight",
                           "dW[o,i] = sum over leading dims of dY[..,o] * X[..,i]", {},
                           {f32({8, 32}), f32({8, 64})}, {}, linear_grad_weight));
  must_add(
      r, fixed_schema(
             "conv2d_grad_input", "gradient of conv2d with respect to X",
             forward_attrs(r, "conv2d", {required_ints_attr("input_shape", "X's shape [N,C,H,W]")}),
             {f32({8, 16, 16, 16}), f32({16, 3, 3, 3})},
             ints_attrs({{"stride", {2, 2}}, {"padding", {1, 1}}, {"input_shape", {8, 3, 32, 32}}}),
             conv(2, conv_grad_input)));
  must_add(r,
           fixed_schema(
               "conv2d_grad_weight", "gradient of conv2d with respect to W [CO, C/groups, KH, KW]",
               forward_attrs(r, "conv2d", {required_ints_attr("kernel", "W's window (KH, KW)")}),
               {f32({8, 16, 16, 16}), f32({8, 3, 32, 32})},
               ints_attrs({{"stride", {2, 2}}, {"padding", {1, 1}}, {"kernel", {3, 3}}}),
               conv(2, conv_grad_weight)));
  must_add(r, fixed_schema(
                  "conv3d_grad_input", "gradient of conv3d with respect to X",
                  forward_attrs(r, "conv3d",
                                {required_ints_attr("input_shape", "X's shape [N,C,D,H,W]")}),
                  {f32({2, 8, 8, 16, 16}), f32({8, 3, 2, 3, 3})},
                  ints_attrs({{"padding", {0, 1, 1, 1, 1, 1}}, {"input_shape", {2, 3, 8, 16, 16}}}),
                  conv(3, conv_grad_input)));
  must_add(r, fixed_schema("conv3d_grad_weight",
                           "gradient of conv3d with respect to W [CO, C/groups, KD, KH, KW]",
                           forward_attrs(r, "conv3d",
                                         {required_ints_attr("kernel", "W's window (KD, KH, KW)")}),
                           {f32({2, 8, 8, 16, 16}), f32({2, 3, 8, 16, 16})},
                           ints_attrs({{"padding", {0, 1, 1, 1, 1, 1}}, {"kernel", {2, 3, 3}}}),
                           conv(3, conv_grad_weight)));
  must_add(r,
           fixed_schema("max_pool2d_grad",
                        "dY to every position of X equal to its window's max (ties all get it)",
                        forward_attrs(r, "max_pool2d"),
                        {f32({8, 16, 32, 32}), f32({8, 16, 16, 16}), f32({8, 16, 16, 16})},
                        ints_attrs({{"kernel", {3, 3}}, {"stride", {2, 2}}, {"padding", {1, 1}}}),
                        with(max_pool2d_grad)));
  must_add(r,
           fixed_schema("avg_pool2d_grad", "gradient of avg_pool2d: dY spread over each window",
                        forward_attrs(r, "avg_pool2d",
                                      {required_ints_attr("input_shape", "X's shape [N,C,H,W]")}),
                        {f32({8, 16, 16, 16})},
                        ints_attrs({{"kernel", {2, 2}}, {"input_shape", {8, 16, 32, 32}}}),
                        with(avg_pool2d_grad)));
  must_add(r, fixed_schema("global_avg_pool_grad", "dX[n,c,h,w] = dY[n,c,0,0] / (H*W)",
                           {required_ints_attr("input_shape", "X's shape [N,C,H,W]")},
                           {f32({8, 64, 1, 1})}, ints_attrs({{"input_shape", {8, 64, 7, 7}}}),
                           global_avg_pool_grad));
  must_add(r, fixed_schema("global_max_pool_grad", "dX = dY where X equals its channel's max Y", {},
                           {f32({8, 64, 7, 7}), f32({8, 64, 1, 1}), f32({8, 64, 1, 1})}, {},
                           global_max_pool_grad));
  must_add(r, fixed_schema("batch_matmul_grad_shared",
                           "gradient of batch_matmul's 2-D shared B: sum over the batch",
                           forward_attrs(r, "batch_matmul"), {f32({4, 16, 32}), f32({4, 16, 8})},
                           {}, batch_matmul_grad_shared));
}

}  // namespace cleave::ops
