#include "cluster/quantity_text.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <utility>

namespace cleave::cluster {
namespace {

// value * scale / divisor: sub-units divide ("25us" = 25 / 1e6) so that the result is the double
// nearest the true value, as the literal 25e-6 is.
struct Unit {
  std::string_view suffix;
  double scale;
  double divisor = 1;
};

// Splits "80GiB" into 80 and "GiB" (spaces between them allowed); nullopt if no number leads.
std::optional<std::pair<double, std::string_view>> split_number(std::string_view text) {
  std::string s(text);
  char const* begin = s.c_str();
  char* end = nullptr;
  double v = std::strtod(begin, &end);
  if (end == begin || !std::isfinite(v)) return std::nullopt;
  std::string_view rest = text.substr(static_cast<std::size_t>(end - begin));
  while (!rest.empty() && rest.front() == ' ')
    rest.remove_prefix(1);
  return std::pair{v, rest};
}

Expected<double> parse_with(std::string_view text, std::initializer_list<Unit> units,
                            std::string_view what, std::string_view examples) {
  auto bad = [&] {
    return Error(ErrorCode::invalid_argument, "'" + std::string(text) + "' is not " +
                                                  std::string(what) + "; write e.g. " +
                                                  std::string(examples));
  };
  // strtod would also read "inf", "nan" and hex floats; none of them is a quantity.
  std::string_view digits = text.substr(!text.empty() && (text[0] == '+' || text[0] == '-'));
  if (digits.empty() ||
      !(std::isdigit(static_cast<unsigned char>(digits[0])) || digits[0] == '.') ||
      text.find_first_of("xX") != std::string_view::npos)
    return bad();
  auto parsed = split_number(text);
  if (!parsed) return bad();
  auto [value, rest] = *parsed;
  if (rest.empty()) return value;
  for (Unit const& u : units)
    if (rest == u.suffix) return value * u.scale / u.divisor;
  return bad();
}

constexpr double kilo = 1e3, mega = 1e6, giga = 1e9, tera = 1e12, peta = 1e15;
constexpr double kibi = 1024.0, mebi = kibi * 1024, gibi = mebi * 1024, tebi = gibi * 1024;

std::string trimmed(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// Picks the largest unit the value reaches (the first entry is the smallest unit).
std::string with_unit(double v, std::initializer_list<Unit> units) {
  Unit const* best = units.begin();
  for (Unit const& u : units)
    if (std::fabs(v) >= u.scale) best = &u;
  return trimmed(v / best->scale) + " " + std::string(best->suffix);
}

}  // namespace

Expected<Bytes> parse_bytes(std::string_view text) {
  auto v = parse_with(text,
                      {{"B", 1},
                       {"KB", kilo},
                       {"MB", mega},
                       {"GB", giga},
                       {"TB", tera},
                       {"KiB", kibi},
                       {"MiB", mebi},
                       {"GiB", gibi},
                       {"TiB", tebi}},
                      "a size", "80GiB, 40GB or 12e9");
  if (!v) return std::move(v).error();
  if (*v < 0 || *v > 9.0e18 || *v != std::floor(*v))
    return Error(ErrorCode::invalid_argument,
                 "'" + std::string(text) + "' is not a whole, non-negative number of bytes");
  return Bytes(static_cast<std::int64_t>(*v));
}

Expected<BytesPerSecond> parse_bandwidth(std::string_view text) {
  auto v = parse_with(text,
                      {{"B/s", 1},
                       {"KB/s", kilo},
                       {"MB/s", mega},
                       {"GB/s", giga},
                       {"TB/s", tera},
                       {"KiB/s", kibi},
                       {"MiB/s", mebi},
                       {"GiB/s", gibi},
                       {"b/s", 1, 8},
                       {"Kb/s", kilo, 8},
                       {"Mb/s", mega, 8},
                       {"Gb/s", giga, 8},
                       {"Tb/s", tera, 8}},
                      "a bandwidth", "300GB/s, 100Gb/s (bits) or 12e9 (bytes per second)");
  if (!v) return std::move(v).error();
  return BytesPerSecond(*v);
}

Expected<FlopsPerSecond> parse_flops_rate(std::string_view text) {
  auto v =
      parse_with(text, {{"FLOP/s", 1}, {"GFLOP/s", giga}, {"TFLOP/s", tera}, {"PFLOP/s", peta}},
                 "a FLOP rate", "19.5TFLOP/s, 50GFLOP/s or 5e10");
  if (!v) return std::move(v).error();
  return FlopsPerSecond(*v);
}

Expected<Seconds> parse_seconds(std::string_view text) {
  auto v = parse_with(text, {{"s", 1}, {"ms", 1, 1e3}, {"us", 1, 1e6}, {"ns", 1, 1e9}},
                      "a duration", "25us, 1.5ms or 2e-6 (seconds)");
  if (!v) return std::move(v).error();
  return Seconds(*v);
}

std::string format_bandwidth(BytesPerSecond bandwidth) {
  if (std::isinf(bandwidth.value())) return "unlimited";
  return with_unit(bandwidth.value(),
                   {{"B/s", 1}, {"KB/s", kilo}, {"MB/s", mega}, {"GB/s", giga}, {"TB/s", tera}});
}

std::string format_flops_rate(FlopsPerSecond rate) {
  return with_unit(rate.value(),
                   {{"FLOP/s", 1}, {"GFLOP/s", giga}, {"TFLOP/s", tera}, {"PFLOP/s", peta}});
}

std::string format_seconds(Seconds seconds) {
  double v = seconds.value();
  if (v == 0) return "0 s";
  return with_unit(v, {{"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1}});
}

}  // namespace cleave::cluster
