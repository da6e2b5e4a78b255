// Gradient rules of element-wise, normalization, loss and layout ops.
#include <numeric>

#include "autodiff/gradient_rules.h"

namespace cleave::autodiff {
namespace {

using Ints = std::vector<std::int64_t>;

// Reduces a broadcast gradient to the shape of the input it flows to (NumPy broadcasting's
// inverse); the identity when the shapes already agree.
ir::TensorId to_shape(GradContext& c, ir::TensorId grad, ir::Shape const& shape,
                      std::string const& suffix) {
  if (c.shape(grad) == shape) return grad;
  return c.emit("sum_to_shape", {grad}, {{"shape", shape}}, suffix);
}

// The gradient op takes the forward op's attributes (gelu's approximate, clip's bounds).
void unary(GradientRules& rules, char const* type, char const* grad_type, bool from_output) {
  rules.add(type, [=](GradContext& c, auto& g) {
    if (!c.wanted(0)) return;
    g[0] =
        c.emit(grad_type, {from_output ? c.output() : c.input(0), c.grad_output()}, c.attrs(), "X");
  });
}

ir::Attrs copy(GradContext const& c, std::initializer_list<char const*> names) {
  ir::Attrs out;
  for (char const* n : names)
    if (auto const* v = c.attrs().find(n)) out.set(n, *v);
  return out;
}

void add_arithmetic(GradientRules& rules) {
  rules.add("add", [](GradContext& c, auto& g) {
    for (std::size_t i = 0; i < 2; ++i)
      if (c.wanted(i)) g[i] = to_shape(c, c.grad_output(), c.shape(c.input(i)), i ? "B" : "A");
  });
  rules.add("sub", [](GradContext& c, auto& g) {
    if (c.wanted(0)) g[0] = to_shape(c, c.grad_output(), c.shape(c.input(0)), "A");
    if (c.wanted(1)) {
      auto neg = c.emit("scale", {c.grad_output()}, {{"alpha", -1.0}}, "B_negated");
      g[1] = to_shape(c, neg, c.shape(c.input(1)), "B");
    }
  });
  rules.add("mul", [](GradContext& c, auto& g) {
    for (std::size_t i = 0; i < 2; ++i) {
      if (!c.wanted(i)) continue;
      std::string name = i ? "B" : "A";
      auto full = c.emit("mul", {c.grad_output(), c.input(1 - i)}, {}, name + "_full");
      g[i] = to_shape(c, full, c.shape(c.input(i)), name);
    }
  });
  rules.add("div", [](GradContext& c, auto& g) {
    if (c.wanted(0)) {
      auto full = c.emit("div", {c.grad_output(), c.input(1)}, {}, "A_full");
      g[0] = to_shape(c, full, c.shape(c.input(0)), "A");
    }
    if (c.wanted(1)) {
      auto full = c.emit("div_grad_rhs", {c.input(0), c.input(1), c.grad_output()}, {}, "B_full");
      g[1] = to_shape(c, full, c.shape(c.input(1)), "B");
    }
  });
  rules.add("scale", [](GradContext& c, auto& g) {
    if (c.wanted(0)) g[0] = c.emit("scale", {c.grad_output()}, copy(c, {"alpha"}), "X");
  });
  rules.add("cast", [](GradContext& c, auto& g) {
    if (!c.wanted(0)) return;
    std::string dtype(ir::dtype_name(c.builder().type_of(c.input(0)).dtype));
    g[0] = c.emit("cast", {c.grad_output()}, {{"dtype", dtype}}, "X");
  });
  rules.add("dropout", [](GradContext& c, auto& g) {
    if (c.wanted(0)) g[0] = c.emit("dropout", {c.grad_output(), c.input(1)}, copy(c, {"p"}), "X");
  });
}

void add_normalization(GradientRules& rules) {
  rules.add("softmax", [](GradContext& c, auto& g) {
    if (c.wanted(0))
      g[0] = c.emit("softmax_grad", {c.output(), c.grad_output()}, copy(c, {"axis"}), "X");
  });
  rules.add("layer_norm", [](GradContext& c, auto& g) {
    auto eps = copy(c, {"eps"});
    auto x = c.input(0), dy = c.grad_output();
    if (c.wanted(0)) g[0] = c.emit("layer_norm_grad_input", {x, c.input(1), dy}, eps, "X");
    if (c.wanted(1)) g[1] = c.emit("layer_norm_grad_gamma", {x, dy}, eps, "G");
    if (c.wanted(2)) g[2] = to_shape(c, dy, c.shape(c.input(2)), "B");
  });
  // Batch norm is three ops (bn_mean, bn_var, bn_apply); the gradients through the statistics
  // reach X by accumulation, as the statistics are ordinary tensors of the graph.
  rules.add("bn_apply", [](GradContext& c, auto& g) {
    auto eps = copy(c, {"eps"});
    auto x = c.input(0), m = c.input(1), v = c.input(2), gamma = c.input(3), dy = c.grad_output();
    if (c.wanted(0)) g[0] = c.emit("bn_apply_grad_input", {x, m, v, gamma, dy}, eps, "X");
    if (c.wanted(1)) g[1] = c.emit("bn_apply_grad_mean", {x, m, v, gamma, dy}, eps, "M");
    if (c.wanted(2)) g[2] = c.emit("bn_apply_grad_var", {x, m, v, gamma, dy}, eps, "V");
    if (c.wanted(3)) g[3] = c.emit("bn_apply_grad_gamma", {x, m, v, dy}, eps, "G");
    if (c.wanted(4)) g[4] = c.emit("bn_channel_sum", {dy}, {}, "B");
  });
  rules.add("bn_var", [](GradContext& c, auto& g) {
    auto x = c.input(0), m = c.input(1), dv = c.grad_output();
    if (c.wanted(0)) g[0] = c.emit("bn_var_grad_input", {x, m, dv}, {}, "X");
    if (c.wanted(1)) g[1] = c.emit("bn_var_grad_mean", {x, m, dv}, {}, "M");
  });
  rules.add("bn_mean", [](GradContext& c, auto& g) {
    if (c.wanted(0)) g[0] = c.emit("bn_mean_grad_input", {c.input(0), c.grad_output()}, {}, "X");
  });
  rules.add("cross_entropy", [](GradContext& c, auto& g) {
    if (c.wanted(0))
      g[0] = c.emit("cross_entropy_grad", {c.input(0), c.input(1), c.grad_output()}, {}, "X");
  });
}

void add_layout(GradientRules& rules) {
  rules.add("embedding", [](GradContext& c, auto& g) {
    if (c.wanted(0))
      g[0] = c.emit("embedding_grad", {c.input(1), c.grad_output()},
                    {{"vocab", c.shape(c.input(0))[0]}}, "W");
  });
  rules.add("concat", [](GradContext& c, auto& g) {
    auto rank = static_cast<std::int64_t>(c.shape(c.output()).size());
    std::int64_t axis = c.attrs().get_int("axis", 0);
    if (axis < 0) axis += rank;
    std::int64_t offset = 0;
    for (std::size_t i = 0; i < c.num_inputs(); ++i) {
      std::int64_t size = c.shape(c.input(i))[static_cast<std::size_t>(axis)];
      if (c.wanted(i))
        g[i] =
            c.emit("slice", {c.grad_output()},
                   {{"starts", Ints{offset}}, {"ends", Ints{offset + size}}, {"axes", Ints{axis}}},
                   "X" + std::to_string(i));
      offset += size;
    }
  });
  rules.add("slice", [](GradContext& c, auto& g) {
    if (!c.wanted(0)) return;
    ir::Attrs a = copy(c, {"starts", "ends", "axes", "steps"});
    a.set("input_shape", c.shape(c.input(0)));
    g[0] = c.emit("slice_grad", {c.grad_output()}, a, "X");
  });
  rules.add("pad", [](GradContext& c, auto& g) {
    if (!c.wanted(0)) return;
    auto const& x = c.shape(c.input(0));
    auto pads = c.attrs().get_ints("pads", {});
    Ints starts, ends, axes;
    for (std::size_t k = 0; k < x.size(); ++k) {
      starts.push_back(pads[k]);
      ends.push_back(pads[k] + x[k]);
      axes.push_back(static_cast<std::int64_t>(k));
    }
    g[0] = c.emit("slice", {c.grad_output()}, {{"starts", starts}, {"ends", ends}, {"axes", axes}},
                  "X");
  });
  rules.add("expand", [](GradContext& c, auto& g) {
    if (c.wanted(0)) g[0] = to_shape(c, c.grad_output(), c.shape(c.input(0)), "X");
  });
  rules.add("transpose", [](GradContext& c, auto& g) {
    if (!c.wanted(0)) return;
    std::size_t rank = c.shape(c.input(0)).size();
    Ints reverse(rank);
    std::iota(reverse.rbegin(), reverse.rend(), 0);
    Ints perm = c.attrs().get_ints("perm", reverse);
    Ints inverse(rank);
    for (std::size_t k = 0; k < rank; ++k)
      inverse[static_cast<std::size_t>(perm[k])] = static_cast<std::int64_t>(k);
    g[0] = c.emit("transpose", {c.grad_output()}, {{"perm", inverse}}, "X");
  });
  rules.add("reshape", [](GradContext& c, auto& g) {
    if (c.wanted(0))
      g[0] = c.emit("reshape", {c.grad_output()}, {{"shape", c.shape(c.input(0))}}, "X");
  });
}

// Imported ops without semantics (`opaque`, registered by import/opaque_op.h for --allow-opaque):
// the gradient of each input is another opaque op that reads the forward inputs and dY and has
// that input's shape, so the backward pass is planned (on the batch only) and costed by its bytes.
void add_opaque(GradientRules& rules) {
  rules.add("opaque", [](GradContext& c, auto& g) {
    std::vector<ir::TensorId> in;
    for (std::size_t i = 0; i < c.num_inputs(); ++i)
      in.push_back(c.input(i));
    in.push_back(c.grad_output());
    for (std::size_t i = 0; i < c.num_inputs(); ++i) {
      if (!c.wanted(i)) continue;
      auto const& t = c.builder().type_of(c.input(i));
      g[i] = c.emit("opaque", in,
                    {{"onnx_op", c.attrs().get_string("onnx_op", "?") + "_grad"},
                     {"shape", t.shape},
                     {"dtype", std::string(ir::dtype_name(t.dtype))}},
                    "X" + std::to_string(i));
    }
  });
}

}  // namespace

void add_pointwise_rules(GradientRules& rules) {
  // relu's gradient masks by its output (Y > 0 exactly where X > 0): the output is kept anyway
  // for the next layer's weight gradient, so the input (a batch norm's or residual add's output)
  // need not be. Reading X cost WResNet-152-10's Tofu plan 12 GiB of a 53 GiB peak.
  unary(rules, "relu", "relu_grad", /*from_output=*/true);
  unary(rules, "gelu", "gelu_grad", /*from_output=*/false);
  unary(rules, "tanh", "tanh_grad", /*from_output=*/true);
  unary(rules, "sigmoid", "sigmoid_grad", /*from_output=*/true);
  unary(rules, "hardswish", "hardswish_grad", /*from_output=*/false);
  unary(rules, "clip", "clip_grad", /*from_output=*/false);
  unary(rules, "hardsigmoid", "hardsigmoid_grad", /*from_output=*/false);
  add_arithmetic(rules);
  add_normalization(rules);
  add_layout(rules);
  add_opaque(rules);
}

}  // namespace cleave::autodiff
