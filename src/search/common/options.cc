#include "search/common/options.h"

#include <algorithm>
#include <charconv>

#include "support/assert.h"

namespace cleave::search {
namespace {

std::optional<std::int64_t> parse_integer(std::string_view text) {
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return v;
}

// "" is the empty list (an option's "not set" default, e.g. tofu's ways).
std::optional<std::vector<std::int64_t>> parse_integers(std::string_view text) {
  std::vector<std::int64_t> out;
  while (!text.empty()) {
    auto comma = text.find(',');
    auto v = parse_integer(text.substr(0, comma));
    if (!v) return std::nullopt;
    out.push_back(*v);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
    if (text.empty()) return std::nullopt;  // a trailing comma
  }
  return out;
}

std::optional<OptionValue> parse_value(OptionSpec const& spec, std::string const& text) {
  switch (spec.type) {
  case OptionType::integer:
    if (auto v = parse_integer(text)) return OptionValue(*v);
    return std::nullopt;
  case OptionType::integer_list:
    if (auto v = parse_integers(text)) return OptionValue(std::move(*v));
    return std::nullopt;
  case OptionType::choice:
    if (std::find(spec.choices.begin(), spec.choices.end(), text) != spec.choices.end())
      return OptionValue(text);
    return std::nullopt;
  }
  CLEAVE_ASSERT(false, "an option type without a parser");
  return std::nullopt;
}

std::string valid_keys(std::string_view algorithm, std::vector<OptionSpec> const& specs) {
  if (specs.empty()) return std::string(algorithm) + " has no options";
  std::string out = "valid keys for " + std::string(algorithm) + ": ";
  for (std::size_t i = 0; i < specs.size(); ++i)
    out += (i ? ", " : "") + specs[i].name + " (" + type_text(specs[i]) + ")";
  return out;
}

}  // namespace

std::string type_text(OptionSpec const& spec) {
  switch (spec.type) {
  case OptionType::integer:
    return "integer";
  case OptionType::integer_list:
    return "integers a,b,...";
  case OptionType::choice: {
    std::string out = "one of ";
    for (std::size_t i = 0; i < spec.choices.size(); ++i)
      out += (i ? "|" : "") + spec.choices[i];
    return out;
  }
  }
  CLEAVE_ASSERT(false, "an option type without a name");
  return "";
}

Expected<Options> Options::parse(std::string_view algorithm, std::vector<OptionSpec> const& specs,
                                 OptionSettings const& settings) {
  std::vector<std::string> text;
  for (auto const& spec : specs)
    text.push_back(spec.default_value);
  for (auto const& [key, value] : settings) {
    auto it =
        std::find_if(specs.begin(), specs.end(), [&](auto const& s) { return s.name == key; });
    if (it == specs.end())
      return Error(ErrorCode::invalid_argument,
                   "unknown option '" + key + "'; " + valid_keys(algorithm, specs));
    text[static_cast<std::size_t>(it - specs.begin())] = value;
  }
  Options out;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    auto v = parse_value(specs[i], text[i]);
    if (!v)
      return Error(ErrorCode::invalid_argument, "option " + specs[i].name + "=" + text[i] +
                                                    " is not " + type_text(specs[i]) + "; " +
                                                    valid_keys(algorithm, specs));
    out.names_.push_back(specs[i].name);
    out.values_.push_back(std::move(*v));
    out.text_.emplace_back(specs[i].name, text[i]);
  }
  return out;
}

OptionValue const& Options::value(std::string_view name) const {
  auto it = std::find(names_.begin(), names_.end(), name);
  CLEAVE_ASSERT(it != names_.end(), "reading an option the algorithm does not declare");
  return values_[static_cast<std::size_t>(it - names_.begin())];
}

std::int64_t Options::integer(std::string_view name) const {
  auto const* v = std::get_if<std::int64_t>(&value(name));
  CLEAVE_ASSERT(v, "an option read as an integer is declared otherwise");
  return *v;
}

std::vector<std::int64_t> const& Options::integers(std::string_view name) const {
  auto const* v = std::get_if<std::vector<std::int64_t>>(&value(name));
  CLEAVE_ASSERT(v, "an option read as integers is declared otherwise");
  return *v;
}

std::string const& Options::choice(std::string_view name) const {
  auto const* v = std::get_if<std::string>(&value(name));
  CLEAVE_ASSERT(v, "an option read as a choice is declared otherwise");
  return *v;
}

}  // namespace cleave::search
