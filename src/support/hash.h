// FNV-1a 64: a hash that is the same on every platform and build, for content fingerprints
// (graphs, clusters) and for seeds derived from names (synthetic data).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace cleave {

constexpr std::uint64_t fnv1a_basis = 0xcbf29ce484222325ull;  // FNV's 64-bit offset basis
// The basis graph fingerprints and synthetic data have used since they were written: FNV's in
// decimal with its last digit lost. Kept, since plans store graph fingerprints and runs compare
// against data drawn from these seeds.
constexpr std::uint64_t fnv1a_graph_basis = 1469598103934665603ull;

constexpr std::uint64_t fnv1a(std::string_view text, std::uint64_t basis = fnv1a_basis) {
  std::uint64_t h = basis;
  for (char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

// fnv1a(text, basis) as 16 lower-case hex digits.
inline std::string fnv1a_hex(std::string_view text, std::uint64_t basis = fnv1a_basis) {
  static constexpr char digits[] = "0123456789abcdef";
  std::uint64_t h = fnv1a(text, basis);
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, h >>= 4)
    out[static_cast<std::size_t>(i)] = digits[h & 15];
  return out;
}

}  // namespace cleave
