// `cleave plan` (make a plan and evaluate it), `cleave simulate` (evaluate a saved plan, optionally
// writing the simulated timeline as a Chrome trace) and `cleave compare` (every algorithm side by
// side on one model and cluster).
#include <cstdio>

#include "api/evaluate.h"
#include "api/plan_input.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/interrupt.h"
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

// What a search is given besides the model and the cluster, from the command's flags.
struct SearchSettings {
  search::Budget budget;
  search::OptionSettings options;
  std::uint64_t seed = 0;
};

Expected<SearchSettings> search_settings(SearchFlags const& flags, std::uint64_t seed) {
  SearchSettings out;
  out.seed = seed;
  if (flags.budget_seconds) out.budget.time = Seconds(*flags.budget_seconds);
  out.budget.iterations = flags.budget_iterations;
  for (auto const& text : flags.options) {
    CLEAVE_TRY(auto setting, split_assignment(text, "--option"));
    out.options.push_back(std::move(setting));
  }
  return out;
}

// `ideal_step_s` is computed once per model and cluster (api::ideal_step_time) and shared by the
// rows.
Expected<report::PlanRow> plan_row(api::ModelInput const& model, cost::CostModel const& cost,
                                   std::string const& cluster_spec, std::string const& algo,
                                   SearchSettings const& settings, double ideal_step_s,
                                   ops::OpRegistry const& registry,
                                   plan::Plan* plan_out = nullptr) {
  search::SearchContext ctx{model.training,
                            registry,
                            cost,
                            cluster_spec,
                            model.label,
                            model.batch,
                            settings.seed,
                            settings.budget,
                            settings.options,
                            search::terminal_progress(stderr)};
  CLEAVE_TRY(plan::Plan p, search::make_plan(algo, ctx));
  report::PlanRow row;
  row.algorithm = algo;
  row.search_time_s = p.provenance.search_time_s;
  CLEAVE_TRY(row.evaluation, api::evaluate(model, p, cost, registry));
  row.ideal_step_time_s = ideal_step_s;
  if (plan_out) *plan_out = std::move(p);
  return row;
}

void print(std::string const& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
}

// The table with its coverage (text output only: the JSON has measured_tasks and priced_tasks),
// and for a single row the devices it overflows in detail.
void print_rows(std::string const& model, std::string const& cluster,
                std::vector<report::PlanRow> const& rows, std::string const& profile_path,
                bool json) {
  if (json) return print(report::rows_to_json(model, cluster, rows));
  print(report::rows_to_text(model, cluster, rows));
  if (rows.size() == 1) print(report::violations_to_text(rows.front().evaluation));
  if (profile_path.empty()) return;
  std::printf("\nprofile %s: compute and reduce tasks priced from measurements\n",
              profile_path.c_str());
  for (auto const& r : rows)
    std::printf("%-15s %lld of %lld\n", r.algorithm.c_str(),
                static_cast<long long>(r.prediction().measured_tasks),
                static_cast<long long>(r.prediction().priced_tasks));
}

}  // namespace

int run_plan(ops::OpRegistry const& registry, PlanCommand const& cmd) {
  auto const& stop = stop_on_interrupt();
  auto model = api::load_model(cmd.model, registry, cmd.training);
  if (!model) return report(model.error());
  auto cluster = cluster::load_cluster(cmd.cluster);
  if (!cluster) return report(cluster.error());
  auto cost = api::load_cost_model(*cluster, cmd.profile);
  if (!cost) return report(cost.error());
  auto ideal = api::ideal_step_time(*model, *cost, registry);
  if (!ideal) return report(ideal.error());
  auto settings = search_settings(cmd.search, cmd.seed);
  if (!settings) return report(settings.error());
  settings->budget.stop = &stop;
  plan::Plan p;
  auto row = plan_row(*model, *cost, cmd.cluster, cmd.algo, *settings, *ideal, registry, &p);
  if (!row) return report(row.error());
  if (!cmd.output.empty()) {
    auto st = plan::save_plan(p, cmd.output);
    if (!st) return report(st.error());
  }
  std::vector<report::PlanRow> rows;
  rows.push_back(std::move(*row));
  print_rows(model->label, cmd.cluster, rows, cmd.profile, cmd.json);
  if (!cmd.json && !cmd.output.empty()) std::printf("\nwrote %s\n", cmd.output.c_str());
  if (!p.provenance.interrupted) return 0;
  std::fprintf(stderr,
               "interrupted: the search stopped early; the plan above is the best found%s\n",
               cmd.output.empty() ? "" : (" (written to " + cmd.output + ")").c_str());
  return interrupted_exit_code;
}

int run_simulate(ops::OpRegistry const& registry, SimulateCommand const& cmd) {
  auto input = api::load_plan_input(cmd.plan, registry, cmd.training);
  if (!input) return report(input.error());
  auto const& [p, model, cluster] = *input;
  auto cost = api::load_cost_model(cluster, cmd.profile);
  if (!cost) return report(cost.error());
  auto evaluation = api::evaluate(model, p, *cost, registry);
  if (!evaluation)
    return report(evaluation.error().with_context("in plan file '" + cmd.plan + "'"));
  auto ideal = api::ideal_step_time(model, *cost, registry);
  if (!ideal) return report(ideal.error());
  report::PlanRow row{p.provenance.algorithm, std::move(*evaluation), *ideal,
                      p.provenance.search_time_s};
  if (!cmd.trace.empty()) {
    auto const& e = row.evaluation;
    auto st =
        write_file_atomic(cmd.trace, report::chrome_trace(model.training, e.program, e.prediction));
    if (!st) return report(st.error());
  }
  std::vector<report::PlanRow> rows;
  rows.push_back(std::move(row));
  print_rows(model.label, p.cluster, rows, cmd.profile, cmd.json);
  return 0;
}

int run_compare(ops::OpRegistry const& registry, CompareCommand const& cmd) {
  auto model = api::load_model(cmd.model, registry, cmd.training);
  if (!model) return report(model.error());
  auto cluster = cluster::load_cluster(cmd.cluster);
  if (!cluster) return report(cluster.error());
  std::vector<std::string> algos = cmd.algos.empty() ? search::algorithms() : cmd.algos;
  auto cost = api::load_cost_model(*cluster, cmd.profile);
  if (!cost) return report(cost.error());
  auto ideal = api::ideal_step_time(*model, *cost, registry);
  if (!ideal) return report(ideal.error());
  auto settings = search_settings(cmd.search, /*seed=*/0);
  if (!settings) return report(settings.error());
  std::vector<report::PlanRow> rows;
  for (auto const& a : algos) {
    SearchSettings own = *settings;
    auto options = search::settings_for(a, algos, settings->options);
    if (!options) return report(options.error());
    own.options = std::move(*options);
    auto row = plan_row(*model, *cost, cmd.cluster, a, own, *ideal, registry);
    if (!row) return report(row.error().with_context("in algorithm '" + a + "'"));
    rows.push_back(std::move(*row));
  }
  print_rows(model->label, cmd.cluster, rows, cmd.profile, cmd.json);
  return 0;
}

}  // namespace cleave::cli
