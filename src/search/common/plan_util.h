// Small helpers every search algorithm needs to read TDL index maps, write op configurations and
// turn them into a plan.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plan/plan.h"
#include "search/common/search_context.h"
#include "tdl/bound_op.h"

namespace cleave::search {

// The iteration slots an affine index expression depends on (none for a gather).
void slots_in(tdl::BoundIndex const& index, std::vector<int>& out);

// Splits dimension `dim` (of extent `extent`) of an op `ways` times, at most `extent`, onto devices
// first_device, first_device + 1, ...; other dimensions stay as they are (degree 1 expected).
void split_dim(plan::OpConfig& config, std::size_t dim, std::int64_t extent, int ways,
               int first_device = 0);

// The plan of one configuration per op (indexed by op id) under `fetch`, with `config` (what the
// algorithm found, as text) in its provenance; make_plan fills in the rest.
plan::Plan plan_from_configs(SearchContext const& ctx, std::vector<plan::OpConfig> configs,
                             plan::FetchPolicy fetch, std::string config);

}  // namespace cleave::search
