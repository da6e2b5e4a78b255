// Small helpers every search algorithm needs to read TDL index maps and write op configurations.
#pragma once

#include <cstdint>
#include <vector>

#include "plan/plan.h"
#include "tdl/bound_op.h"

namespace cleave::search {

// The iteration slots an affine index expression depends on (none for a gather).
void slots_in(tdl::BoundIndex const& index, std::vector<int>& out);

// Splits dimension `dim` (of extent `extent`) of an op `ways` times, at most `extent`, onto devices
// first_device, first_device + 1, ...; other dimensions stay as they are (degree 1 expected).
void split_dim(plan::OpConfig& config, std::size_t dim, std::int64_t extent, int ways,
               int first_device = 0);

}  // namespace cleave::search
