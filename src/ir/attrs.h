// Op attributes: a small sorted map from name to an integer, a float, a string or an integer list.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace cleave::ir {

using AttrValue = std::variant<std::int64_t, double, std::string, std::vector<std::int64_t>>;

class Attrs {
 public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<std::string, AttrValue>> items);

  // Inserts or replaces.
  Attrs& set(std::string name, AttrValue value);
  AttrValue const* find(std::string_view name) const;
  bool contains(std::string_view name) const { return find(name) != nullptr; }

  // Typed reads with defaults; a value of another type counts as absent (the op's schema checks
  // types and reports mistakes).
  std::int64_t get_int(std::string_view name, std::int64_t fallback) const;
  double get_float(std::string_view name, double fallback) const;  // accepts ints too
  std::string get_string(std::string_view name, std::string fallback) const;
  std::vector<std::int64_t> get_ints(std::string_view name,
                                     std::vector<std::int64_t> fallback) const;

  // Sorted by name.
  std::vector<std::pair<std::string, AttrValue>> const& items() const { return items_; }
  bool empty() const { return items_.empty(); }
  bool operator==(Attrs const&) const = default;

  // "stride=2, padding=[1,1]" — stable text, also used as a cache key.
  std::string to_string() const;

 private:
  std::vector<std::pair<std::string, AttrValue>> items_;
};

}  // namespace cleave::ir
