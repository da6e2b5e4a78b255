#include "support/named_spec.h"

#include <algorithm>

namespace cleave {

Expected<NamedSpec> parse_named_spec(std::string_view text, std::string_view what) {
  NamedSpec spec;
  auto colon = text.find(':');
  spec.name = std::string(text.substr(0, colon));
  std::string kind(what);
  if (spec.name.empty())
    return Error(ErrorCode::parse_error, kind + " '" + std::string(text) +
                                             "' has no name; write NAME or NAME:key=value,...");
  if (colon == std::string_view::npos) return spec;
  std::string_view rest = text.substr(colon + 1);
  while (true) {
    auto comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    auto eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == item.size())
      return Error(ErrorCode::parse_error, kind + " '" + std::string(text) + "': '" +
                                               std::string(item) +
                                               "' is not key=value; write NAME:key=value,...");
    spec.args.emplace_back(std::string(item.substr(0, eq)), std::string(item.substr(eq + 1)));
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return spec;
}

Expected<ResolvedSpec>
resolve_named_spec(std::string_view what, NamedSpec const& spec,
                   std::vector<SpecKeyDefault> const& keys,
                   std::function<Status(std::size_t, std::string const&)> const& check,
                   std::string const& accepted) {
  std::string kind(what);
  ResolvedSpec r;
  for (auto const& arg : spec.args) {
    // Not a structured binding: clang 14 (the fuzz build) cannot capture one in a lambda.
    auto const& key = arg.first;
    auto const& value = arg.second;
    auto k = std::find_if(keys.begin(), keys.end(), [&](auto const& d) { return d.name == key; });
    if (k == keys.end())
      return Error(ErrorCode::invalid_argument, kind + " '" + spec.name + "' has no key '" + key +
                                                    "'; accepted keys:" + accepted);
    if (r.values.count(key))
      return Error(ErrorCode::invalid_argument,
                   kind + " '" + spec.name + "': key '" + key + "' is given twice");
    CLEAVE_CHECK_OK(check(static_cast<std::size_t>(k - keys.begin()), value));
    r.values[key] = value;
  }
  r.canonical = spec.name;
  char sep = ':';
  for (auto const& k : keys) {
    auto [it, inserted] = r.values.emplace(k.name, k.fallback);
    if (!inserted && it->second != k.fallback) r.overrides.push_back(k.name + "=" + it->second);
    r.canonical += sep + k.name + "=" + it->second;
    sep = ',';
  }
  return r;
}

}  // namespace cleave
