#include "ops/op_builder.h"

#include "ops/split.h"

namespace cleave::ops {

ir::TensorId OpBuilder::source(std::string const& name, ir::TensorType type, ir::TensorRole role) {
  if (error_) return {};
  auto id = builder_.add_source(scoped(name), std::move(type), role);
  if (!id) {
    fail(std::move(id).error());
    return {};
  }
  return *id;
}

ir::TensorId OpBuilder::input(std::string const& name, ir::Shape shape, ir::DType dtype) {
  return source(name, {std::move(shape), dtype}, ir::TensorRole::input);
}

ir::TensorId OpBuilder::weight(std::string const& name, ir::Shape shape, ir::DType dtype) {
  return source(name, {std::move(shape), dtype}, ir::TensorRole::weight);
}

ir::TensorId OpBuilder::op(std::string const& type, std::vector<ir::TensorId> inputs,
                           ir::Attrs attrs, std::string const& name, ir::TensorRole role,
                           ir::OpId forward) {
  ir::OpSpec spec;
  spec.type = type;
  spec.inputs = std::move(inputs);
  spec.attrs = std::move(attrs);
  spec.name = scoped(name.empty() ? type + "_" + std::to_string(counter_++) : name);
  spec.output_roles = {role};
  spec.forward = forward;
  return add(std::move(spec));
}

ir::TensorId OpBuilder::add(ir::OpSpec spec) {
  if (error_) return {};
  auto id = builder_.add_op1(std::move(spec));
  if (!id) {
    fail(std::move(id).error());
    return {};
  }
  last_op_ = ir::OpId(static_cast<ir::OpId::value_type>(builder_.num_ops() - 1));
  return *id;
}

std::vector<ir::TensorId> OpBuilder::split(ir::TensorId x, std::int64_t axis,
                                           std::vector<std::int64_t> const& sizes,
                                           std::string const& name) {
  if (error_) return std::vector<ir::TensorId>(sizes.size());
  auto parts = add_split(builder_, x, axis, sizes, scoped(name));
  if (!parts) {
    fail(std::move(parts).error());
    return std::vector<ir::TensorId>(sizes.size());
  }
  return *parts;
}

ir::TensorType const& OpBuilder::type_of(ir::TensorId id) const {
  static ir::TensorType const placeholder{{}, ir::DType::fp32};
  if (error_ || !id.valid()) return placeholder;
  return builder_.type_of(id);
}

OpBuilder::Scope::Scope(OpBuilder& b, std::string const& name)
    : builder_(b), previous_(b.prefix_.size()) {
  b.prefix_ += name + ".";
}

OpBuilder::Scope::~Scope() {
  builder_.prefix_.resize(previous_);
}

void OpBuilder::fail(Error error) {
  if (!error_) error_ = std::move(error);
}

Expected<ir::Graph> OpBuilder::finish() {
  if (error_) return std::move(*error_);
  return builder_.finish();
}

}  // namespace cleave::ops
