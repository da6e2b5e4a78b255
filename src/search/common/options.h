// Typed per-algorithm options (STYLE.md #6): each algorithm declares its options (name, type,
// default, one line of help) in search.cc's table; the user's `--option key=value` settings are
// checked and typed against them. An unknown key or a malformed value is an error that lists the
// valid keys with their types. The table also generates `cleave plan --help`.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "search/common/search_context.h"
#include "support/status.h"

namespace cleave::search {

enum class OptionType : std::uint8_t {
  integer,       // "4096", "1e6" is not one
  integer_list,  // "4,2"
  choice,        // one of OptionSpec::choices
};

struct OptionSpec {
  std::string name;
  OptionType type = OptionType::integer;
  std::string default_value;         // as the user would write it
  std::string help;                  // one line
  std::vector<std::string> choices;  // for OptionType::choice
};

// "integer", "integers (a,b,...)", "one of x|y".
std::string type_text(OptionSpec const& spec);

using OptionValue = std::variant<std::int64_t, std::vector<std::int64_t>, std::string>;

// One algorithm's options: every declared option with its value, set or default.
class Options {
 public:
  // The declared options with their defaults overridden by `settings`; the error names the
  // algorithm and lists the valid keys with their types. A key set twice keeps the last value.
  static Expected<Options> parse(std::string_view algorithm, std::vector<OptionSpec> const& specs,
                                 OptionSettings const& settings);

  // The value of a declared option; asking for an undeclared name or the wrong type is a bug.
  std::int64_t integer(std::string_view name) const;
  std::vector<std::int64_t> const& integers(std::string_view name) const;
  std::string const& choice(std::string_view name) const;

  // Every option as "key", "value" text in declared order, for the plan's provenance.
  OptionSettings const& settings() const { return text_; }

 private:
  OptionValue const& value(std::string_view name) const;

  std::vector<std::string> names_;
  std::vector<OptionValue> values_;
  OptionSettings text_;
};

}  // namespace cleave::search
