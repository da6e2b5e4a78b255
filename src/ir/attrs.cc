#include "ir/attrs.h"

#include <algorithm>

#include "ir/text_format.h"

namespace cleave::ir {
namespace {

template <typename T> T const* find_as(Attrs const& attrs, std::string_view name) {
  AttrValue const* value = attrs.find(name);
  return value == nullptr ? nullptr : std::get_if<T>(value);
}

}  // namespace

Attrs::Attrs(std::initializer_list<std::pair<std::string, AttrValue>> items) {
  for (auto const& [name, value] : items)
    set(name, value);
}

Attrs& Attrs::set(std::string name, AttrValue value) {
  // Graph files list attributes sorted, so appending is the common case and stays O(1).
  if (items_.empty() || items_.back().first < name) {
    items_.emplace_back(std::move(name), std::move(value));
    return *this;
  }
  auto it =
      std::lower_bound(items_.begin(), items_.end(), name,
                       [](auto const& item, std::string const& key) { return item.first < key; });
  if (it != items_.end() && it->first == name) {
    it->second = std::move(value);
  } else {
    items_.emplace(it, std::move(name), std::move(value));
  }
  return *this;
}

AttrValue const* Attrs::find(std::string_view name) const {
  auto it = std::lower_bound(
      items_.begin(), items_.end(), name,
      [](auto const& item, std::string_view key) { return std::string_view(item.first) < key; });
  if (it == items_.end() || it->first != name) return nullptr;
  return &it->second;
}

std::int64_t Attrs::get_int(std::string_view name, std::int64_t fallback) const {
  auto const* value = find_as<std::int64_t>(*this, name);
  return value == nullptr ? fallback : *value;
}

double Attrs::get_float(std::string_view name, double fallback) const {
  if (auto const* value = find_as<double>(*this, name)) return *value;
  if (auto const* value = find_as<std::int64_t>(*this, name)) return static_cast<double>(*value);
  return fallback;
}

std::string Attrs::get_string(std::string_view name, std::string fallback) const {
  auto const* value = find_as<std::string>(*this, name);
  return value == nullptr ? std::move(fallback) : *value;
}

std::vector<std::int64_t> Attrs::get_ints(std::string_view name,
                                          std::vector<std::int64_t> fallback) const {
  auto const* value = find_as<std::vector<std::int64_t>>(*this, name);
  return value == nullptr ? std::move(fallback) : *value;
}

std::string Attrs::to_string() const {
  std::string out;
  for (auto const& [name, value] : items_) {
    if (!out.empty()) out += ", ";
    out += name;
    out += '=';
    detail::append_attr_value(out, value);
  }
  return out;
}

}  // namespace cleave::ir
