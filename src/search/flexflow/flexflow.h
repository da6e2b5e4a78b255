// FlexFlow's search (SysML'19, PAPERS.md §2; issue 15): Metropolis-Hastings over per-op SOAP
// configurations (config_space.h), every proposal priced by the delta simulator.
//
// Chains run one after the other, from the data-parallel plan, the expert plan, Tofu's plan
// (cleave's addition, option tofu_start) and a random plan, each with an equal share of what is
// left of the budget. Each start is priced once first, and the chains run best start first, so
// that the time to the final plan is not spent on chains from worse starts (a tie keeps the order
// above; the same seed gives the same plan). A proposal gives a random op either a random
// configuration or, half the time, its heaviest neighbour's (FlexFlow's propagation: the
// neighbour across the edge whose tensor has the most bytes, its split carried over the
// dimensions that index that tensor, on the same devices). It is accepted with probability
// min(1, exp(-beta * (t_new - t_cur) / t_cur)), where t is the predicted step time scaled by
// 1 + the devices' memory overflow (sum over devices of (peak - capacity) / capacity where
// positive). The test's uniform is drawn before the proposal is priced, and pricing stops once the
// step time is sure to fail it (DeltaSimulator::apply_unless_above): the same decisions as the
// full test. A rejected proposal is undone (DeltaSimulator::undo), not simulated again. A chain
// goes back to its best plan after `reset` proposals without improving on it, and ends at its
// share of the budget or when half of that share passed without improvement. With no budget, the
// budget is default_iterations proposals.
//
// The best plan of all is returned: a plan that fits in memory beats every plan that does not,
// so the result fits whenever a fitting plan was seen. Its provenance records the course
// (iterations, accepted moves, the best step time over time).
#pragma once

#include <cstdint>
#include <vector>

#include "search/common/options.h"
#include "search/common/search_context.h"

namespace cleave::search::flexflow {

// Proposals when neither --budget-seconds nor --budget-iterations is given: the search always ends.
inline constexpr std::int64_t default_iterations = 3000;

std::vector<OptionSpec> flexflow_options();
Expected<plan::Plan> flexflow(SearchContext const& ctx, Options const& options);

}  // namespace cleave::search::flexflow
