// The baselines users compare against, as plans (issue 4 item 6; docs/cost_model.md):
//  - `single`: every op whole on device 0, memory ignored (Tofu's "Ideal" reference);
//  - `data-parallel`: every op split on its batch dimension over all devices; ops without one
//    (weight updates) split their first dimension with a piece per device (else the largest),
//    where the reduce-scatter leaves the gradients, so gradients are reduce-scattered and
//    weights all-gathered, as ZeRO does;
//  - `expert` (expert.cc): layer placement for unrolled RNNs, else tensor_parallel: Megatron-LM
//    with sequence parallelism on transformers, the one weird trick on CNNs.
#pragma once

#include "search/common/search_context.h"

namespace cleave::search {

Expected<plan::Plan> single(SearchContext const& ctx);
Expected<plan::Plan> data_parallel(SearchContext const& ctx);
Expected<plan::Plan> expert(SearchContext const& ctx);

// Linears column- then row-parallel, everything else data parallel (baselines.cc); `expert`'s
// plan for models that are not unrolled RNNs.
Expected<plan::Plan> tensor_parallel(SearchContext const& ctx);

}  // namespace cleave::search
