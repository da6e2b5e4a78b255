#include "api/plan_search.h"

#include "api/evaluate.h"
#include "search/search.h"

namespace cleave::api {

Expected<plan::Plan> make_plan(ModelInput const& model, cost::CostModel const& cost,
                               std::string const& cluster_spec, SearchRequest const& request,
                               ops::OpRegistry const& registry) {
  search::SearchContext ctx{model.training,  registry,        cost,         cluster_spec,
                            model.label,     model.batch,     request.seed, request.budget,
                            request.options, request.progress};
  return search::make_plan(request.algorithm, ctx);
}

Expected<report::PlanRow> plan_row(ModelInput const& model, plan::Plan const& plan,
                                   cost::CostModel const& cost, double ideal_step_s,
                                   ops::OpRegistry const& registry) {
  report::PlanRow row;
  row.algorithm = plan.provenance.algorithm;
  row.search_time_s = plan.provenance.search_time_s;
  CLEAVE_TRY(row.evaluation, evaluate(model, plan, cost, registry));
  row.ideal_step_time_s = ideal_step_s;
  return row;
}

Expected<std::vector<report::PlanRow>>
compare(ModelInput const& model, cost::CostModel const& cost, std::string const& cluster_spec,
        std::vector<std::string> algorithms, SearchRequest const& request,
        ops::OpRegistry const& registry, std::vector<plan::Plan>* plans) {
  if (algorithms.empty()) algorithms = search::algorithms();
  CLEAVE_TRY(double ideal, ideal_step_time(model, cost, registry));
  std::vector<report::PlanRow> rows;
  for (auto const& a : algorithms) {
    SearchRequest own = request;
    own.algorithm = a;
    CLEAVE_TRY(own.options, search::settings_for(a, algorithms, request.options));
    auto p = make_plan(model, cost, cluster_spec, own, registry);
    if (!p) return std::move(p).error().with_context("in algorithm '" + a + "'");
    auto row = plan_row(model, *p, cost, ideal, registry);
    if (!row) return std::move(row).error().with_context("in algorithm '" + a + "'");
    rows.push_back(std::move(*row));
    if (plans) plans->push_back(std::move(*p));
  }
  return rows;
}

}  // namespace cleave::api
