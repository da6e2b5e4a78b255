// Gradient rules of matmul, batch_matmul, linear, einsum, conv2d, conv3d and pooling.
#include "autodiff/gradient_rules.h"

namespace cleave::autodiff {

using Ints = std::vector<std::int64_t>;

ir::TensorId GradContext::emit(std::string const& type, std::vector<ir::TensorId> inputs,
                               ir::Attrs attrs, std::string const& suffix) {
  return b_.op(type, std::move(inputs), std::move(attrs), op_.name + ".grad." + suffix,
               ir::TensorRole::gradient, forward_);
}

GradientRules GradientRules::with_builtins() {
  GradientRules rules;
  add_dense_rules(rules);
  add_pointwise_rules(rules);
  return rules;
}

void GradientRules::add(std::string type, GradientRule rule) {
  rules_[std::move(type)] = std::move(rule);
}

GradientRule const* GradientRules::find(std::string_view type) const {
  auto it = rules_.find(type);
  return it == rules_.end() ? nullptr : &it->second;
}

namespace {

std::int64_t flag(bool b) {
  return b ? 1 : 0;
}

// Y = op(A) op(B): d op(A) = dY op(B)^T and d op(B) = op(A)^T dY, laid out as A and B are.
void matmul_rule(GradContext& c, std::vector<ir::TensorId>& g, std::string const& type) {
  bool ta = c.attrs().get_int("transpose_a", 0) != 0;
  bool tb = c.attrs().get_int("transpose_b", 0) != 0;
  auto a = c.input(0), b = c.input(1), dy = c.grad_output();
  bool shared_b = type == "batch_matmul" && c.shape(b).size() == 2;
  if (c.wanted(0)) {
    if (!ta) {
      g[0] = c.emit(type, {dy, b}, {{"transpose_b", flag(!tb)}}, "A");
    } else if (shared_b) {
      c.builder().fail(Error(ErrorCode::unsupported,
                             "op '" + c.op().name +
                                 "': the gradient of batch_matmul with transpose_a and a shared "
                                 "2-D B is not supported; transpose A before the op"));
    } else {
      g[0] = c.emit(type, {b, dy}, {{"transpose_a", flag(tb)}, {"transpose_b", flag(true)}}, "A");
    }
  }
  if (c.wanted(1)) {
    if (shared_b) {
      g[1] = c.emit("batch_matmul_grad_shared", {a, dy},
                    {{"transpose_a", flag(ta)}, {"transpose_b", flag(tb)}}, "B");
    } else if (!tb) {
      g[1] = c.emit(type, {a, dy}, {{"transpose_a", flag(!ta)}}, "B");
    } else {
      g[1] = c.emit(type, {dy, a}, {{"transpose_a", flag(true)}, {"transpose_b", flag(ta)}}, "B");
    }
  }
}

// Attributes of the forward op that its gradient ops share, plus `extra`.
ir::Attrs copy_attrs(GradContext const& c, std::initializer_list<char const*> names) {
  ir::Attrs out;
  for (char const* n : names)
    if (auto const* v = c.attrs().find(n)) out.set(n, *v);
  return out;
}

ir::Attrs with(ir::Attrs a, std::string name, ir::AttrValue v) {
  a.set(std::move(name), std::move(v));
  return a;
}

// Y = einsum("a,b->y", X0, X1): dX0 = einsum("y,b->a", dY, X1), X0's shape giving the extents
// of indices only X0 has (summed inside it: each of its elements gets dY).
void einsum_rule(GradContext& c, std::vector<ir::TensorId>& g) {
  std::string eq = c.attrs().get_string("equation", "");
  std::erase(eq, ' ');
  auto arrow = eq.find("->");
  if (arrow == std::string::npos) return;  // the forward op's binding already reported it
  std::string out = eq.substr(arrow + 2), lhs = eq.substr(0, arrow);
  auto comma = lhs.find(',');
  std::vector<std::string> terms{lhs.substr(0, comma)};
  if (comma != std::string::npos) terms.push_back(lhs.substr(comma + 1));
  for (std::size_t i = 0; i < terms.size() && i < c.num_inputs(); ++i) {
    if (!c.wanted(i)) continue;
    std::vector<ir::TensorId> in{c.grad_output()};
    std::string lhs_i = out;
    if (terms.size() == 2) {
      in.push_back(c.input(1 - i));
      lhs_i += "," + terms[1 - i];
    }
    g[i] = c.emit("einsum", in,
                  {{"equation", lhs_i + "->" + terms[i]}, {"shape", c.shape(c.input(i))}},
                  "X" + std::to_string(i));
  }
}

}  // namespace

void add_dense_rules(GradientRules& rules) {
  rules.add("einsum", einsum_rule);
  rules.add("matmul", [](GradContext& c, auto& g) { matmul_rule(c, g, "matmul"); });
  rules.add("batch_matmul", [](GradContext& c, auto& g) { matmul_rule(c, g, "batch_matmul"); });
  rules.add("linear", [](GradContext& c, auto& g) {
    if (c.wanted(0)) g[0] = c.emit("linear_grad_input", {c.grad_output(), c.input(1)}, {}, "X");
    if (c.wanted(1)) g[1] = c.emit("linear_grad_weight", {c.grad_output(), c.input(0)}, {}, "W");
  });
  for (std::string type : {"conv2d", "conv3d"})
    rules.add(type, [type](GradContext& c, auto& g) {
      ir::Attrs a = copy_attrs(c, {"stride", "padding", "dilation", "groups"});
      ir::Shape const w = c.shape(c.input(1));  // a copy: emit may move the shapes
      if (c.wanted(0))
        g[0] = c.emit(type + "_grad_input", {c.grad_output(), c.input(1)},
                      with(a, "input_shape", c.shape(c.input(0))), "X");
      if (c.wanted(1))
        g[1] = c.emit(type + "_grad_weight", {c.grad_output(), c.input(0)},
                      with(a, "kernel", Ints(w.begin() + 2, w.end())), "W");
    });
  rules.add("max_pool2d", [](GradContext& c, auto& g) {
    if (c.wanted(0))
      g[0] = c.emit("max_pool2d_grad", {c.input(0), c.output(), c.grad_output()},
                    copy_attrs(c, {"kernel", "stride", "padding", "dilation", "ceil_mode"}), "X");
  });
  rules.add("avg_pool2d", [](GradContext& c, auto& g) {
    if (c.wanted(0))
      g[0] = c.emit(
          "avg_pool2d_grad", {c.grad_output()},
          with(copy_attrs(c, {"kernel", "stride", "padding", "ceil_mode", "count_include_pad"}),
               "input_shape", c.shape(c.input(0))),
          "X");
  });
  rules.add("global_avg_pool", [](GradContext& c, auto& g) {
    if (c.wanted(0))
      g[0] = c.emit("global_avg_pool_grad", {c.grad_output()},
                    {{"input_shape", c.shape(c.input(0))}}, "X");
  });
  rules.add("global_max_pool", [](GradContext& c, auto& g) {
    if (c.wanted(0))
      g[0] = c.emit("global_max_pool_grad", {c.input(0), c.output(), c.grad_output()}, {}, "X");
  });
}

}  // namespace cleave::autodiff
