#include "ir/types.h"

#include <array>
#include <charconv>
#include <limits>
#include <utility>

#include "support/checked.h"

namespace cleave::ir {
namespace {

constexpr std::array<std::pair<DType, std::string_view>, 5> dtype_names = {{
    {DType::fp32, "fp32"},
    {DType::fp16, "fp16"},
    {DType::bf16, "bf16"},
    {DType::int32, "int32"},
    {DType::int64, "int64"},
}};

constexpr std::array<std::pair<TensorRole, std::string_view>, 5> role_names = {{
    {TensorRole::input, "input"},
    {TensorRole::activation, "activation"},
    {TensorRole::weight, "weight"},
    {TensorRole::gradient, "gradient"},
    {TensorRole::optimizer_state, "optimizer_state"},
}};

Error bad_shape(std::string_view text, std::string_view why) {
  std::string message = "bad shape '";
  message += text;
  message += "': ";
  message += why;
  return Error(ErrorCode::parse_error, std::move(message));
}

std::string_view trim_spaces(std::string_view text) {
  while (!text.empty() && text.front() == ' ')
    text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ')
    text.remove_suffix(1);
  return text;
}

}  // namespace

std::string_view dtype_name(DType dtype) {
  for (auto const& [value, name] : dtype_names) {
    if (value == dtype) return name;
  }
  return "unknown";
}

std::optional<DType> parse_dtype(std::string_view name) {
  for (auto const& [value, known] : dtype_names) {
    if (known == name) return value;
  }
  return std::nullopt;
}

// The widest dtype's size: a valid shape's bytes fit in int64 whatever its dtype.
constexpr std::int64_t max_dtype_bytes = 8;

std::int64_t dtype_bytes(DType dtype) {
  switch (dtype) {
  case DType::fp16:
  case DType::bf16:
    return 2;
  case DType::fp32:
  case DType::int32:
    return 4;
  case DType::int64:
    return 8;
  }
  return 0;
}

bool is_floating(DType dtype) {
  return dtype == DType::fp32 || dtype == DType::fp16 || dtype == DType::bf16;
}

std::string_view role_name(TensorRole role) {
  for (auto const& [value, name] : role_names) {
    if (value == role) return name;
  }
  return "unknown";
}

std::optional<TensorRole> parse_role(std::string_view name) {
  for (auto const& [value, known] : role_names) {
    if (known == name) return value;
  }
  return std::nullopt;
}

bool is_valid_shape(Shape const& shape) {
  std::int64_t product = max_dtype_bytes;
  for (std::int64_t dim : shape) {
    if (dim < 1) return false;
    auto next = checked_mul(product, dim);
    if (!next) return false;
    product = *next;
  }
  return true;
}

std::int64_t num_elements(Shape const& shape) {
  std::int64_t product = 1;
  for (std::int64_t dim : shape)
    product *= dim;
  return product;
}

std::string shape_to_string(Shape const& shape) {
  if (shape.empty()) return "scalar";
  std::string out;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += 'x';
    out += std::to_string(shape[i]);
  }
  return out;
}

Expected<Shape> parse_shape(std::string_view text) {
  std::string_view rest = trim_spaces(text);
  Shape shape;
  if (rest.empty() || rest == "scalar") return shape;
  std::int64_t product = max_dtype_bytes;
  while (true) {
    std::size_t cut = rest.find_first_of("x,");
    std::string_view part = trim_spaces(rest.substr(0, cut));
    std::int64_t dim = 0;
    auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), dim);
    if (ec == std::errc::result_out_of_range) {
      return bad_shape(text, "dimension '" + std::string(part) + "' is too large");
    }
    if (part.empty() || ec != std::errc() || end != part.data() + part.size()) {
      return bad_shape(text, "expected dimensions like 64x32");
    }
    if (dim < 1) return bad_shape(text, "every dimension must be >= 1, like 64x32");
    auto next = checked_mul(product, dim);
    if (!next) return bad_shape(text, "its size in bytes does not fit in 64 bits");
    product = *next;
    shape.push_back(dim);
    if (cut == std::string_view::npos) return shape;
    rest.remove_prefix(cut + 1);
  }
}

std::string type_to_string(TensorType const& type) {
  std::string out(dtype_name(type.dtype));
  out += '[';
  out += shape_to_string(type.shape);
  out += ']';
  return out;
}

}  // namespace cleave::ir
