// A byte count as people read it: "80 GiB", "12 GB", "1.5 MiB", "11.43 GiB", "512 B".
#pragma once

#include <string>

#include "support/units.h"

namespace cleave {

// Whole (or quarter) binary units print in them ("80 GiB", "1.5 MiB") and whole decimal units in
// them ("12 GB"), so that a capacity prints as it is written and reads back the same; anything
// else in the largest binary unit it reaches, to 4 significant digits ("11.43 GiB").
std::string format_bytes(Bytes bytes);

}  // namespace cleave
