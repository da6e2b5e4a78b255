// `cleave plan` (make a plan and evaluate it), `cleave simulate` (evaluate a saved plan, optionally
// writing the simulated timeline as a Chrome trace), `cleave compare` (every algorithm side by
// side on one model and cluster, optionally as HTML) and `cleave report` (a plan's HTML page).
#include <cstdio>
#include <memory>

#include "api/add_swaps.h"
#include "api/evaluate.h"
#include "api/html.h"
#include "api/plan_input.h"
#include "api/plan_search.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/interrupt.h"
#include "cli/measure.h"
#include "cluster/cluster_json.h"
#include "cluster/presets.h"
#include "ir/graph_json.h"
#include "plan/plan_json.h"
#include "report/memory_report.h"
#include "report/plan_report.h"
#include "search/common/progress.h"
#include "search/search.h"
#include "support/file_io.h"

namespace cleave::cli {
namespace {

// The search request of the command's flags (progress on stderr when it is a terminal).
Expected<api::SearchRequest> search_request(std::string const& algo, SearchFlags const& flags,
                                            std::uint64_t seed) {
  api::SearchRequest out;
  out.algorithm = algo;
  out.seed = seed;
  if (flags.budget_seconds) out.budget.time = Seconds(*flags.budget_seconds);
  out.budget.iterations = flags.budget_iterations;
  for (auto const& text : flags.options) {
    CLEAVE_TRY(auto setting, split_assignment(text, "--option"));
    out.options.push_back(std::move(setting));
  }
  out.progress = search::terminal_progress(stderr);
  return out;
}

void print(std::string const& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
}

// The table with its coverage (text output only: the JSON has measured_tasks and priced_tasks),
// and for a single row the devices it overflows in detail and its pools' fragmentation. With
// --swap (`swaps` per row), what each row's swaps did, under "swap" in the JSON.
void print_rows(std::string const& model, std::string const& cluster,
                std::vector<report::PlanRow> const& rows, std::string const& profile_path,
                bool json, std::vector<api::SwapOutcome> const& swaps = {}) {
  if (json && swaps.empty()) return print(report::rows_to_json(model, cluster, rows));
  if (json) return print(api::rows_with_swaps_to_json(model, cluster, rows, swaps));
  print(report::rows_to_text(model, cluster, rows));
  if (rows.size() == 1) {
    print(report::violations_to_text(rows.front().evaluation));
    print(report::pools_to_text(rows.front().evaluation));
  }
  for (std::size_t i = 0; i < swaps.size(); ++i)
    print(api::swaps_to_text(rows[i].algorithm, swaps[i]));
  if (profile_path.empty()) return;
  std::printf("\nprofile %s: compute and reduce tasks priced from measurements\n",
              profile_path.c_str());
  for (auto const& r : rows)
    std::printf("%-15s %lld of %lld\n", r.algorithm.c_str(),
                static_cast<long long>(r.prediction().measured_tasks),
                static_cast<long long>(r.prediction().priced_tasks));
}

// The model, the cluster and the pricing that `plan` and `compare` work on.
struct Problem {
  api::ModelInput model;
  std::unique_ptr<cluster::Cluster> cluster;  // a stable address: the cost model points at it
  Pricing pricing;
};

Expected<Problem> load_problem(std::string const& model, api::TrainingFlags const& training,
                               std::string const& cluster_spec, std::string const& profile,
                               std::string const& measure, ops::OpRegistry const& registry) {
  CLEAVE_TRY(auto loaded, cluster::load_cluster(cluster_spec));
  auto cluster = std::make_unique<cluster::Cluster>(std::move(loaded));
  api::TrainingFlags flags = training;
  if (flags.precision.empty()) flags.precision = api::default_precision(model, training, *cluster);
  CLEAVE_TRY(auto input, api::load_model(model, registry, flags));
  CLEAVE_TRY(auto pricing, load_pricing(*cluster, cluster_spec, profile, measure, registry));
  Problem out{std::move(input), std::move(cluster), std::move(pricing)};
  return out;
}

}  // namespace

int run_plan(ops::OpRegistry const& registry, PlanCommand const& cmd) {
  auto const& stop = stop_on_interrupt();
  auto problem =
      load_problem(cmd.model, cmd.training, cmd.cluster, cmd.profile, cmd.measure, registry);
  if (!problem) return report(problem.error());
  auto const& model = problem->model;
  auto const& cost = problem->pricing.cost;
  auto ideal = api::ideal_step_time(model, *cost, registry);
  if (!ideal) return report(ideal.error());
  auto request = search_request(cmd.algo, cmd.search, cmd.seed);
  if (!request) return report(request.error());
  request->budget.stop = &stop;
  auto p = api::make_plan(model, *cost, cmd.cluster, *request, registry);
  if (!p) return report(p.error());
  // Written before it is evaluated, so that a long search survives an evaluation that fails.
  if (!cmd.output.empty()) {
    auto st = plan::save_plan(*p, cmd.output);
    if (!st) return report(st.error());
  }
  auto row = api::plan_row(model, *p, *cost, *ideal, registry);
  if (!row) return report(row.error());
  std::vector<report::PlanRow> rows;
  rows.push_back(std::move(*row));
  std::vector<plan::Plan> plans{std::move(*p)};
  std::vector<api::SwapOutcome> swaps;
  if (cmd.swap) {
    auto added = api::add_swaps(model, *cost, registry, plans, rows);
    if (!added) return report(added.error());
    swaps = std::move(*added);
    if (!cmd.output.empty() && swaps.front().changed()) {
      auto st = plan::save_plan(plans.front(), cmd.output);
      if (!st) return report(st.error());
    }
  }
  print_rows(model.label, cmd.cluster, rows, cmd.profile + cmd.measure, cmd.json, swaps);
  if (auto st = save_measured(problem->pricing); !st) return report(st.error());
  if (!cmd.json && !cmd.output.empty()) std::printf("\nwrote %s\n", cmd.output.c_str());
  // Still over with swaps: the plan written (if asked for) has them, and the exit says so.
  if (cmd.swap)
    if (auto st = api::swaps_fit(swaps.front()); !st) return report(st.error());
  if (!plans.front().provenance.interrupted) return 0;
  std::fprintf(stderr,
               "interrupted: the search stopped early; the plan above is the best found%s\n",
               cmd.output.empty() ? "" : (" (written to " + cmd.output + ")").c_str());
  return interrupted_exit_code;
}

int run_simulate(ops::OpRegistry const& registry, SimulateCommand const& cmd) {
  auto input = api::load_plan_input(cmd.plan, registry, cmd.training);
  if (!input) return report(input.error());
  auto const& [p, model, cluster] = *input;
  auto pricing = load_pricing(cluster, p.cluster, cmd.profile, cmd.measure, registry);
  if (!pricing) return report(pricing.error());
  auto const& cost = pricing->cost;
  auto evaluation = api::evaluate(model, p, *cost, registry);
  if (!evaluation)
    return report(evaluation.error().with_context("in plan file '" + cmd.plan + "'"));
  auto ideal = api::ideal_step_time(model, *cost, registry);
  if (!ideal) return report(ideal.error());
  report::PlanRow row{p.provenance.algorithm, std::move(*evaluation), *ideal,
                      p.provenance.search_time_s};
  std::vector<report::PlanRow> rows;
  rows.push_back(std::move(row));
  std::vector<api::SwapOutcome> swaps;
  if (cmd.swap) {
    std::vector<plan::Plan> plans{p};
    auto added = api::add_swaps(model, *cost, registry, plans, rows);
    if (!added) return report(added.error());
    swaps = std::move(*added);
  }
  if (!cmd.trace.empty()) {
    auto const& e = rows.front().evaluation;
    auto st =
        write_file_atomic(cmd.trace, report::chrome_trace(model.training, e.program, e.prediction));
    if (!st) return report(st.error());
  }
  print_rows(model.label, p.cluster, rows, cmd.profile + cmd.measure, cmd.json, swaps);
  if (auto st = save_measured(*pricing); !st) return report(st.error());
  if (cmd.swap)
    if (auto st = api::swaps_fit(swaps.front()); !st) return report(st.error());
  return 0;
}

int run_compare(ops::OpRegistry const& registry, CompareCommand const& cmd) {
  auto problem =
      load_problem(cmd.model, cmd.training, cmd.cluster, cmd.profile, cmd.measure, registry);
  if (!problem) return report(problem.error());
  if (auto st = list_pieces(problem->pricing, cmd.list_pieces, registry); !st)
    return report(st.error());
  auto const& model = problem->model;
  auto const& cost = problem->pricing.cost;
  auto request = search_request("", cmd.search, /*seed=*/0);
  if (!request) return report(request.error());
  std::vector<plan::Plan> plans;
  auto rows = api::compare(model, *cost, cmd.cluster, cmd.algos, *request, registry, &plans);
  if (!rows) return report(rows.error());
  std::vector<api::SwapOutcome> swaps;
  if (cmd.swap) {
    auto added = api::add_swaps(model, *cost, registry, plans, *rows);
    if (!added) return report(added.error());
    swaps = std::move(*added);
  }
  if (!cmd.html.empty()) {
    auto html = api::compare_html(model, cmd.cluster, *cost, plans, *rows, registry);
    if (!html) return report(html.error());
    auto st = write_file_atomic(cmd.html, *html);
    if (!st) return report(st.error());
  }
  print_rows(model.label, cmd.cluster, *rows, cmd.profile + cmd.measure, cmd.json, swaps);
  if (auto st = save_measured(problem->pricing); !st) return report(st.error());
  if (auto st = save_pieces(problem->pricing); !st) return report(st.error());
  if (!cmd.json && !cmd.html.empty()) std::printf("\nwrote %s\n", cmd.html.c_str());
  return 0;
}

int run_report(ops::OpRegistry const& registry, ReportCommand const& cmd) {
  auto input = api::load_plan_input(cmd.plan, registry, cmd.training);
  if (!input) return report(input.error());
  auto cost = api::load_cost_model(input->cluster, cmd.profile);
  if (!cost) return report(cost.error());
  auto html = api::report_html(*input, *cost, cmd.run, registry);
  if (!html) return report(html.error().with_context("in plan file '" + cmd.plan + "'"));
  auto st = write_file_atomic(cmd.output, *html);
  if (!st) return report(st.error());
  std::printf("wrote %s\n", cmd.output.c_str());
  return 0;
}

}  // namespace cleave::cli
