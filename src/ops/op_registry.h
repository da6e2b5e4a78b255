// Op types and their semantics. Every op type, built-in or custom, is defined by one TDL statement
// per instance (docs/tdl.md); the registry turns (type, attributes, input types) into a bound TDL
// op, caches it, and through it answers the IR's shape inference.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"
#include "tdl/bound_op.h"

namespace cleave::ops {

// The TDL form of one op instance (concrete attributes and input types).
struct OpInstance {
  std::string tdl;                       // one statement
  std::vector<std::string> input_names;  // the names the statement gives the op's inputs, in order
  tdl::Params params;
  std::map<std::string, std::int64_t> extents;  // variables whose extent no shape determines
  std::optional<ir::TensorType> output;         // when the statement cannot infer it alone
};

enum class AttrKind { integer, real, string, integers };

struct AttrSpec {
  std::string name;
  AttrKind kind = AttrKind::integer;
  std::optional<ir::AttrValue> fallback;  // none: required
  std::string doc;
};

using Instantiate =
    std::function<Expected<OpInstance>(ir::Attrs const&, std::span<ir::TensorType const>)>;

struct OpSchema {
  std::string name;
  std::string summary;
  std::vector<AttrSpec> attrs;
  // Custom ops: any numeric attribute becomes a TDL parameter of the same name.
  bool attrs_are_params = false;
  int min_inputs = 1;
  int max_inputs = 1;  // -1: any number
  // Shown by `cleave op NAME` when no shapes are given, and used by tests and docs. Custom ops
  // have none.
  std::vector<ir::TensorType> example_inputs;
  ir::Attrs example_attrs;
  Instantiate instantiate;
  // The inputs' names in the TDL, when known without shapes (custom ops); built-in ops name
  // them per instance (see input_names()).
  std::vector<std::string> fixed_input_names = {};
};

class OpRegistry final : public ir::ShapeInference {
 public:
  // A registry holding every built-in op (explicit registration, STYLE.md #7).
  static std::unique_ptr<OpRegistry> with_builtins();

  Status add(OpSchema schema);
  // A custom op from one line "NAME(IN1, IN2, ...): STATEMENT", e.g.
  // "scaled_mm(A, B): Y[i,j] = sum(k) A[i,k] * B[k,j] * alpha" (alpha: an attribute of the op).
  Status add_tdl(std::string_view line);
  // One custom op per line; '#' starts a comment. Errors name the file and line.
  Status load_semantics_file(std::string const& path);

  OpSchema const* find(std::string_view name) const;
  // The names an op type's TDL gives its inputs (for variadic ops: those of its example).
  Expected<std::vector<std::string>> input_names(OpSchema const& schema) const;
  std::vector<std::string> names() const;  // sorted

  // Attributes checked against the schema (unknown names, wrong kinds) and completed with
  // defaults.
  Expected<ir::Attrs> complete_attrs(OpSchema const& schema, ir::Attrs const& attrs) const;
  // The op's TDL form for these attributes and inputs.
  Expected<OpInstance> instantiate(std::string_view type, ir::Attrs const& attrs,
                                   std::span<ir::TensorType const> inputs) const;
  // The bound op; cached by (type, attributes, input types). Thread-safe.
  Expected<std::shared_ptr<tdl::BoundOp const>> bind(std::string_view type, ir::Attrs const& attrs,
                                                     std::span<ir::TensorType const> inputs) const;
  // The bound op of an op of a graph.
  Expected<std::shared_ptr<tdl::BoundOp const>> bind(ir::Graph const& graph, ir::OpId op) const;

  Expected<std::vector<ir::TensorType>>
  infer(std::string_view op_type, ir::Attrs const& attrs,
        std::span<ir::TensorType const> inputs) const override;

 private:
  Expected<tdl::Statement const*> parsed(std::string const& text) const;

  std::unordered_map<std::string, OpSchema> schemas_;
  mutable std::mutex mutex_;
  mutable std::unordered_map<std::string, std::unique_ptr<tdl::Statement>> statements_;
  mutable std::unordered_map<std::string, std::shared_ptr<tdl::BoundOp const>> bound_;
};

// Registration of the built-in op families (builtin_*.cc).
void add_dense_ops(OpRegistry& registry);        // matmul, batch_matmul, linear, conv2d/3d, pooling
void add_elementwise_ops(OpRegistry& registry);  // activations, arithmetic, cast, scale, dropout
void add_normalization_ops(OpRegistry& registry);  // softmax, norms, cross-entropy
void add_layout_ops(OpRegistry& registry);         // concat, slice, transpose, reshape, embedding
// Gradient and optimizer ops (the ops autodiff emits); registered after the forward ops, whose
// attributes and shape rules they reuse.
void add_gradient_ops(OpRegistry& registry);            // both of the next two
void add_dense_gradient_ops(OpRegistry& registry);      // linear, conv2d/3d, pooling, batch_matmul
void add_pointwise_gradient_ops(OpRegistry& registry);  // activations, norms, loss, layout
void add_optimizer_ops(OpRegistry& registry);           // fill, SGD, Adam

}  // namespace cleave::ops
