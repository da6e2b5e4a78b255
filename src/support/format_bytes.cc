#include "support/format_bytes.h"

#include <cmath>
#include <fmt/format.h>
#include <utility>

namespace cleave {

std::string format_bytes(Bytes bytes) {
  auto v = static_cast<double>(bytes.value());
  auto text = [](double x, char const* unit) { return fmt::format("{:.4g} {}", x, unit); };
  constexpr double kibi = 1024.0, mebi = kibi * 1024, gibi = mebi * 1024, tebi = gibi * 1024;
  constexpr std::pair<double, char const*> binary[] = {
      {tebi, "TiB"}, {gibi, "GiB"}, {mebi, "MiB"}, {kibi, "KiB"}};
  constexpr std::pair<double, char const*> decimal[] = {
      {1e12, "TB"}, {1e9, "GB"}, {1e6, "MB"}, {1e3, "KB"}};
  for (auto [scale, unit] : binary)
    if (std::fabs(v) >= scale) {
      if (std::fmod(v, scale / 4) == 0) return text(v / scale, unit);
      break;
    }
  for (auto [scale, unit] : decimal)
    if (std::fabs(v) >= scale) {
      if (std::fmod(v, scale) == 0) return text(v / scale, unit);
      break;
    }
  for (auto [scale, unit] : binary)
    if (std::fabs(v) >= scale) return text(v / scale, unit);
  return fmt::format("{} B", bytes.value());
}

}  // namespace cleave
