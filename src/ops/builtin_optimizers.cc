// Optimizer ops (SGD with momentum, Adam) and fill, the op with no inputs that creates constant
// tensors (zero gradients, initial optimizer state). Each is one element-wise TDL statement, so a
// plan can split optimizer updates like any other op.
#include <algorithm>
#include <cctype>
#include <cmath>

#include "ops/builtin_gradient_util.h"

namespace cleave::ops {
namespace {

using namespace detail;

Expected<OpInstance> fill(ir::Attrs const& a, std::span<ir::TensorType const>) {
  std::string const op = "fill";
  ir::Shape shape = a.get_ints("shape", {});
  if (std::any_of(shape.begin(), shape.end(), [](std::int64_t d) { return d < 1; }))
    return Error(ErrorCode::invalid_argument,
                 op + ": shape must have positive dimensions, got " + ir::shape_to_string(shape));
  std::string name = a.get_string("dtype", "fp32");
  auto dtype = ir::parse_dtype(name);
  if (!dtype)
    return Error(ErrorCode::invalid_argument,
                 op + ": dtype \"" + name + "\" is not one of fp32, fp16, bf16, int32, int64");
  double value = a.get_float("value", 0.0);
  if (!ir::is_floating(*dtype) && value != std::floor(value))
    return Error(ErrorCode::invalid_argument, op + ": value " + std::to_string(value) +
                                                  " is not an integer but dtype is " + name);
  auto d = dim_vars(shape.size());
  OpInstance inst = instance(ref("Y", d) + " = value", {}, {{"value", value}});
  for (std::size_t i = 0; i < shape.size(); ++i)
    inst.extents[d[i]] = shape[i];
  inst.output = ir::TensorType{shape, *dtype};
  return inst;
}

// Y[d..] = body over equally shaped inputs; each name of `names` in `body` stands for its read.
Expected<OpInstance> update(std::string const& op, std::vector<std::string> const& names,
                            std::string const& body, std::span<ir::TensorType const> in,
                            tdl::Params params) {
  CLEAVE_CHECK_OK(expect_same_shapes(op, names, in));
  auto d = dim_vars(in[0].shape.size());
  auto is_name_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  };
  std::string expr;
  for (std::size_t i = 0; i < body.size();) {
    std::size_t j = i;
    while (j < body.size() && is_name_char(body[j]))
      ++j;
    if (j == i) {
      expr += body[i++];
      continue;
    }
    std::string word = body.substr(i, j - i);
    bool input = std::find(names.begin(), names.end(), word) != names.end();
    expr += input ? ref(word, d) : word;
    i = j;
  }
  return instance(ref("Y", d) + " = " + expr, names, std::move(params));
}

Status expect_beta(std::string const& op, std::string const& name, double beta) {
  if (beta >= 0 && beta < 1) return Status::ok();
  return Error(ErrorCode::invalid_argument,
               op + ": " + name + " must be in [0, 1), got " + std::to_string(beta));
}

Expected<OpInstance> adam_update(ir::Attrs const& a, std::span<ir::TensorType const> in) {
  std::string const op = "adam_update";
  double beta1 = a.get_float("beta1", 0.9), beta2 = a.get_float("beta2", 0.999);
  CLEAVE_CHECK_OK(expect_beta(op, "beta1", beta1));
  CLEAVE_CHECK_OK(expect_beta(op, "beta2", beta2));
  std::int64_t step = a.get_int("step", 1);
  if (step < 1)
    return Error(ErrorCode::invalid_argument,
                 op + ": step counts from 1 (the first update), got " + std::to_string(step));
  double eps = a.get_float("eps", 1e-8);
  if (!(eps >= 0))
    return Error(ErrorCode::invalid_argument,
                 op + ": eps must be >= 0, got " + std::to_string(eps));
  return update(op, {"W", "M", "V"},
                "W - lr * (M / (1 - pow(beta1, step))) / (sqrt(V / (1 - pow(beta2, step))) + eps)",
                in,
                {{"lr", a.get_float("lr", 0.001)},
                 {"beta1", beta1},
                 {"beta2", beta2},
                 {"eps", eps},
                 {"step", static_cast<double>(step)}});
}

AttrSpec beta1_attr() {
  return real_attr("beta1", 0.9, "decay of the first moment, in [0, 1)");
}
AttrSpec beta2_attr() {
  return real_attr("beta2", 0.999, "decay of the second moment, in [0, 1)");
}

}  // namespace

void add_optimizer_ops(OpRegistry& r) {
  auto p = f32({64, 32});
  OpSchema fill_schema =
      fixed_schema("fill", "Y = value everywhere (no inputs)",
                   {required_ints_attr("shape", "the output's shape; [] for a scalar"),
                    real_attr("value", 0.0, "the value"),
                    string_attr("dtype", "fp32", "fp32, fp16, bf16, int32 or int64")},
                   {}, ir::Attrs{{"shape", std::vector<std::int64_t>{64, 32}}}, fill);
  must_add(r, std::move(fill_schema));
  must_add(r, fixed_schema("sgd_momentum", "Y = momentum * V + G (the new velocity)",
                           {real_attr("momentum", 0.9, "the velocity's decay")}, {p, p}, {},
                           [](ir::Attrs const& a, std::span<ir::TensorType const> in) {
                             return update("sgd_momentum", {"V", "G"}, "momentum * V + G", in,
                                           {{"momentum", a.get_float("momentum", 0.9)}});
                           }));
  must_add(r, fixed_schema("sgd_update", "Y = W - lr * D (D: the gradient or the velocity)",
                           {real_attr("lr", 0.01, "the learning rate")}, {p, p}, {},
                           [](ir::Attrs const& a, std::span<ir::TensorType const> in) {
                             return update("sgd_update", {"W", "D"}, "W - lr * D", in,
                                           {{"lr", a.get_float("lr", 0.01)}});
                           }));
  must_add(r,
           fixed_schema(
               "adam_moment1", "Y = beta1 * M + (1 - beta1) * G", {beta1_attr()}, {p, p}, {},
               [](ir::Attrs const& a, std::span<ir::TensorType const> in) -> Expected<OpInstance> {
                 double beta1 = a.get_float("beta1", 0.9);
                 CLEAVE_CHECK_OK(expect_beta("adam_moment1", "beta1", beta1));
                 return update("adam_moment1", {"M", "G"}, "beta1 * M + (1 - beta1) * G", in,
                               {{"beta1", beta1}});
               }));
  must_add(r,
           fixed_schema(
               "adam_moment2", "Y = beta2 * V + (1 - beta2) * G * G", {beta2_attr()}, {p, p}, {},
               [](ir::Attrs const& a, std::span<ir::TensorType const> in) -> Expected<OpInstance> {
                 double beta2 = a.get_float("beta2", 0.999);
                 CLEAVE_CHECK_OK(expect_beta("adam_moment2", "beta2", beta2));
                 return update("adam_moment2", {"V", "G"}, "beta2 * V + (1 - beta2) * G * G", in,
                               {{"beta2", beta2}});
               }));
  must_add(r, fixed_schema("adam_update",
                           "Y = W - lr * Mhat / (sqrt(Vhat) + eps), bias-corrected at step",
                           {real_attr("lr", 0.001, "the learning rate"), beta1_attr(), beta2_attr(),
                            real_attr("eps", 1e-8, "added to sqrt(Vhat)"),
                            int_attr("step", 1, "the update's number, from 1")},
                           {p, p, p}, {}, adam_update));
}

}  // namespace cleave::ops
