// Element types, tensor roles and shapes: the vocabulary of the graph IR.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "support/status.h"

namespace cleave::ir {

enum class DType : std::uint8_t { fp32, fp16, bf16, int32, int64 };

// "fp32", "fp16", "bf16", "int32", "int64".
std::string_view dtype_name(DType dtype);
std::optional<DType> parse_dtype(std::string_view name);
std::int64_t dtype_bytes(DType dtype);
bool is_floating(DType dtype);

// What a tensor is for in a training step; memory planning treats each role differently.
enum class TensorRole : std::uint8_t { input, activation, weight, gradient, optimizer_state };

// "input", "activation", "weight", "gradient", "optimizer_state".
std::string_view role_name(TensorRole role);
std::optional<TensorRole> parse_role(std::string_view name);

// Dimensions, outermost first. A scalar has rank 0.
using Shape = std::vector<std::int64_t>;

// Every dimension is >= 1 and the size in bytes of the widest dtype (8 x the element count) fits
// in int64 (what parse_shape accepts and Graph::create requires), so neither num_elements nor a
// tensor's bytes overflow on a shape in a graph (issue 23).
bool is_valid_shape(Shape const& shape);
// 1 for a scalar.
std::int64_t num_elements(Shape const& shape);
// "64x32"; "scalar" for rank 0.
std::string shape_to_string(Shape const& shape);
// Parses "64x32" (also "64,32", spaces around dimensions allowed); "scalar" or "" gives rank 0.
// Dimensions must be >= 1 and the element count must fit in int64; errors quote the text.
Expected<Shape> parse_shape(std::string_view text);

struct TensorType {
  Shape shape;
  DType dtype = DType::fp32;

  bool operator==(TensorType const&) const = default;
};

// "fp32[64x32]".
std::string type_to_string(TensorType const& type);

}  // namespace cleave::ir
