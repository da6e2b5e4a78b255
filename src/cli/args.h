// Parsing of command-line values shared by cleave's commands.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "ir/attrs.h"
#include "support/status.h"

namespace cleave::cli {

// "NAME=VALUE" -> (NAME, VALUE); `what` names the option in errors ("--shape").
Expected<std::pair<std::string, std::string>> split_assignment(std::string_view text,
                                                               std::string_view what);

// "2" -> int, "0.5" / "1e-5" -> float, "2,2" / "[2,2]" / "[]" -> int list, anything else -> string.
ir::AttrValue parse_attr_value(std::string_view text);

}  // namespace cleave::cli
