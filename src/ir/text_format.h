// Number and string spellings shared by Attrs::to_string and the JSON writer, so a value reads the
// same in a cache key and in a graph file, and floats round-trip exactly in both.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ir/attrs.h"

namespace cleave::ir::detail {

inline void append_int(std::string& out, std::int64_t value) {
  char buf[24];
  auto result = std::to_chars(buf, buf + sizeof buf, value);
  out.append(buf, result.ptr);
}

// Shortest text that parses back to the same double, always with a '.' or an exponent for finite
// values so that a reader never mistakes a float attribute for an integer one ("1.0", "1e+300").
inline void append_double(std::string& out, double value) {
  char buf[32];
  auto result = std::to_chars(buf, buf + sizeof buf, value);
  std::string_view text(buf, static_cast<std::size_t>(result.ptr - buf));
  out += text;
  if (std::isfinite(value) && text.find_first_of(".e") == std::string_view::npos) out += ".0";
}

// A JSON string literal: quotes, backslashes and control characters escaped, other bytes (UTF-8)
// copied as they are.
inline void append_quoted(std::string& out, std::string_view text) {
  static constexpr char hex[] = "0123456789abcdef";
  out += '"';
  std::size_t plain_from = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    auto byte = static_cast<unsigned char>(text[i]);
    if (byte >= 0x20 && byte != '"' && byte != '\\') continue;
    out.append(text, plain_from, i - plain_from);
    plain_from = i + 1;
    switch (byte) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\r':
      out += "\\r";
      break;
    default:
      out += "\\u00";
      out += hex[byte >> 4];
      out += hex[byte & 0xf];
    }
  }
  out.append(text, plain_from);
  out += '"';
}

// An attribute value: an integer, a float (as append_double), a quoted string or "[1,2]".
inline void append_attr_value(std::string& out, AttrValue const& value) {
  if (auto const* i = std::get_if<std::int64_t>(&value)) {
    append_int(out, *i);
  } else if (auto const* f = std::get_if<double>(&value)) {
    append_double(out, *f);
  } else if (auto const* s = std::get_if<std::string>(&value)) {
    append_quoted(out, *s);
  } else {
    out += '[';
    auto const& list = std::get<std::vector<std::int64_t>>(value);
    for (std::size_t k = 0; k < list.size(); ++k) {
      if (k > 0) out += ',';
      append_int(out, list[k]);
    }
    out += ']';
  }
}

}  // namespace cleave::ir::detail
