// Builds a Graph op by op, inferring output types through the op semantics as it goes, so a shape
// mismatch is reported at the op that causes it.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/name_index.h"

namespace cleave::ir {

// One op to add (STYLE.md #8: a context struct, so the interface can grow).
// The `= {}` initializers let callers name only the fields they set ({.type = "relu", .inputs =
// {x}}) without g++ 12's -Wmissing-field-initializers firing for the rest.
struct OpSpec {
  std::string type = {};
  std::vector<TensorId> inputs = {};
  Attrs attrs = {};
  std::string name = {};                       // empty: "<type>_<n>", n = the op id or next free
  std::vector<std::string> output_names = {};  // empty: "<op name>:<i>" ("<op name>" if just one)
  std::vector<TensorRole> output_roles = {};   // empty: all activation
  OpId forward = {};  // backward/optimizer ops: the forward op they belong to
};

class GraphBuilder {
 public:
  explicit GraphBuilder(ShapeInference const& semantics) : semantics_(&semantics) {}

  // A tensor with no producer (model input, weight, optimizer state).
  Expected<TensorId> add_source(std::string name, TensorType type, TensorRole role);
  // Adds an op and its outputs; on error nothing is added and the error names the op.
  Expected<std::vector<TensorId>> add_op(OpSpec spec);
  // add_op for ops with exactly one output.
  Expected<TensorId> add_op1(OpSpec spec);

  TensorType const& type_of(TensorId id) const;
  std::size_t num_ops() const { return ops_.size(); }

  // Verifies the whole graph (Graph::create) and hands it over; the builder is left empty.
  Expected<Graph> finish();

 private:
  // add_op and add_op1; with `single_output`, an op with another number of outputs is an error.
  Expected<std::vector<TensorId>> add_op(OpSpec spec, bool single_output);

  ShapeInference const* semantics_;
  std::vector<Tensor> tensors_;
  std::vector<Op> ops_;
  // Names in use (ids into tensors_ and ops_), to reject duplicates early with a message naming
  // the op being added.
  detail::NameIndex tensor_names_;
  detail::NameIndex op_names_;
};

}  // namespace cleave::ir
