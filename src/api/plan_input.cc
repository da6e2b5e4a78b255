#include "api/plan_input.h"

#include "cluster/cluster_json.h"
#include "cluster/presets.h"
#include "plan/plan_json.h"

namespace cleave::api {

Expected<PlanInput> load_plan_input(std::string const& path, ops::OpRegistry const& registry,
                                    TrainingFlags const& flags) {
  CLEAVE_TRY(plan::Plan p, plan::load_plan(path));
  auto model = load_model(p.model, registry, flags);
  if (!model) return std::move(model).error().with_context("rebuilding the plan's model");
  auto cluster = cluster::load_cluster(p.cluster);
  if (!cluster) return std::move(cluster).error().with_context("rebuilding the plan's cluster");
  if (!p.cluster_fingerprint.empty() && p.cluster_fingerprint != cluster::fingerprint_hex(*cluster))
    return Error(ErrorCode::invalid_argument,
                 "the plan was made for cluster " + p.cluster + " with fingerprint " +
                     p.cluster_fingerprint + ", but " + p.cluster + " is now " +
                     cluster::fingerprint_hex(*cluster) +
                     " (its file or preset changed): plan again for this cluster");
  return PlanInput{std::move(p), std::move(*model), std::move(*cluster)};
}

Expected<cost::CostModel> load_cost_model(cluster::Cluster const& cluster,
                                          std::string const& profile_path) {
  if (profile_path.empty()) return cost::CostModel(cluster);
  CLEAVE_TRY(cost::ProfileTable table, cost::load_profile(profile_path));
  return cost::CostModel(cluster, {}, std::move(table));
}

}  // namespace cleave::api
