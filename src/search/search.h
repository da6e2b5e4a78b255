// The search algorithms by name (STYLE.md #6, #7): an explicit table, built on first use, of every
// algorithm cleave has, each a function (SearchContext, Options) -> Plan with the options it
// declares and what one iteration of its budget is. make_plan types the context's option settings
// against the algorithm's declarations, runs it, and records its name, options, seed, budget and
// search time in the plan's provenance. The table also writes `cleave plan --help`'s list.
#pragma once

#include <string>
#include <vector>

#include "search/common/options.h"
#include "search/common/search_context.h"

namespace cleave::search {

struct AlgorithmInfo {
  std::string name;
  std::string summary;    // one line
  std::string iteration;  // what one iteration of a budget is; empty: the search has no loop
  std::vector<OptionSpec> options;
};

std::vector<AlgorithmInfo> algorithm_infos();
std::vector<std::string> algorithms();

// Every algorithm with its summary, iteration and options (name, type, default, help), for
// `cleave plan --help` and docs/search.md.
std::string algorithms_help();

// The settings among `settings` that `algorithm` declares (for `cleave compare`, where one
// --option serves every algorithm that has it); an error when some key is declared by none of
// `algorithms`, listing the valid keys.
Expected<OptionSettings> settings_for(std::string const& algorithm,
                                      std::vector<std::string> const& algorithms,
                                      OptionSettings const& settings);

// Runs `algorithm`; an unknown name is an error listing the available ones, an unknown option
// key or a malformed value one listing the algorithm's options.
Expected<plan::Plan> make_plan(std::string const& algorithm, SearchContext const& ctx);

}  // namespace cleave::search
