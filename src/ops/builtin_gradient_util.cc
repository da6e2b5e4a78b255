#include "ops/builtin_gradient_util.h"

#include <algorithm>

#include "support/assert.h"

namespace cleave::ops::detail {

std::vector<AttrSpec> forward_attrs(OpRegistry const& registry, std::string const& forward,
                                    std::vector<AttrSpec> extra) {
  OpSchema const* schema = registry.find(forward);
  CLEAVE_ASSERT(schema, "gradient ops are registered after their forward ops");
  std::vector<AttrSpec> out = schema->attrs;
  out.insert(out.end(), extra.begin(), extra.end());
  return out;
}

Expected<ir::TensorType> forward_output(OpRegistry const& registry, std::string const& op,
                                        std::string const& forward, ir::Attrs const& attrs,
                                        std::vector<ir::TensorType> const& inputs) {
  OpSchema const* schema = registry.find(forward);
  CLEAVE_ASSERT(schema, "gradient ops are registered after their forward ops");
  ir::Attrs known;
  for (auto const& [key, value] : attrs.items()) {
    bool ok = std::any_of(schema->attrs.begin(), schema->attrs.end(),
                          // (an init-capture: clang 14 cannot capture a structured binding)
                          [&k = key](AttrSpec const& s) { return s.name == k; });
    if (ok) known.set(key, value);
  }
  auto inst = registry.instantiate(forward, known, inputs);
  if (!inst) return Error(inst.error().code(), op + ": " + inst.error().message());
  CLEAVE_ASSERT(inst->output.has_value(), "forward_output needs an op that declares its output");
  return *inst->output;
}

Status expect_shape(std::string const& op, std::string const& name, ir::TensorType const& t,
                    ir::Shape const& want, std::string const& why) {
  if (t.shape == want) return Status::ok();
  return shape_error(op, name + " is " + ir::shape_to_string(t.shape) + " but " + why + " gives " +
                             ir::shape_to_string(want));
}

Status expect_same_shapes(std::string const& op, std::vector<std::string> const& names,
                          std::span<ir::TensorType const> inputs) {
  for (std::size_t i = 1; i < inputs.size(); ++i)
    if (inputs[i].shape != inputs[0].shape)
      return shape_error(op, "inputs must have equal shapes, but " + names[0] + " is " +
                                 ir::shape_to_string(inputs[0].shape) + " and " + names[i] +
                                 " is " + ir::shape_to_string(inputs[i].shape));
  return Status::ok();
}

Expected<ir::Shape> shape_attr(std::string const& op, ir::Attrs const& a, std::string const& name,
                               int rank) {
  ir::Shape shape = a.get_ints(name, {});
  bool positive = std::all_of(shape.begin(), shape.end(), [](std::int64_t d) { return d >= 1; });
  if (!positive || (rank >= 0 && shape.size() != static_cast<std::size_t>(rank)))
    return Error(ErrorCode::invalid_argument,
                 op + ": " + name + " must be " +
                     (rank >= 0 ? std::to_string(rank) + " positive dimensions"
                                : "a list of positive dimensions") +
                     ", got " + ir::shape_to_string(shape));
  return shape;
}

std::string join(std::vector<std::string> const& parts, std::string const& sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i)
    out += (i ? sep : "") + parts[i];
  return out;
}

OpSchema fixed_schema(std::string name, std::string summary, std::vector<AttrSpec> attrs,
                      std::vector<ir::TensorType> example, ir::Attrs example_attrs,
                      Instantiate instantiate) {
  int n = static_cast<int>(example.size());
  return {std::move(name),    std::move(summary),       std::move(attrs),      false, n, n,
          std::move(example), std::move(example_attrs), std::move(instantiate)};
}

void must_add(OpRegistry& registry, OpSchema schema) {
  auto status = registry.add(std::move(schema));
  CLEAVE_ASSERT(status.is_ok(), "duplicate built-in op");
}

}  // namespace cleave::ops::detail
