// ParDNN (arXiv 2008.08636, PAPERS.md §3; docs/search_pardnn.md): every op whole on one device,
// so that each device fits in memory and the step is short, in three steps: slicing the unit graph
// along heaviest paths into primary and secondary clusters (slicing.h), mapping the clusters to
// devices (mapping.h), and the memory step (memory_step.h). And its baseline, critical-path
// placement under memory (m-ETF): units in order of bottom level, each to the device where it
// finishes earliest among those whose memory keeps what it holds, then the same memory step. And
// its other baseline, Kim and Browne's linear clustering: heaviest paths as clusters until none is
// left, merged onto the devices by load, then the same memory step.
#pragma once

#include "search/common/search_context.h"

namespace cleave::search::pardnn {

Expected<plan::Plan> pardnn(SearchContext const& ctx);
Expected<plan::Plan> critical_path(SearchContext const& ctx);
Expected<plan::Plan> linear_clustering(SearchContext const& ctx);

}  // namespace cleave::search::pardnn
