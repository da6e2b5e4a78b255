// A plan searched for a loaded model on a cluster and evaluated (what `cleave plan` and `cleave
// compare` do, and Python's plan() and compare()): the search request as the user gave it, the
// search run by name (search::make_plan), and the plan's evaluation as a report row.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "api/model_input.h"
#include "report/plan_report.h"
#include "search/common/search_context.h"

namespace cleave::api {

struct SearchRequest {
  std::string algorithm = "data-parallel";
  search::OptionSettings options;  // ("key", "value") as the user wrote them
  search::Budget budget;
  std::uint64_t seed = 0;
  search::ProgressFn progress;  // empty: no progress reports
};

// The cluster is the cost model's; `cluster_spec` is what the plan records of it.
Expected<plan::Plan> make_plan(ModelInput const& model, cost::CostModel const& cost,
                               std::string const& cluster_spec, SearchRequest const& request,
                               ops::OpRegistry const& registry);

// A plan's evaluation as a report row; `ideal_step_s` is ideal_step_time's (computed once per
// model and cluster).
Expected<report::PlanRow> plan_row(ModelInput const& model, plan::Plan const& plan,
                                   cost::CostModel const& cost, double ideal_step_s,
                                   ops::OpRegistry const& registry);

// Every algorithm of `algorithms` (empty: all) with `request`'s options, seed and budget; an
// option applies to each algorithm that declares it (search::settings_for). `plans`, if given,
// receives each row's plan.
Expected<std::vector<report::PlanRow>>
compare(ModelInput const& model, cost::CostModel const& cost, std::string const& cluster_spec,
        std::vector<std::string> algorithms, SearchRequest const& request,
        ops::OpRegistry const& registry, std::vector<plan::Plan>* plans = nullptr);

}  // namespace cleave::api
