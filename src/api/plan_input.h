// What every caller that takes a saved plan needs: the plan, and the model and cluster rebuilt
// from what the plan records (its model spec or file, its cluster spec or file, checked against
// the cluster's fingerprint; sim::evaluate checks the plan's devices against the cluster).
#pragma once

#include <string>

#include "api/model_input.h"
#include "cluster/cluster.h"
#include "cost/cost_model.h"
#include "plan/plan.h"

namespace cleave::api {

struct PlanInput {
  plan::Plan plan;
  ModelInput model;
  cluster::Cluster cluster;
};

// The cost model, with the cleave.profile/1 table at `profile_path` if one is given.
Expected<cost::CostModel> load_cost_model(cluster::Cluster const& cluster,
                                          std::string const& profile_path);

Expected<PlanInput> load_plan_input(std::string const& path, ops::OpRegistry const& registry,
                                    TrainingFlags const& flags);

}  // namespace cleave::api
