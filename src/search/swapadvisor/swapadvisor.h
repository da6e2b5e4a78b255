// `swapadvisor` (PAPERS.md §4): one device's op schedule, memory pool and swaps, searched
// together by a genetic algorithm (genetic.h) over the swap planner (swap_planner.h) and the
// simulator, so that a model whose step needs more than the device's memory trains within it.
// `lru-swap` is its baseline of on-demand swapping: the graph's order, the device's memory as one
// budget of bytes, the least recently used block evicted, each copy back issued one op before its
// use. Both plan device 0 of the cluster only (SwapAdvisor's single GPU).
#pragma once

#include <vector>

#include "search/common/options.h"
#include "search/common/search_context.h"

namespace cleave::search::swapadvisor {

std::vector<OptionSpec> swapadvisor_options();
Expected<plan::Plan> swapadvisor(SearchContext const& ctx, Options const& options);
Expected<plan::Plan> lru_swap(SearchContext const& ctx);

}  // namespace cleave::search::swapadvisor
