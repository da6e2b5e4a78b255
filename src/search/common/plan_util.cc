#include "search/common/plan_util.h"

#include <algorithm>

#include "ir/graph_json.h"

namespace cleave::search {

void slots_in(tdl::BoundIndex const& index, std::vector<int>& out) {
  if (index.kind == tdl::BoundIndex::Kind::gather) return;
  for (auto [slot, coef] : index.var_terms)
    out.push_back(slot);
  for (auto const& c : index.children)
    slots_in(c, out);
}

void split_dim(plan::OpConfig& config, std::size_t dim, std::int64_t extent, int ways,
               int first_device) {
  std::int64_t k = std::min<std::int64_t>(ways, extent);
  config.degrees[dim] = k;
  config.devices.resize(static_cast<std::size_t>(k));
  for (std::int64_t i = 0; i < k; ++i)
    config.devices[static_cast<std::size_t>(i)] = first_device + static_cast<int>(i);
}

plan::Plan plan_from_configs(SearchContext const& ctx, std::vector<plan::OpConfig> configs,
                             plan::FetchPolicy fetch, std::string config) {
  plan::Plan p;  // the ops' defaults come with `configs`: no op is bound again
  p.graph_fingerprint = ir::graph_fingerprint(ctx.graph);
  p.ops = std::move(configs);
  p.fetch = fetch;
  p.provenance.config = std::move(config);
  return p;
}

}  // namespace cleave::search
