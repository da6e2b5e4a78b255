// The HTML report of a saved plan (`cleave report`) or of plans side by side (`cleave compare
// --html`), with each over-capacity device's fixes evaluated (report/html_report.h).
#pragma once

#include <string>
#include <vector>

#include "api/plan_input.h"
#include "report/plan_report.h"

namespace cleave::api {

// `run_trace`: a Chrome trace of a run of the plan (`cleave run --trace`) drawn beside the
// simulated timeline; empty: none.
Expected<std::string> report_html(PlanInput const& input, cost::CostModel const& cost,
                                  std::string const& run_trace, ops::OpRegistry const& registry);

// One section per row, with the plan it evaluates (api::compare's `plans`).
Expected<std::string> compare_html(ModelInput const& model, std::string const& cluster_spec,
                                   cost::CostModel const& cost,
                                   std::vector<plan::Plan> const& plans,
                                   std::vector<report::PlanRow> const& rows,
                                   ops::OpRegistry const& registry);

}  // namespace cleave::api
