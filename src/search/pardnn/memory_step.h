// ParDNN's step 2, memory (docs/search_pardnn.md, PAPERS.md §3): the placement is scheduled (the
// list schedule of search/common/list_schedule.h, memory-aware under what each device may use,
// whose order the plan keeps), lowered and simulated by cleave's memory rule (lower/lifetime.h);
// while a device still overflows, the units on it
// that free the most memory per second of added transfers (priced per link) move, each at most
// once, each to the device with room where it adds the least (search/common/memory_repair.h).
// The plan aims at 90% of each device's memory, as the paper does, and at all of it where it must.
#pragma once

#include <vector>

#include "search/common/memory_repair.h"
#include "search/pardnn/dag.h"

namespace cleave::search::pardnn {

// The seconds of transfers a unit's move adds: over its edges (tensors it reads or writes, and
// the weights it reads or keeps), the transfer to or from the neighbour's device from the new
// device, less that from the old one.
MoveCost transfer_cost(OpGraph const& graph, Links const& links);

// The plan of `device` (a device per unit), repaired until it fits in 90% of each device's memory
// (the paper holds 10% back: the runtime's interleaving can keep a block longer than the
// simulated order does), or, where that cannot be, in all of it.
Expected<Repaired> fit_memory(SearchContext const& ctx, OpGraph const& graph, Links const& links,
                              std::vector<int> device);

}  // namespace cleave::search::pardnn
