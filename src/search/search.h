// The search algorithms by name (STYLE.md #6, #7): an explicit table, built on first use, of every
// algorithm cleave has, each a function (SearchContext) -> Plan. make_plan runs one and records
// its name, config, seed and search time in the plan's provenance.
#pragma once

#include <string>
#include <vector>

#include "search/common/search_context.h"

namespace cleave::search {

struct AlgorithmInfo {
  std::string name;
  std::string summary;  // one line, for `cleave plan --help` and docs
};

std::vector<AlgorithmInfo> algorithm_infos();
std::vector<std::string> algorithms();

// Runs `algorithm`; an unknown name is an error listing the available ones.
Expected<plan::Plan> make_plan(std::string const& algorithm, SearchContext const& ctx);

}  // namespace cleave::search
