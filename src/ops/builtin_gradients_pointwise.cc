// Gradients of the element-wise, normalization and layout ops, each one TDL statement. Where the
// forward op broadcasts, the gradient is written at the broadcast shape and sum_to_shape reduces
// it to the input's shape. Batch norm's gradient follows its forward decomposition (bn_mean,
// bn_var, bn_apply): one op per partial derivative, which autodiff adds up.
#include <algorithm>
#include <limits>
#include <numeric>

#include "ops/builtin_gradient_util.h"

namespace cleave::ops {
namespace {

using namespace detail;

// dX[d..] = body, where each '@' stands for the first input's read and '$' for dY's.
Expected<OpInstance> pointwise(std::string const& op, std::string const& first,
                               std::string const& body, std::span<ir::TensorType const> in) {
  CLEAVE_CHECK_OK(expect_same_shapes(op, {first, "dY"}, in));
  auto d = dim_vars(in[0].shape.size());
  std::string expr;
  for (char c : body)
    expr += c == '@' ? ref(first, d) : c == '$' ? ref("dY", d) : std::string(1, c);
  return instance(ref("dX", d) + " = " + expr, {first, "dY"});
}

// dX = dY where lo < X < hi, else 0 (PyTorch's hardtanh backward: no gradient at the bounds).
Expected<OpInstance> clip_grad(ir::Attrs const& a, std::span<ir::TensorType const> in) {
  CLEAVE_TRY(OpInstance inst, pointwise("clip_grad", "X", "select((@ > lo) * (@ < hi), $, 0)", in));
  inst.params = {{"lo", a.get_float("min", std::numeric_limits<float>::lowest())},
                 {"hi", a.get_float("max", std::numeric_limits<float>::max())}};
  return inst;
}

// d/dx max(min(alpha*x + beta, 1), 0) = alpha inside (0, 1), else 0.
Expected<OpInstance> hardsigmoid_grad(ir::Attrs const& a, std::span<ir::TensorType const> in) {
  CLEAVE_TRY(OpInstance inst,
             pointwise("hardsigmoid_grad", "X",
                       "select((alpha * @ + beta > 0) * (alpha * @ + beta < 1), $ * alpha, 0)",
                       in));
  inst.params = {{"alpha", a.get_float("alpha", 0.2)}, {"beta", a.get_float("beta", 0.5)}};
  return inst;
}

Expected<OpInstance> gelu_grad(ir::Attrs const& a, std::span<ir::TensorType const> in) {
  std::string approx = a.get_string("approximate", "none");
  // d/dx x*Phi(x) = Phi(x) + x*phi(x).
  if (approx == "none")
    return pointwise("gelu_grad", "X",
                     "$ * (0.5 * (1 + erf(@ * 0.7071067811865476)) + @ * exp(-0.5 * @ * @) * "
                     "0.3989422804014327)",
                     in);
  // t = tanh(c*(x + 0.044715x^3)): d/dx 0.5x(1+t) = 0.5(1+t) + 0.5x(1-t^2)c(1 + 3*0.044715x^2).
  std::string t = "tanh(0.7978845608028654 * (@ + 0.044715 * @ * @ * @))";
  if (approx == "tanh")
    return pointwise("gelu_grad", "X",
                     "$ * (0.5 * (1 + " + t + ") + 0.5 * @ * (1 - " + t + " * " + t +
                         ") * 0.7978845608028654 * (1 + 0.134145 * @ * @))",
                     in);
  return Error(ErrorCode::invalid_argument,
               "gelu_grad: approximate must be \"none\" or \"tanh\", got \"" + approx + "\"");
}

// The inverse of NumPy broadcasting: X summed over its extra leading dimensions and over the
// dimensions where `shape` has 1 and X more.
Expected<OpInstance> sum_to_shape(ir::Attrs const& a, std::span<ir::TensorType const> in) {
  std::string const op = "sum_to_shape";
  auto const& x = in[0].shape;
  CLEAVE_TRY(ir::Shape want, shape_attr(op, a, "shape", -1));
  if (want.size() > x.size())
    return shape_error(op, "X " + ir::shape_to_string(x) + " cannot be summed to the larger rank " +
                               std::to_string(want.size()) + " of " + ir::shape_to_string(want));
  std::size_t extra = x.size() - want.size();
  auto d = dim_vars(x.size());
  std::vector<std::string> out, reduced;
  for (std::size_t i = 0; i < x.size(); ++i) {
    bool kept = i >= extra && want[i - extra] == x[i];
    if (i >= extra && !kept && want[i - extra] != 1)
      return shape_error(op, "X " + ir::shape_to_string(x) + " does not broadcast from " +
                                 ir::shape_to_string(want) + ": dimension " + std::to_string(i) +
                                 " is " + std::to_string(x[i]) + " vs " +
                                 std::to_string(want[i - extra]));
    if (kept) {
      out.push_back(d[i]);
    } else {
      reduced.push_back(d[i]);
      if (i >= extra) out.push_back("0");
    }
  }
  std::string rhs = reduced.empty() ? "" : "sum(" + join(reduced, ",") + ") ";
  OpInstance inst = instance(ref("Y", out) + " = " + rhs + ref("X", d), {"X"});
  inst.output = ir::TensorType{want, in[0].dtype};
  return inst;
}

// The indices of a broadcast operand of shape `s` inside an output of shape `out` (as in add).
std::vector<std::string> broadcast_index(ir::Shape const& s, ir::Shape const& out,
                                         std::vector<std::string> const& d) {
  std::vector<std::string> idx;
  for (std::size_t j = 0; j < s.size(); ++j) {
    std::size_t od = out.size() - s.size() + j;
    idx.push_back(s[j] == 1 && out[od] != 1 ? "0" : d[od]);
  }
  return idx;
}

Expected<OpInstance> div_grad_rhs(OpRegistry const& r, ir::Attrs const&,
                                  std::span<ir::TensorType const> in) {
  std::string const op = "div_grad_rhs";
  CLEAVE_TRY(ir::TensorType y, forward_output(r, op, "div", {}, {in[0], in[1]}));
  CLEAVE_CHECK_OK(expect_shape(op, "dY", in[2], y.shape,
                               "broadcasting A " + ir::shape_to_string(in[0].shape) + " with B " +
                                   ir::shape_to_string(in[1].shape)));
  auto d = dim_vars(y.shape.size());
  std::string b = ref("B", broadcast_index(in[1].shape, y.shape, d));
  return instance(ref("dB", d) + " = -" + ref("dY", d) + " * " +
                      ref("A", broadcast_index(in[0].shape, y.shape, d)) + " / (" + b + " * " + b +
                      ")",
                  {"A", "B", "dY"});
}

Expected<OpInstance> softmax_grad(ir::Attrs const& a, std::span<ir::TensorType const> in) {
  std::string const op = "softmax_grad";
  CLEAVE_CHECK_OK(expect_rank(op, "Y", in[0], 1, 12));
  CLEAVE_CHECK_OK(expect_same_shapes(op, {"Y", "dY"}, in));
  CLEAVE_TRY(std::size_t axis, normalize_axis(op, a.get_int("axis", -1), in[0].shape.size()));
  auto d = dim_vars(in[0].shape.size());
  auto dj = with_axis(d, axis, "j");
  return instance(ref("dX", d) + " = " + ref("Y", d) + " * (" + ref("dY", d) + " - sum(j) " +
                      ref("dY", dj) + " * " + ref("Y", dj) + ") ; nosplit(" + d[axis] + ")",
                  {"Y", "dY"});
}

// Layer norm's row statistics over the last axis, as nested reductions (as in layer_norm).
struct RowStats {
  std::string mean;     // of X's row
  std::string var_eps;  // its variance + eps
  std::string xc;       // X - mean at the op's point
};

RowStats row_stats(std::vector<std::string> const& d) {
  std::size_t last = d.size() - 1;
  auto at = [&](char const* v) { return ref("X", with_axis(d, last, v)); };
  std::string mean = "(sum(k) " + at("k") + " * invD)";
  std::string xj = "(" + at("j") + " - " + mean + ")";
  return {mean, "sum(j) " + xj + " * " + xj + " * invD + eps",
          "(" + ref("X", d) + " - " + mean + ")"};
}

Status layer_norm_shapes(std::string const& op, std::span<ir::TensorType const> in, bool gamma) {
  CLEAVE_CHECK_OK(expect_rank(op, "X", in[0], 1, 12));
  ir::TensorType const& dy = in.back();
  CLEAVE_CHECK_OK(expect_shape(op, "dY", dy, in[0].shape, "X"));
  if (gamma && in[1].shape != ir::Shape{in[0].shape.back()})
    return shape_error(op, "gamma G must be [" + std::to_string(in[0].shape.back()) +
                               "] (X's last dimension), got " + ir::shape_to_string(in[1].shape));
  return Status::ok();
}

// With g = dY * G, r = var + eps and xc = X - mean:
// dX = (g - mean(g)) / sqrt(r) - xc * mean(g * xc) / r^1.5.
Expected<OpInstance> layer_norm_grad_input(ir::Attrs const& a, std::span<ir::TensorType const> in) {
  CLEAVE_CHECK_OK(layer_norm_shapes("layer_norm_grad_input", in, true));
  std::size_t r = in[0].shape.size();
  auto d = dim_vars(r);
  RowStats s = row_stats(d);
  auto dj = with_axis(d, r - 1, "j");
  std::string g_j = ref("dY", dj) + " * G[j]";
  std::string xc_j = "(" + ref("X", dj) + " - " + s.mean + ")";
  return instance(
      ref("dX", d) + " = (" + ref("dY", d) + " * G[" + d[r - 1] + "] - (sum(j) " + g_j +
          ") * invD) * rsqrt(" + s.var_eps + ") - " + s.xc + " * (sum(j) " + g_j + " * " + xc_j +
          ") * invD * pow(" + s.var_eps + ", -1.5) ; nosplit(" + d[r - 1] + ")",
      {"X", "G", "dY"},
      {{"invD", 1.0 / static_cast<double>(in[0].shape.back())}, {"eps", a.get_float("eps", 1e-5)}});
}

Expected<OpInstance> layer_norm_grad_gamma(ir::Attrs const& a, std::span<ir::TensorType const> in) {
  CLEAVE_CHECK_OK(layer_norm_shapes("layer_norm_grad_gamma", in, false));
  std::size_t r = in[0].shape.size();
  auto d = dim_vars(r);
  RowStats s = row_stats(d);
  std::vector<std::string> rows(d.begin(), d.end() - 1);
  std::string rhs = rows.empty() ? "" : "sum(" + join(rows, ",") + ") ";
  return instance(
      "dG[" + d[r - 1] + "] = " + rhs + ref("dY", d) + " * " + s.xc + " * rsqrt(" + s.var_eps +
          ") ; nosplit(" + d[r - 1] + ")",
      {"X", "dY"},
      {{"invD", 1.0 / static_cast<double>(in[0].shape.back())}, {"eps", a.get_float("eps", 1e-5)}});
}

// Batch-norm gradient ops name their inputs with one letter each: X, M, V, G, D (dY), v (dV) and
// m (dM). X and dY are X-shaped, the others [C].
std::string bn_input_name(char letter) {
  switch (letter) {
  case 'D':
    return "dY";
  case 'v':
    return "dV";
  case 'm':
    return "dM";
  default:
    return std::string(1, letter);
  }
}

Status bn_shapes(std::string const& op, std::span<ir::TensorType const> in,
                 std::string const& letters) {
  ir::Shape const& x = in[0].shape;
  for (std::size_t i = 1; i < in.size(); ++i) {
    std::string name = bn_input_name(letters[i]);
    if (letters[i] == 'X' || letters[i] == 'D') {
      CLEAVE_CHECK_OK(expect_shape(op, name, in[i], x, bn_input_name(letters[0])));
    } else if (in[i].shape != ir::Shape{x[1]}) {
      return shape_error(op, name + " must be [" + std::to_string(x[1]) + "] (the channels of " +
                                 bn_input_name(letters[0]) + "), got " +
                                 ir::shape_to_string(in[i].shape));
    }
  }
  return Status::ok();
}

// One batch-norm gradient op with inputs `letters` (see bn_input_name). `channel`: the output is
// [C], `body` summed over every other dimension; else it is X-shaped. In `body`, '@' is the read of
// the first input at the op's point, '$' dY's.
Expected<OpInstance> bn_op(std::string const& op, std::string const& letters, bool channel,
                           std::string const& out, std::string const& body, ir::Attrs const& a,
                           std::span<ir::TensorType const> in) {
  CLEAVE_TRY(BnDims b, bn_dims(op, bn_input_name(letters[0]), in[0]));
  CLEAVE_CHECK_OK(bn_shapes(op, in, letters));
  std::vector<std::string> inputs;
  for (char c : letters)
    inputs.push_back(bn_input_name(c));
  std::string expr;
  for (char c : body)
    expr += c == '@' ? ref(inputs[0], b.d) : c == '$' ? ref("dY", b.d) : std::string(1, c);
  tdl::Params p = {{"inv", b.inv_count}};
  p["eps"] = a.get_float("eps", 1e-5);
  OpInstance inst =
      instance(channel ? out + "[c] = sum(" + b.others + ") " + expr : ref(out, b.d) + " = " + expr,
               inputs, std::move(p));
  if (!channel) {
    inst.extents = b.extents;  // an X-shaped output may read nothing X-shaped (bn_mean_grad_input)
    inst.output = in[0];
  }
  return inst;
}

Expected<OpInstance> cross_entropy_grad(ir::Attrs const&, std::span<ir::TensorType const> in) {
  std::string const op = "cross_entropy_grad";
  CLEAVE_CHECK_OK(expect_rank(op, "X", in[0], 2, 2));
  if (in[1].shape != ir::Shape{in[0].shape[0]} || ir::is_floating(in[1].dtype))
    return shape_error(op, "labels T must be an int32/int64 [" + std::to_string(in[0].shape[0]) +
                               "] tensor (one class per row of X), got " +
                               ir::type_to_string(in[1]));
  CLEAVE_CHECK_OK(expect_rank(op, "dL", in[2], 0, 0));
  std::string row_max = "max(k) X[b,k]";
  return instance("dX[b,c] = (exp(X[b,c] - " + row_max + ") / (sum(j) exp(X[b,j] - " + row_max +
                      ")) - (c == T[b])) * dL[] * invB ; nosplit(c)",
                  {"X", "T", "dL"}, {{"invB", 1.0 / static_cast<double>(in[0].shape[0])}});
}

Expected<OpInstance> embedding_grad(ir::Attrs const& a, std::span<ir::TensorType const> in) {
  std::string const op = "embedding_grad";
  if (ir::is_floating(in[0].dtype))
    return shape_error(op, "indices I must be int32 or int64, got " + ir::type_to_string(in[0]));
  std::int64_t vocab = a.get_int("vocab", 0);
  if (vocab < 1)
    return Error(ErrorCode::invalid_argument,
                 op + ": vocab must be positive (W's rows), got " + std::to_string(vocab));
  auto const& ids = in[0].shape;
  CLEAVE_CHECK_OK(expect_rank(op, "dY", in[1], ids.size() + 1, ids.size() + 1));
  ir::Shape lead(in[1].shape.begin(), in[1].shape.end() - 1);
  if (lead != ids)
    return shape_error(op, "dY " + ir::shape_to_string(in[1].shape) + " must be I's shape " +
                               ir::shape_to_string(ids) + " followed by the embedding width");
  auto d = dim_vars(ids.size());
  auto dy = d;
  dy.push_back("h");
  std::string rhs = d.empty() ? "" : "sum(" + join(d, ",") + ") ";
  OpInstance inst = instance("dW[v:V,h] = " + rhs + "(" + ref("I", d) + " == v) * " + ref("dY", dy),
                             {"I", "dY"}, {{"V", static_cast<double>(vocab)}});
  inst.output = ir::TensorType{{vocab, in[1].shape.back()}, in[1].dtype};
  return inst;
}

// dY placed where slice read it: dX[.., x, ..] = dY[.., (x - start) / step, ..] where the division
// is exact, 0 elsewhere (reads outside dY give 0).
Expected<OpInstance> slice_grad(OpRegistry const& r, ir::Attrs const& a,
                                std::span<ir::TensorType const> in) {
  std::string const op = "slice_grad";
  CLEAVE_TRY(ir::Shape x, shape_attr(op, a, "input_shape", -1));
  CLEAVE_TRY(ir::TensorType y, forward_output(r, op, "slice", a, {{x, in[0].dtype}}));
  CLEAVE_CHECK_OK(expect_shape(op, "dY", in[0], y.shape, "slice of X " + ir::shape_to_string(x)));
  CLEAVE_TRY(auto axes, slice_axes(op, a, x));
  std::map<std::size_t, std::pair<std::int64_t, std::int64_t>> sliced;  // axis -> (start, step)
  for (auto const& s : axes)
    sliced[s.axis] = {s.start, s.step};
  auto d = dim_vars(x.size());
  auto idx = d;
  std::string hits;
  OpInstance inst;
  for (auto const& [ax, start_step] : sliced) {
    auto [start, step] = start_step;
    std::string shifted = start == 0 ? d[ax] : d[ax] + "-" + std::to_string(start);
    idx[ax] = step == 1 ? shifted : "(" + shifted + ")/" + std::to_string(step);
    if (step != 1) hits += " * ((" + shifted + ") % " + std::to_string(step) + " == 0)";
    inst.extents[d[ax]] = x[ax];
  }
  inst.tdl = ref("dX", d) + " = " + ref("dY", idx) + hits;
  inst.input_names = {"dY"};
  inst.output = ir::TensorType{x, in[0].dtype};
  return inst;
}

ir::TensorType i64(ir::Shape shape) {
  return {std::move(shape), ir::DType::int64};
}

OpSchema pointwise_schema(std::string name, std::string summary, std::string first,
                          std::string body) {
  return fixed_schema(name, std::move(summary), {}, {f32({8, 64}), f32({8, 64})}, {},
                      [name, first, body](ir::Attrs const&, std::span<ir::TensorType const> in) {
                        return pointwise(name, first, body, in);
                      });
}

}  // namespace

void add_pointwise_gradient_ops(OpRegistry& r) {
  OpRegistry const* reg = &r;  // gradient ops check their shapes against their forward ops
  must_add(r, pointwise_schema("relu_grad", "dX = dY where Y > 0, else 0, Y = relu(X)", "Y",
                               "select(@ > 0, $, 0)"));
  must_add(r, fixed_schema("gelu_grad", "dX = dY * gelu'(X)", forward_attrs(r, "gelu"),
                           {f32({8, 64}), f32({8, 64})}, {}, gelu_grad));
  must_add(r, fixed_schema("clip_grad", "dX = dY where min < X < max, else 0",
                           forward_attrs(r, "clip"), {f32({8, 64}), f32({8, 64})}, {}, clip_grad));
  // d/dx x*relu6(x+3)/6 = 0 below -3, 1 above 3, (2x + 3)/6 between (as PyTorch's backward).
  must_add(r, pointwise_schema("hardswish_grad", "dX = dY * hardswish'(X)", "X",
                               "$ * select(@ < -3, 0, select(@ > 3, 1, (2 * @ + 3) * "
                               "0.16666666666666666))"));
  must_add(r, fixed_schema("hardsigmoid_grad", "dX = dY * alpha where 0 < alpha * X + beta < 1",
                           forward_attrs(r, "hardsigmoid"), {f32({8, 64}), f32({8, 64})}, {},
                           hardsigmoid_grad));
  must_add(
      r, pointwise_schema("tanh_grad", "dX = dY * (1 - Y*Y), Y = tanh(X)", "Y", "$ * (1 - @ * @)"));
  must_add(r, pointwise_schema("sigmoid_grad", "dX = dY * Y * (1 - Y), Y = sigmoid(X)", "Y",
                               "$ * @ * (1 - @)"));
  must_add(r, fixed_schema("sum_to_shape",
                           "X summed to a shape it broadcasts from (the gradient of broadcasting)",
                           {required_ints_attr("shape", "the shape to sum to")}, {f32({8, 16, 32})},
                           ir::Attrs{{"shape", std::vector<std::int64_t>{1, 32}}}, sum_to_shape));
  must_add(r, fixed_schema("div_grad_rhs", "dB = -dY * A / (B*B) at the broadcast shape", {},
                           {f32({8, 16, 32}), f32({32}), f32({8, 16, 32})}, {},
                           [reg](ir::Attrs const& a, std::span<ir::TensorType const> in) {
                             return div_grad_rhs(*reg, a, in);
                           }));
  must_add(r, fixed_schema("softmax_grad", "dX = Y * (dY - sum(dY * Y)) along axis",
                           forward_attrs(r, "softmax"), {f32({8, 4, 16}), f32({8, 4, 16})}, {},
                           softmax_grad));
  must_add(r, fixed_schema("layer_norm_grad_input", "gradient of layer_norm with respect to X",
                           forward_attrs(r, "layer_norm"),
                           {f32({8, 16, 64}), f32({64}), f32({8, 16, 64})}, {},
                           layer_norm_grad_input));
  must_add(r, fixed_schema("layer_norm_grad_gamma", "dG = sum over rows of dY * xhat",
                           forward_attrs(r, "layer_norm"), {f32({8, 16, 64}), f32({8, 16, 64})}, {},
                           layer_norm_grad_gamma));

  auto eps = forward_attrs(r, "bn_apply");
  auto x = f32({8, 16, 8, 8});
  auto c = f32({16});
  struct Bn {
    char const* name;
    char const* summary;
    char const* letters;  // the inputs, see bn_input_name
    bool channel;
    char const* out;
    char const* body;
  };
  static const Bn bn[] = {
      {"bn_apply_grad_input", "dX = dY * G * rsqrt(V + eps) (bn_apply's direct term)", "XMVGD",
       false, "dX", "$ * G[c] * rsqrt(V[c] + eps)"},
      {"bn_apply_grad_mean", "dM[c] = -sum dY * G * rsqrt(V + eps)", "XMVGD", true, "dM",
       "$ * G[c] * -rsqrt(V[c] + eps)"},
      {"bn_apply_grad_var", "dV[c] = sum dY * G * (X - M) * -0.5 * (V + eps)^-1.5", "XMVGD", true,
       "dV", "$ * G[c] * (@ - M[c]) * -0.5 * pow(V[c] + eps, -1.5)"},
      {"bn_apply_grad_gamma", "dG[c] = sum dY * (X - M) * rsqrt(V + eps)", "XMVD", true, "dG",
       "$ * (@ - M[c]) * rsqrt(V[c] + eps)"},
      {"bn_var_grad_input", "dX = dV[c] * 2 * (X - M) / count", "XMv", false, "dX",
       "dV[c] * 2 * (@ - M[c]) * inv"},
      {"bn_var_grad_mean", "dM[c] = -2 / count * sum (X - M) * dV[c]", "XMv", true, "dM",
       "(@ - M[c]) * dV[c] * -2 * inv"},
      {"bn_mean_grad_input", "dX = dM[c] / count (X gives the shape)", "Xm", false, "dX",
       "dM[c] * inv"},
  };
  for (Bn const& op : bn) {
    std::vector<ir::TensorType> example;
    for (char k : std::string(op.letters))
      example.push_back(k == 'X' || k == 'D' ? x : c);
    std::string name = op.name;
    bool uses_eps = name.starts_with("bn_apply");
    must_add(r, fixed_schema(name, op.summary, uses_eps ? eps : std::vector<AttrSpec>{}, example,
                             {}, [op](ir::Attrs const& a, std::span<ir::TensorType const> in) {
                               return bn_op(op.name, op.letters, op.channel, op.out, op.body, a,
                                            in);
                             }));
  }
  must_add(r, fixed_schema("bn_channel_sum", "dB[c] = sum of dY over every dimension but 1", {},
                           {x}, {}, [](ir::Attrs const& a, std::span<ir::TensorType const> in) {
                             return bn_op("bn_channel_sum", "D", true, "dB", "$", a, in);
                           }));
  must_add(r, fixed_schema("cross_entropy_grad", "dX = (softmax(X) - onehot(T)) * dL / B", {},
                           {f32({8, 10}), i64({8}), f32({})}, {}, cross_entropy_grad));
  must_add(r,
           fixed_schema("embedding_grad", "dW[v,h] = sum over positions s of (I[s]==v) * dY[s,h]",
                        {{"vocab", AttrKind::integer, std::nullopt, "W's rows"}},
                        {i64({8, 128}), f32({8, 128, 64})},
                        ir::Attrs{{"vocab", std::int64_t{1000}}}, embedding_grad));
  must_add(r,
           fixed_schema("slice_grad", "dX = dY where slice read X, 0 elsewhere",
                        forward_attrs(r, "slice", {required_ints_attr("input_shape", "X's shape")}),
                        {f32({8, 32})},
                        ir::Attrs{{"starts", std::vector<std::int64_t>{16}},
                                  {"ends", std::vector<std::int64_t>{48}},
                                  {"axes", std::vector<std::int64_t>{1}},
                                  {"input_shape", std::vector<std::int64_t>{8, 64}}},
                        [reg](ir::Attrs const& a, std::span<ir::TensorType const> in) {
                          return slice_grad(*reg, a, in);
                        }));
}

}  // namespace cleave::ops
