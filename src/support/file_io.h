// Reading whole files and writing them atomically (a failed write never leaves a half file).
#pragma once

#include <string>
#include <string_view>

#include "support/status.h"

namespace cleave {

Expected<std::string> read_file(std::string const& path);

// Writes to "<path>.tmp.<pid>" then renames over path, so readers see the old or the new file.
Status write_file_atomic(std::string const& path, std::string_view contents);

}  // namespace cleave
