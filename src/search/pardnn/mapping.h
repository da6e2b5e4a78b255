// ParDNN's step 1b, mapping (docs/search_pardnn.md, PAPERS.md §3): primary cluster k goes to
// device k; then the secondary clusters, most critical first (the largest top + bottom level of
// their units), each to the device it exchanges the most bytes with when that keeps the device
// within its balanced share of the compute or when moving it away would cost more transfer time
// than its compute; otherwise to the device where least work overlaps its time span (by top
// levels: range sums of one Fenwick tree per device) plus the transfers it would need from units
// on other devices, priced per link (each crossing edge paying the link's latency). A device takes
// a cluster only while what its units hold (what they write, keep and read from sources, as if
// all were live at once) stays within 90% of its memory (the paper holds 10% back); where none
// can, the one with the most room takes it, for the memory step. O(V log V + E + clusters K^2).
#pragma once

#include <vector>

#include "search/pardnn/slicing.h"

namespace cleave::search::pardnn {

// A device per unit.
std::vector<int> map_clusters(SearchContext const& ctx, OpGraph const& graph, UnitDag const& dag,
                              Links const& links, Slicing const& slicing);

}  // namespace cleave::search::pardnn
