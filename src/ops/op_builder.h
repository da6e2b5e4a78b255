// OpBuilder: the convenient way to write a graph in code (the zoo, autodiff, importers). The first
// error sticks: later calls do nothing and return invalid ids, and finish() reports that error
// with the op that caused it, so model code reads as a straight list of layers. Names are
// prefixed by the enclosing scopes ("layer3.block2.conv1").
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/graph_builder.h"
#include "ops/op_registry.h"

namespace cleave::ops {

class OpBuilder {
 public:
  explicit OpBuilder(OpRegistry const& registry) : registry_(&registry), builder_(registry) {}

  ir::TensorId input(std::string const& name, ir::Shape shape, ir::DType dtype = ir::DType::fp32);
  ir::TensorId weight(std::string const& name, ir::Shape shape, ir::DType dtype = ir::DType::fp32);
  ir::TensorId source(std::string const& name, ir::TensorType type, ir::TensorRole role);

  // A one-output op; `name` (default "<type>_<n>") is scoped. `forward` records, for a backward
  // or optimizer op, the forward op it belongs to.
  ir::TensorId op(std::string const& type, std::vector<ir::TensorId> inputs, ir::Attrs attrs = {},
                  std::string const& name = {}, ir::TensorRole role = ir::TensorRole::activation,
                  ir::OpId forward = {});
  // An op given in full (names as they are, not scoped): for copying ops from another graph.
  ir::TensorId add(ir::OpSpec spec);
  // Framework split: one slice op per part.
  std::vector<ir::TensorId> split(ir::TensorId x, std::int64_t axis,
                                  std::vector<std::int64_t> const& sizes, std::string const& name);

  // Type of a tensor built so far (a placeholder fp32 scalar after an error).
  ir::TensorType const& type_of(ir::TensorId id) const;
  ir::Shape const& shape_of(ir::TensorId id) const { return type_of(id).shape; }
  // The op that produced the last tensor returned by op().
  ir::OpId last_op() const { return last_op_; }

  // Names created while a Scope lives get "<name>." prepended (nested scopes nest).
  class Scope {
   public:
    Scope(OpBuilder& b, std::string const& name);
    ~Scope();
    Scope(Scope const&) = delete;
    Scope& operator=(Scope const&) = delete;

   private:
    OpBuilder& builder_;
    std::size_t previous_;
  };
  [[nodiscard]] Scope scope(std::string const& name) { return Scope(*this, name); }
  std::string scoped(std::string const& name) const { return prefix_ + name; }

  // Records a user error found by the caller (e.g. a model parameter that does not fit).
  void fail(Error error);
  bool ok() const { return !error_; }
  OpRegistry const& registry() const { return *registry_; }

  // The graph, or the first error.
  Expected<ir::Graph> finish();

 private:
  OpRegistry const* registry_;
  ir::GraphBuilder builder_;
  std::optional<Error> error_;
  std::string prefix_;
  std::size_t counter_ = 0;
  ir::OpId last_op_;
};

}  // namespace cleave::ops
