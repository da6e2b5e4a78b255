// "NAME[:key=value,...]": how users name parameterised things (zoo models, cluster presets).
// Parsing, and the checks every such registry makes: unknown and repeated keys, each value
// validated by its registry, defaults filled in, the canonical spec spelled out.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "support/status.h"

namespace cleave {

struct NamedSpec {
  std::string name;
  std::vector<std::pair<std::string, std::string>> args;
};

// `what` ("model", "cluster") names the kind of thing in errors.
Expected<NamedSpec> parse_named_spec(std::string_view text, std::string_view what);

struct ResolvedSpec {
  std::map<std::string, std::string, std::less<>> values;  // every key, defaults filled in
  std::string canonical;               // "NAME:k1=v1,k2=v2,...", every key in declaration order
  std::vector<std::string> overrides;  // "k=v" for each key given a value other than its default
};

struct SpecKeyDefault {
  std::string name;
  std::string fallback;
};

// Resolves spec against the keys of the thing named `name`. `check(i, value)` validates the value
// given for key i; `accepted` (the keys, defaults and ranges, one per line) ends the errors.
Expected<ResolvedSpec>
resolve_named_spec(std::string_view what, NamedSpec const& spec,
                   std::vector<SpecKeyDefault> const& keys,
                   std::function<Status(std::size_t, std::string const&)> const& check,
                   std::string const& accepted);

}  // namespace cleave
