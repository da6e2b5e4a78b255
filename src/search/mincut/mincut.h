// Balanced min-cut partitioning (issue 17; arXiv 1906.08168's compiler-driven model parallelism as
// cleave reads it, docs/search_mincut.md): the op graph (op_graph.h) cut by METIS into one part
// per device (partition.h), each device's ops ordered by a list schedule, memory overflows
// repaired (search/common/memory_repair.h), every op whole on one device. `mincut-split` first
// cuts the ops heavier than a balanced part along their batch dimension.
#pragma once

#include "search/common/options.h"
#include "search/common/search_context.h"

namespace cleave::search::mincut {

std::vector<OptionSpec> mincut_options();

Expected<plan::Plan> mincut(SearchContext const& ctx, Options const& options);
Expected<plan::Plan> mincut_split(SearchContext const& ctx, Options const& options);

}  // namespace cleave::search::mincut
