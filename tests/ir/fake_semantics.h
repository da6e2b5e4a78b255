// A tiny stand-in for the ops module's semantics, so the IR is tested on its own.
#pragma once

#include <string>

#include "ir/graph.h"

namespace cleave::ir::testing {

// "identity": one input -> the same type.
// "add": two inputs of one type -> that type.
// "matmul2d": [m,k] x [k,n] -> [m,n] of the same dtype.
// "split2": one input -> two outputs of its type.
// "const": no inputs -> a scalar of the dtype named by the "dtype" attribute (fp32 by default).
class FakeSemantics : public ShapeInference {
 public:
  Expected<std::vector<TensorType>> infer(std::string_view op_type, Attrs const& attrs,
                                          std::span<TensorType const> inputs) const override {
    auto arity = [&](std::size_t n) -> Status {
      if (inputs.size() == n) return Status::ok();
      return Error(ErrorCode::invalid_argument, std::string(op_type) + " takes " +
                                                    std::to_string(n) + " inputs, got " +
                                                    std::to_string(inputs.size()));
    };
    if (op_type == "identity") {
      CLEAVE_CHECK_OK(arity(1));
      return std::vector<TensorType>{inputs[0]};
    }
    if (op_type == "add") {
      CLEAVE_CHECK_OK(arity(2));
      if (inputs[0] != inputs[1]) {
        return Error(ErrorCode::shape_mismatch,
                     "add of " + type_to_string(inputs[0]) + " and " + type_to_string(inputs[1]));
      }
      return std::vector<TensorType>{inputs[0]};
    }
    if (op_type == "matmul2d") {
      CLEAVE_CHECK_OK(arity(2));
      TensorType const& a = inputs[0];
      TensorType const& b = inputs[1];
      if (a.shape.size() != 2 || b.shape.size() != 2 || a.shape[1] != b.shape[0] ||
          a.dtype != b.dtype) {
        return Error(ErrorCode::shape_mismatch, "matmul2d of " + type_to_string(a) + " and " +
                                                    type_to_string(b) +
                                                    ": expected [m,k] x [k,n] of one dtype");
      }
      return std::vector<TensorType>{TensorType{{a.shape[0], b.shape[1]}, a.dtype}};
    }
    if (op_type == "split2") {
      CLEAVE_CHECK_OK(arity(1));
      return std::vector<TensorType>{inputs[0], inputs[0]};
    }
    if (op_type == "const") {
      CLEAVE_CHECK_OK(arity(0));
      auto dtype = parse_dtype(attrs.get_string("dtype", "fp32"));
      if (!dtype) return Error(ErrorCode::invalid_argument, "const: bad dtype");
      return std::vector<TensorType>{TensorType{{}, *dtype}};
    }
    return Error(ErrorCode::not_found, "unknown op type '" + std::string(op_type) + "'");
  }
};

}  // namespace cleave::ir::testing
