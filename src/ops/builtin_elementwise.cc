// Element-wise ops: activations, arithmetic with NumPy broadcasting, scale, cast and dropout.
#include <limits>

#include "ops/builtin_util.h"
#include "support/assert.h"

namespace cleave::ops {
namespace {

using namespace detail;

// Y[d..] = body, where each '@' in body stands for X[d..].
OpInstance unary(std::string const& body, ir::TensorType const& x, tdl::Params params = {}) {
  auto d = dim_vars(x.shape.size());
  std::string read = ref("X", d);
  std::string expr;
  for (char c : body)
    expr += c == '@' ? read : std::string(1, c);
  return instance(ref("Y", d) + " = " + expr, {"X"}, std::move(params));
}

// NumPy broadcasting: shapes align on the right; a dimension of size 1 stretches.
Expected<OpInstance> broadcast_binary(std::string const& op, char sym,
                                      std::span<ir::TensorType const> in) {
  auto const& a = in[0].shape;
  auto const& b = in[1].shape;
  std::size_t rank = std::max(a.size(), b.size());
  auto d = dim_vars(rank);
  ir::Shape out(rank);
  auto index_of = [&](ir::Shape const& s) {
    std::vector<std::string> idx;
    for (std::size_t j = 0; j < s.size(); ++j) {
      std::size_t od = rank - s.size() + j;
      idx.push_back(s[j] == 1 && out[od] != 1 ? "0" : d[od]);
    }
    return idx;
  };
  for (std::size_t od = 0; od < rank; ++od) {
    std::int64_t da = od + a.size() >= rank ? a[od + a.size() - rank] : 1;
    std::int64_t db = od + b.size() >= rank ? b[od + b.size() - rank] : 1;
    if (da != db && da != 1 && db != 1)
      return shape_error(
          op, "cannot broadcast A " + ir::shape_to_string(a) + " with B " + ir::shape_to_string(b) +
                  ": dimension " +
                  std::to_string(static_cast<std::int64_t>(od) - static_cast<std::int64_t>(rank)) +
                  " is " + std::to_string(da) + " vs " + std::to_string(db));
    out[od] = std::max(da, db);
  }
  OpInstance inst = instance(ref("Y", d) + " = " + ref("A", index_of(a)) + " " + sym + " " +
                                 ref("B", index_of(b)),
                             {"A", "B"});
  inst.output = ir::TensorType{out, in[0].dtype};  // size-1 dims of both inputs give no extent
  return inst;
}

Expected<OpInstance> gelu(ir::Attrs const& a, std::span<ir::TensorType const> in) {
  std::string approx = a.get_string("approximate", "none");
  if (approx == "none") return unary("0.5 * @ * (1 + erf(@ * 0.7071067811865476))", in[0]);
  if (approx == "tanh")
    return unary("0.5 * @ * (1 + tanh(0.7978845608028654 * (@ + 0.044715 * @ * @ * @)))", in[0]);
  return Error(ErrorCode::invalid_argument,
               "gelu: approximate must be \"none\" or \"tanh\", got \"" + approx + "\"");
}

Expected<OpInstance> clip(ir::Attrs const& a, std::span<ir::TensorType const> in) {
  double lo = a.get_float("min", std::numeric_limits<float>::lowest());
  double hi = a.get_float("max", std::numeric_limits<float>::max());
  if (!(lo <= hi))
    return Error(ErrorCode::invalid_argument, "clip: min must not exceed max (got " +
                                                  std::to_string(lo) + " > " + std::to_string(hi) +
                                                  ")");
  return unary("min(max(@, lo), hi)", in[0], {{"lo", lo}, {"hi", hi}});
}

Expected<OpInstance> hardsigmoid(ir::Attrs const& a, std::span<ir::TensorType const> in) {
  return unary("max(min(alpha * @ + beta, 1), 0)", in[0],
               {{"alpha", a.get_float("alpha", 0.2)}, {"beta", a.get_float("beta", 0.5)}});
}

Expected<OpInstance> cast(ir::Attrs const& a, std::span<ir::TensorType const> in) {
  std::string name = a.get_string("dtype", "");
  auto dtype = ir::parse_dtype(name);
  if (!dtype)
    return Error(ErrorCode::invalid_argument,
                 "cast: dtype \"" + name + "\" is not one of fp32, fp16, bf16, int32, int64");
  OpInstance inst = unary("@", in[0]);
  inst.output = ir::TensorType{in[0].shape, *dtype};
  return inst;
}

Expected<OpInstance> dropout(ir::Attrs const& a, std::span<ir::TensorType const> in) {
  double p = a.get_float("p", 0.5);
  if (!(p >= 0 && p < 1)) return Error(ErrorCode::invalid_argument, "dropout: p must be in [0, 1)");
  if (in[1].shape != in[0].shape)
    return shape_error("dropout", "the mask M " + ir::shape_to_string(in[1].shape) +
                                      " must have the shape of X " +
                                      ir::shape_to_string(in[0].shape));
  auto d = dim_vars(in[0].shape.size());
  OpInstance inst = instance(ref("Y", d) + " = " + ref("X", d) + " * " + ref("M", d) + " * keep",
                             {"X", "M"}, {{"keep", 1.0 / (1.0 - p)}});
  inst.output = in[0];
  return inst;
}

OpSchema unary_schema(std::string name, std::string summary, std::string body) {
  return {name,
          std::move(summary),
          {},
          false,
          1,
          1,
          {f32({8, 64})},
          {},
          [body](ir::Attrs const&, std::span<ir::TensorType const> in) -> Expected<OpInstance> {
            return unary(body, in[0]);
          }};
}

OpSchema binary_schema(std::string name, char sym) {
  return {name,
          std::string("Y = A ") + sym + " B with NumPy broadcasting",
          {},
          false,
          2,
          2,
          {f32({8, 16, 32}), f32({32})},
          {},
          [name, sym](ir::Attrs const&, std::span<ir::TensorType const> in) {
            return broadcast_binary(name, sym, in);
          }};
}

}  // namespace

void add_elementwise_ops(OpRegistry& r) {
  auto must = [](Status s) { CLEAVE_ASSERT(s.is_ok(), "duplicate built-in op"); };
  must(r.add(unary_schema("relu", "Y = max(X, 0)", "relu(@)")));
  must(r.add(unary_schema("tanh", "Y = tanh(X)", "tanh(@)")));
  must(r.add(unary_schema("sigmoid", "Y = 1 / (1 + exp(-X))", "sigmoid(@)")));
  must(r.add({"gelu",
              "Y = X * Phi(X) (erf form, or its tanh approximation)",
              {string_attr("approximate", "none", "\"none\" (erf) or \"tanh\"")},
              false,
              1,
              1,
              {f32({8, 64})},
              {},
              gelu}));
  must(r.add({"clip",
              "Y = min(max(X, min), max) (ReLU6: min 0, max 6)",
              {real_attr("min", std::numeric_limits<float>::lowest(), "the lower bound"),
               real_attr("max", std::numeric_limits<float>::max(), "the upper bound")},
              false,
              1,
              1,
              {f32({8, 64})},
              ir::Attrs{{"min", 0.0}, {"max", 6.0}},
              clip}));
  must(r.add(unary_schema("hardswish", "Y = X * min(max(X + 3, 0), 6) / 6",
                          "@ * min(max(@ + 3, 0), 6) * 0.16666666666666666")));
  must(r.add({"hardsigmoid",
              "Y = max(min(alpha * X + beta, 1), 0)",
              {real_attr("alpha", 0.2, "the slope"), real_attr("beta", 0.5, "the offset")},
              false,
              1,
              1,
              {f32({8, 64})},
              ir::Attrs{{"alpha", 1.0 / 6}},
              hardsigmoid}));
  must(r.add(binary_schema("add", '+')));
  must(r.add(binary_schema("sub", '-')));
  must(r.add(binary_schema("mul", '*')));
  must(r.add(binary_schema("div", '/')));
  must(r.add({"scale",
              "Y = X * alpha",
              {real_attr("alpha", 1.0, "the factor")},
              false,
              1,
              1,
              {f32({8, 64})},
              ir::Attrs{{"alpha", 0.125}},
              [](ir::Attrs const& a, std::span<ir::TensorType const> in) -> Expected<OpInstance> {
                return unary("@ * alpha", in[0], {{"alpha", a.get_float("alpha", 1.0)}});
              }}));
  must(r.add({"cast",
              "Y = X converted to dtype",
              {{"dtype", AttrKind::string, std::nullopt, "fp32, fp16, bf16, int32 or int64"}},
              false,
              1,
              1,
              {f32({8, 64})},
              ir::Attrs{{"dtype", std::string("bf16")}},
              cast}));
  must(r.add({"dropout",
              "Y = X * M / (1 - p); M is the seeded 0/1 mask, an input",
              {real_attr("p", 0.5, "drop probability")},
              false,
              2,
              2,
              {f32({8, 64}), f32({8, 64})},
              {},
              dropout}));
}

}  // namespace cleave::ops
