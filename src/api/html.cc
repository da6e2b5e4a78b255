#include "api/html.h"

#include "api/swap_fix.h"
#include "report/html_report.h"
#include "support/assert.h"
#include "support/file_io.h"
#include "support/json_read.h"

namespace cleave::api {

namespace {

report::HtmlPlan html_plan(std::string title, ModelInput const& model, plan::Plan const& p,
                           sim::Evaluation const& e, cost::CostModel const& cost,
                           ops::OpRegistry const& registry) {
  report::FixContext ctx{{model.training, registry, p, cost, model.batch, e}, {}};
  ctx.swap = [&ctx](sim::MemoryUse const& use) { return swap_fix(ctx, use); };
  auto fixes = report::memory_fixes(ctx);
  return {std::move(title), p, e, std::move(fixes), std::nullopt};
}

}  // namespace

Expected<std::string> report_html(PlanInput const& input, cost::CostModel const& cost,
                                  std::string const& run_trace, ops::OpRegistry const& registry) {
  auto const& [p, model, cluster] = input;
  CLEAVE_TRY(sim::Evaluation e, sim::evaluate({model.training, registry, p, cost, model.batch}));
  std::string title = p.provenance.algorithm.empty() ? "plan" : p.provenance.algorithm;
  auto hp = html_plan(title, model, p, e, cost, registry);
  if (!run_trace.empty()) {
    CLEAVE_TRY(std::string text, read_file(run_trace));
    auto trace = json_read::parse(text);
    if (!trace) return std::move(trace).error().with_context("in run trace '" + run_trace + "'");
    hp.measured = std::move(*trace);
  }
  std::vector<report::HtmlPlan> plans;
  plans.push_back(std::move(hp));
  auto html = report::html_report({model.label, p.cluster, model.training, registry}, plans);
  if (!html && !run_trace.empty())
    return std::move(html).error().with_context("in run trace '" + run_trace + "'");
  return html;
}

Expected<std::string> compare_html(ModelInput const& model, std::string const& cluster_spec,
                                   cost::CostModel const& cost,
                                   std::vector<plan::Plan> const& plans,
                                   std::vector<report::PlanRow> const& rows,
                                   ops::OpRegistry const& registry) {
  CLEAVE_ASSERT(plans.size() == rows.size(), "a plan per row");
  std::vector<report::HtmlPlan> sections;
  for (std::size_t i = 0; i < rows.size(); ++i)
    sections.push_back(
        html_plan(rows[i].algorithm, model, plans[i], rows[i].evaluation, cost, registry));
  return report::html_report({model.label, cluster_spec, model.training, registry}, sections);
}

}  // namespace cleave::api
