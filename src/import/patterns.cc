// Decomposed patterns that exporters emit for ops ONNX (before opset 20) or the model lacks, fused
// back into cleave's ops so that they are planned and costed as one op:
//   GELU:       Div(x, sqrt 2) -> Erf -> Add(1) -> Mul(x) -> Mul(0.5)       => gelu(x)
//   tanh GELU:  Mul(x, x) -> Mul(x) -> Mul(0.044715) -> Add(x) -> Mul(sqrt(2/pi)) -> Tanh -> Add(1)
//               -> Mul(x) -> Mul(0.5)             => gelu(x, approximate="tanh") (PyTorch 1.13)
//   layer norm: ReduceMean(x) -> Sub(x, .) -> Pow(2) -> ReduceMean -> Add(eps) -> Sqrt -> Div
//               [-> Mul(gamma) -> Add(beta)]                                => layer_norm(x, g, b)
// A pattern is matched forward from its first node; its other nodes are then skipped.
#include <cmath>

#include "import/converter.h"
#include "import/onnx_attrs.h"

namespace cleave::importer {

namespace {

// The known value of a scalar: a folded constant or a Constant node not yet reached.
std::optional<double> scalar_of(Converter& c, std::string const& name) {
  if (auto const* v = c.value(name); v && v->kind == Value::Kind::constant)
    return v->constant->size() == 1 ? std::optional(v->constant->values[0]) : std::nullopt;
  auto const* p = c.producer(name);
  if (!p || p->op_type() != "Constant") return std::nullopt;
  if (auto const* a = find_attr(*p, "value")) {
    auto t = read_tensor(a->t());
    if (t && t->size() == 1) return t->values[0];
  }
  if (auto const* f = find_attr(*p, "value_float")) return static_cast<double>(f->f());
  return std::nullopt;
}

// The one consumer of `value` (nullptr if it has none, several, or is a graph output).
onnx::NodeProto const* only_consumer(Converter& c, std::string const& value, char const* op_type) {
  auto const& users = c.consumers(value);
  if (users.size() != 1 || users[0]->op_type() != op_type) return nullptr;
  return users[0];
}

// The input of binary node n that is not `known`, if the other one is.
std::optional<std::string> other_input(onnx::NodeProto const& n, std::string const& known) {
  if (n.input_size() != 2) return std::nullopt;
  if (n.input(0) == known) return n.input(1);
  if (n.input(1) == known) return n.input(0);
  return std::nullopt;
}

bool near(std::optional<double> v, double want) {
  return v && std::abs(*v - want) < 1e-4 * std::max(1.0, std::abs(want));
}

Expected<bool> gelu(Converter& c, onnx::NodeProto const& div) {
  if (div.input_size() != 2) return false;
  auto k = scalar_of(c, div.input(1));
  bool is_div = div.op_type() == "Div";
  if (!(is_div ? near(k, std::sqrt(2.0)) : near(k, std::sqrt(0.5)))) return false;
  std::string const& x = div.input(0);
  auto const* erf = only_consumer(c, div.output(0), "Erf");
  if (!erf) return false;
  auto const* add = only_consumer(c, erf->output(0), "Add");
  if (!add) return false;
  auto one = other_input(*add, erf->output(0));
  if (!one || !near(scalar_of(c, *one), 1.0)) return false;
  auto const* mul = only_consumer(c, add->output(0), "Mul");
  if (!mul || other_input(*mul, add->output(0)) != x) return false;
  auto const* half = only_consumer(c, mul->output(0), "Mul");
  if (!half) return false;
  auto h = other_input(*half, mul->output(0));
  if (!h || !near(scalar_of(c, *h), 0.5)) return false;
  auto const* xv = c.value(x);
  if (!xv) return false;
  CLEAVE_TRY(ir::TensorId xt, c.tensor_of(*xv));
  c.set_tensor(half->output(0), c.b().op("gelu", {xt}, {}, c.claim(half->output(0))));
  for (auto const* n : {erf, add, mul, half})
    c.skip(n);
  return true;
}

// The consumer of `value` of type op_type whose other input is `other` (a value name) or, when
// `scalar` is set, a constant near it.
onnx::NodeProto const* next_binary(Converter& c, std::string const& value, char const* op_type,
                                   std::string const& other, std::optional<double> scalar = {}) {
  auto const* n = only_consumer(c, value, op_type);
  if (!n) return nullptr;
  auto in = other_input(*n, value);
  if (!in) return nullptr;
  bool ok = scalar ? near(scalar_of(c, *in), *scalar) : *in == other;
  return ok ? n : nullptr;
}

Expected<bool> gelu_tanh(Converter& c, onnx::NodeProto const& square) {
  if (square.input_size() != 2 || square.input(0) != square.input(1)) return false;
  std::string const& x = square.input(0);
  std::vector<onnx::NodeProto const*> chain;
  auto const* cube = next_binary(c, square.output(0), "Mul", x);
  if (cube) chain.push_back(cube);
  auto const* coef = cube ? next_binary(c, cube->output(0), "Mul", "", 0.044715) : nullptr;
  if (coef) chain.push_back(coef);
  auto const* inner = coef ? next_binary(c, coef->output(0), "Add", x) : nullptr;
  if (inner) chain.push_back(inner);
  auto const* scaled =
      inner ? next_binary(c, inner->output(0), "Mul", "", std::sqrt(2.0 / M_PI)) : nullptr;
  if (scaled) chain.push_back(scaled);
  auto const* tanh = scaled ? only_consumer(c, scaled->output(0), "Tanh") : nullptr;
  if (tanh) chain.push_back(tanh);
  auto const* plus1 = tanh ? next_binary(c, tanh->output(0), "Add", "", 1.0) : nullptr;
  if (plus1) chain.push_back(plus1);
  auto const* times_x = plus1 ? next_binary(c, plus1->output(0), "Mul", x) : nullptr;
  if (times_x) chain.push_back(times_x);
  auto const* half = times_x ? next_binary(c, times_x->output(0), "Mul", "", 0.5) : nullptr;
  auto const* xv = c.value(x);
  if (!half || !xv) return false;
  chain.push_back(half);
  CLEAVE_TRY(ir::TensorId xt, c.tensor_of(*xv));
  c.set_tensor(half->output(0), c.b().op("gelu", {xt}, {{"approximate", std::string("tanh")}},
                                         c.claim(half->output(0))));
  for (auto const* n : chain)
    c.skip(n);
  return true;
}

bool last_axis_mean(Converter& c, onnx::NodeProto const& n, std::size_t rank) {
  if (n.op_type() != "ReduceMean" || attr_int(n, "keepdims", 1) != 1) return false;
  auto axes = attr_ints(n, "axes");
  if (!axes && c.has(n, 1)) {
    auto const* k = c.constant(n, 1);
    if (k) axes = k->ints();
  }
  auto r = static_cast<std::int64_t>(rank);
  return axes && axes->size() == 1 && ((*axes)[0] == -1 || (*axes)[0] == r - 1);
}

Expected<bool> layer_norm(Converter& c, onnx::NodeProto const& mean) {
  auto const* xv = c.value(mean.input(0));
  if (!xv || xv->kind != Value::Kind::tensor) return false;
  ir::Shape shape = c.b().shape_of(xv->id);
  if (shape.empty() || !last_axis_mean(c, mean, shape.size())) return false;
  std::string const& x = mean.input(0);
  auto const* sub = only_consumer(c, mean.output(0), "Sub");
  if (!sub || sub->input(0) != x || sub->input(1) != mean.output(0)) return false;
  auto const& users = c.consumers(sub->output(0));
  if (users.size() != 2) return false;
  onnx::NodeProto const* pow = users[0]->op_type() == "Pow" ? users[0] : users[1];
  onnx::NodeProto const* div = users[0]->op_type() == "Div" ? users[0] : users[1];
  if (pow->op_type() != "Pow" || div->op_type() != "Div" || pow->input(0) != sub->output(0) ||
      !near(scalar_of(c, pow->input(1)), 2.0) || div->input(0) != sub->output(0))
    return false;
  auto const* var = only_consumer(c, pow->output(0), "ReduceMean");
  if (!var || !last_axis_mean(c, *var, shape.size())) return false;
  auto const* add = only_consumer(c, var->output(0), "Add");
  if (!add) return false;
  auto eps_name = other_input(*add, var->output(0));
  auto eps = eps_name ? scalar_of(c, *eps_name) : std::nullopt;
  if (!eps) return false;
  auto const* sqrt = only_consumer(c, add->output(0), "Sqrt");
  if (!sqrt || only_consumer(c, sqrt->output(0), "Div") != div || div->input(1) != sqrt->output(0))
    return false;
  std::vector<onnx::NodeProto const*> done = {sub, pow, var, add, sqrt, div};
  std::string out = div->output(0);
  // The affine part, when its gamma and beta are parameters of the model's last-axis size.
  auto affine = [&](onnx::NodeProto const* n, std::string const& from) -> Value const* {
    if (!n) return nullptr;
    auto other = other_input(*n, from);
    auto const* v = other ? c.value(*other) : nullptr;
    if (!v || v->kind != Value::Kind::initializer || v->transposed || v->init->dims_size() != 1 ||
        v->init->dims(0) != shape.back())
      return nullptr;
    return v;
  };
  auto const* mul = only_consumer(c, out, "Mul");
  Value const* gamma = affine(mul, out);
  Value const* beta = nullptr;
  onnx::NodeProto const* bias = nullptr;
  if (gamma) {
    done.push_back(mul);
    out = mul->output(0);
    bias = only_consumer(c, out, "Add");
    beta = affine(bias, out);
    if (beta) {
      done.push_back(bias);
      out = bias->output(0);
    }
  }
  std::string name = c.claim(out);
  ir::DType dt = c.b().type_of(xv->id).dtype;
  ir::TensorId g, b;
  if (gamma) {
    CLEAVE_TRY(g, c.tensor_of(*gamma));
  } else {
    g = c.b().input(c.fresh(name + ".unit_gamma"), {shape.back()}, dt);
  }
  if (beta) {
    CLEAVE_TRY(b, c.tensor_of(*beta));
  } else {
    b = c.b().input(c.fresh(name + ".zero_beta"), {shape.back()}, dt);
  }
  c.set_tensor(out, c.b().op("layer_norm", {xv->id, g, b}, {{"eps", *eps}}, name));
  for (auto const* n : done)
    c.skip(n);
  return true;
}

}  // namespace

Expected<bool> convert_pattern(Converter& c, onnx::NodeProto const& n) {
  if (n.op_type() == "Div" || n.op_type() == "Mul") {
    CLEAVE_TRY(bool fused, gelu(c, n));
    if (fused || n.op_type() == "Div") return fused;
    return gelu_tanh(c, n);
  }
  if (n.op_type() == "ReduceMean") return layer_norm(c, n);
  return false;
}

}  // namespace cleave::importer
