// Helpers shared by the op mappings (convert_ops.cc, convert_layout_ops.cc): reading a node's
// inputs through the Converter and binding its outputs.
#pragma once

#include <string>

#include "import/converter.h"

namespace cleave::importer {

using Ints = std::vector<std::int64_t>;

inline std::string out_name(Converter& c, onnx::NodeProto const& n, int k = 0) {
  return c.claim(n.output(k));
}

inline Status bind(Converter& c, onnx::NodeProto const& n, ir::TensorId id, int k = 0) {
  c.set_tensor(n.output(k), id);
  return Status::ok();
}

// Output k is input i unchanged (Identity, Dropout in inference, a no-op Reshape).
inline Status alias(Converter& c, onnx::NodeProto const& n, int i = 0, int k = 0) {
  Value v = *c.value(n.input(i));
  c.set_value(n.output(k), std::move(v));
  return Status::ok();
}

inline Expected<std::int64_t> norm_axis(Converter& c, onnx::NodeProto const& n, std::int64_t axis,
                                        std::size_t rank) {
  auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r)
    return c.node_error(n, ErrorCode::invalid_argument,
                        "axis " + std::to_string(axis) + " is out of range for rank " +
                            std::to_string(r));
  return axis < 0 ? axis + r : axis;
}

inline Expected<ConstTensor const*> need_constant(Converter& c, onnx::NodeProto const& n, int i,
                                                  std::string const& what) {
  auto const* k = c.constant(n, i);
  if (!k)
    return c.node_error(n, ErrorCode::unsupported,
                        what + " (input " + std::to_string(i) +
                            ") is computed from data at run time; cleave plans static shapes and "
                            "needs it constant after folding");
  return k;
}

inline Status unary(Converter& c, onnx::NodeProto const& n, std::string const& type,
                    ir::Attrs a = {}) {
  CLEAVE_TRY(ir::TensorId x, c.tensor(n, 0));
  return bind(c, n, c.b().op(type, {x}, std::move(a), out_name(c, n)));
}

inline std::optional<double> scalar(ConstTensor const* k) {
  if (!k || k->size() != 1) return std::nullopt;
  return k->values[0];
}

}  // namespace cleave::importer
