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

// `--backend` of run and calibrate: "in-process", or "mpi" where this cleave was built with MPI;
// anything else is an error that says what to give instead.
Status check_backend(std::string const& backend);

}  // namespace cleave::cli
