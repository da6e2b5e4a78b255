// The graph IR: an immutable dataflow graph of tensors and ops (DESIGN.md "what is computed").
// Build one with GraphBuilder (graph_builder.h) or load it from JSON (graph_json.h); both end in
// Graph::create, which verifies everything a later pass relies on.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/attrs.h"
#include "ir/types.h"
#include "support/status.h"
#include "support/strong_id.h"

namespace cleave::ir {

using TensorId = StrongId<struct TensorTag>;
using OpId = StrongId<struct OpTag>;

struct Tensor {
  TensorId id;
  std::string name;
  TensorType type;
  TensorRole role = TensorRole::activation;

  bool operator==(Tensor const&) const = default;
};

struct Op {
  OpId id;
  std::string name;
  std::string type;  // a registered op type, e.g. "conv2d"
  Attrs attrs;
  std::vector<TensorId> inputs;
  std::vector<TensorId> outputs;
  // For a backward or optimizer op: the forward op it belongs to (Tofu groups them); invalid for
  // forward ops.
  OpId forward = {};

  bool operator==(Op const&) const = default;
};

// What the IR needs to know of op semantics, supplied by the ops module (dependency inversion:
// ir does not depend on ops).
class ShapeInference {
 public:
  virtual ~ShapeInference() = default;
  // The output types of an op of `op_type` with `attrs` applied to inputs of `inputs`, or an
  // error saying why they do not fit.
  virtual Expected<std::vector<TensorType>> infer(std::string_view op_type, Attrs const& attrs,
                                                  std::span<TensorType const> inputs) const = 0;
};

class Graph {
 public:
  // Verifies and freezes. Checks: ids are dense and equal to positions; names are non-empty,
  // valid UTF-8 (so the graph can be written as JSON) and unique (tensors among tensors, ops among
  // ops); shapes are valid (is_valid_shape); every id refers to an existing tensor; every
  // tensor has at most one producer, and one exactly unless its role is input, weight or
  // optimizer_state; no input-role tensor is produced; the graph is acyclic (the error names a
  // cycle); float attributes are finite; every op's output types equal what `semantics` infers
  // from its inputs.
  static Expected<Graph> create(std::vector<Tensor> tensors, std::vector<Op> ops,
                                ShapeInference const& semantics);

  std::size_t num_tensors() const;
  std::size_t num_ops() const;
  Tensor const& tensor(TensorId id) const;
  Op const& op(OpId id) const;
  std::span<Tensor const> tensors() const;
  std::span<Op const> ops() const;

  // The op that produces `id`, or an invalid id for a source tensor.
  OpId producer(TensorId id) const;
  std::span<OpId const> consumers(TensorId id) const;
  // Ops in a topological order (Kahn's algorithm, ties broken by smallest id).
  std::span<OpId const> topo_order() const;

  std::optional<TensorId> find_tensor(std::string_view name) const;
  std::optional<OpId> find_op(std::string_view name) const;

  // Same tensors and ops (ids, names, types, attributes) in the same order.
  bool operator==(Graph const& other) const;

 private:
  struct Impl;
  explicit Graph(std::shared_ptr<Impl const> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl const> impl_;
};

}  // namespace cleave::ir
