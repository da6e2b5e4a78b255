// Checked 64-bit arithmetic for sizes, FLOPs and bytes computed from user shapes (issue 23): an
// overflow is an error the caller reports, naming the op and the quantity, never a wrapped number.
#pragma once

#include <cstdint>
#include <optional>

namespace cleave {

// a * b, or nothing if it does not fit in int64.
inline std::optional<std::int64_t> checked_mul(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

// a + b, or nothing if it does not fit in int64.
inline std::optional<std::int64_t> checked_add(std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
  return out;
}

}  // namespace cleave
