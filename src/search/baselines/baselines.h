// The baselines users compare against, as plans (issue 4): `single` (every op whole on device 0,
// memory ignored: Tofu's "Ideal" reference), `data-parallel` (every op split on its batch
// dimension over all devices; ops without one, such as optimizer updates, split on their largest
// dimension, so gradients are reduce-scattered and weights all-gathered, as ZeRO does) and
// `tensor-parallel` (linears split column then row, Megatron-style, everything else data
// parallel: on CNNs Krizhevsky's one weird trick; on language models its vocabulary path still
// moves far more than Megatron's vocabulary-parallel loss, docs/cost_model.md).
#pragma once

#include "search/common/search_context.h"

namespace cleave::search {

Expected<plan::Plan> single(SearchContext const& ctx);
Expected<plan::Plan> data_parallel(SearchContext const& ctx);
Expected<plan::Plan> tensor_parallel(SearchContext const& ctx);

}  // namespace cleave::search
