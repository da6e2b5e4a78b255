// The importer's core (internal): walks a checked, shape-inferred ONNX graph in order and writes
// cleave ops with an OpBuilder. Each ONNX value becomes one of: a cleave tensor, a known constant
// (folded), or an initializer not yet used (a weight is created on its first use, so weights are
// counted by use: an initializer the exporter shared through Identity nodes becomes one weight per
// Identity, as in the PyTorch module it came from).
#pragma once

#include <functional>
#include <map>
#include <onnx/onnx_pb.h>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "import/const_tensor.h"
#include "import/onnx_import.h"
#include "ops/op_builder.h"

namespace cleave::importer {

struct Value {
  enum class Kind { tensor, constant, initializer } kind = Kind::tensor;
  ir::TensorId id;                          // tensor
  std::optional<ConstTensor> constant;      // constant
  onnx::TensorProto const* init = nullptr;  // initializer (its values may be dropped)
  bool transposed = false;  // initializer seen through a 2-D Transpose (MatMul(X, W^T))
  std::string name;         // the weight's name when one is created from it
};

class Converter {
 public:
  Converter(onnx::ModelProto const& model, ops::OpRegistry const& registry,
            ImportOptions const& options);
  Expected<ImportResult> run();

  // Used by the op mappings (convert_ops.cc, patterns.cc).
  ops::OpBuilder& b() { return b_; }
  ImportOptions const& options() const { return options_; }
  Value const* value(std::string const& name) const;
  bool has(onnx::NodeProto const& n, int i) const {
    return i < n.input_size() && !n.input(i).empty();
  }
  // Input i as a cleave tensor: a weight is created for an initializer, an input tensor for a
  // constant (e.g. the positions fed to an embedding).
  Expected<ir::TensorId> tensor(onnx::NodeProto const& n, int i);
  Expected<ir::TensorId> tensor_of(Value const& v, std::optional<ir::Shape> as = std::nullopt);
  // Input i's values, if it is a constant.
  ConstTensor const* constant(onnx::NodeProto const& n, int i) const;
  // Input i's shape (tensor, constant or initializer).
  Expected<ir::Shape> shape(onnx::NodeProto const& n, int i) const;
  void set_tensor(std::string const& name, ir::TensorId id);
  void set_value(std::string const& name, Value v);
  // Names of the nodes consuming each value.
  std::vector<onnx::NodeProto const*> const& consumers(std::string const& value) const;
  onnx::NodeProto const* producer(std::string const& value) const;
  void skip(onnx::NodeProto const* n) { skipped_.insert(n); }
  Error node_error(onnx::NodeProto const& n, ErrorCode code, std::string const& what) const;
  std::int64_t opset() const { return opset_; }
  // A new tensor name derived from base, clashing with no ONNX name and no name used so far.
  std::string fresh(std::string const& base);
  // An ONNX value's own name for the tensor that holds it (fresh() if already used).
  std::string claim(std::string const& onnx_name);
  ImportStats& stats() { return stats_; }

 private:
  Status convert(onnx::NodeProto const& n);
  Status fold(onnx::NodeProto const& n, bool& folded);
  Status add_inputs();
  Status add_loss();
  Expected<ir::TensorId> cross_entropy_of(std::string const& output,
                                          std::map<std::int64_t, ir::TensorId>& labels);
  Status opaque(onnx::NodeProto const& n);
  Status custom(onnx::NodeProto const& n);

  onnx::ModelProto const& model_;
  onnx::GraphProto const& graph_;
  ops::OpRegistry const& registry_;
  ImportOptions options_;
  ops::OpBuilder b_;
  std::int64_t opset_ = 0;
  ImportStats stats_;
  std::map<std::string, Value> values_;
  std::map<std::string, ir::TensorId> weights_;    // created weights by name
  std::map<std::string, ir::TensorId> constants_;  // constants materialised as input tensors
  std::map<std::string, std::vector<onnx::NodeProto const*>> consumers_;
  std::map<std::string, onnx::NodeProto const*> producers_;
  std::map<std::string, onnx::TypeProto const*> inferred_;  // value_info after shape inference
  std::set<onnx::NodeProto const*> skipped_;
  std::set<std::string> reserved_;  // every ONNX value name
  std::set<std::string> used_;      // names given to cleave tensors
  std::int64_t counter_ = 0;
  ir::TensorId loss_;
};

// The op mappings: convert_ops.cc. Returns nullopt when the op type has no mapping.
std::optional<Status> convert_known_op(Converter& c, onnx::NodeProto const& n);
using OpMapping = std::function<Status(Converter&, onnx::NodeProto const&)>;
// Pad, Expand, Einsum and the general Where (convert_layout_ops.cc), added to the table.
void add_layout_mappings(std::unordered_map<std::string, OpMapping>& table);
// Decomposed patterns (patterns.cc): GELU's erf form and layer norm written out. Returns true
// when `n` starts a pattern that it converted (and marked its other nodes skipped).
Expected<bool> convert_pattern(Converter& c, onnx::NodeProto const& n);

// The domain that default-domain ops ONNX does not define are moved to, so that the checker
// accepts them (they are custom or opaque ops).
inline constexpr std::string_view kCustomDomain = "cleave.custom";
// What to do about an op cleave has no mapping for: describe it or allow it as opaque.
std::string unknown_op_advice(std::string const& op_type);

// cleave's dtype for an ONNX element type.
Expected<ir::DType> dtype_of(int onnx_data_type, std::string const& what);

}  // namespace cleave::importer
