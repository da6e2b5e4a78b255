#include "api/rebalance.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <numeric>

#include "api/evaluate.h"
#include "runtime/calibrate.h"
#include "runtime/synthetic_data.h"
#include "search/search.h"

namespace cleave::api {
namespace {

double median(std::vector<double> v) {
  CLEAVE_ASSERT(!v.empty(), "a median of no values");
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Steps, seconds, devices: the figures of a phase's counted steps (all but its warm-up step).
void measure(PlanPhase& phase) {
  auto const& steps = phase.run.steps;
  CLEAVE_ASSERT(steps.size() >= 2, "a phase is a warm-up step and measured steps");
  std::vector<double> seconds;
  phase.device_compute_s.assign(steps.front().devices.size(), 0.0);
  for (std::size_t s = 1; s < steps.size(); ++s) {
    seconds.push_back(steps[s].step_s);
    for (std::size_t d = 0; d < phase.device_compute_s.size(); ++d)
      phase.device_compute_s[d] +=
          steps[s].devices[d].compute_s / static_cast<double>(steps.size() - 1);
  }
  phase.step_s = median(std::move(seconds));
  double mean = std::accumulate(phase.device_compute_s.begin(), phase.device_compute_s.end(), 0.0) /
                static_cast<double>(phase.device_compute_s.size());
  double busiest = *std::max_element(phase.device_compute_s.begin(), phase.device_compute_s.end());
  phase.imbalance = mean > 0 ? busiest / mean : 1.0;
}

// Runs `steps` steps of `plan` from `sources`, starting at step `first_step` of the whole run.
Expected<PlanPhase> run_phase(RebalanceRequest const& request, plan::Plan plan,
                              cost::CostModel const& cost, int first_step, int steps,
                              runtime::Values sources) {
  CLEAVE_TRY(sim::Evaluation evaluation, evaluate(request.model, plan, cost, request.registry,
                                                  lower::CollectiveForm::explicit_transfers));
  std::vector<runtime::DeviceInfo> devices;
  for (auto const& d : cost.cluster().devices())
    devices.push_back({d.name, d.memory});
  PlanPhase phase;
  phase.plan = std::move(plan);
  phase.program = evaluation.program;
  phase.prediction = std::move(evaluation.prediction);
  phase.first_step = first_step;
  phase.last_step = first_step + steps - 1;
  CLEAVE_TRY(runtime::Executor executor,
             runtime::Executor::create(request.model.training, std::move(evaluation.program),
                                       request.registry, std::move(devices)));
  runtime::TrainingConfig config = request.training;
  config.steps = steps;
  auto run = runtime::run_training_from(executor, config, std::move(sources));
  if (!run) return std::move(run).error().with_context(fmt::format("from step {}", first_step));
  phase.run = std::move(*run);
  measure(phase);
  if (request.check_tolerance) {
    auto check =
        runtime::check_against_reference(request.model.training, request.registry, phase.run,
                                         config, request.loss, *request.check_tolerance);
    if (!check) return std::move(check).error().with_context("checking against the reference");
    phase.check = std::move(*check);
  }
  return phase;
}

// The given profile with every piece the phase ran replaced by its measured time (the median of
// its counted steps: runtime::add_measurements, as `cleave calibrate` makes a profile); the
// device kind's calibration becomes the measured one, with the given one's efficiencies for op
// types the phase did not run.
Expected<cost::ProfileTable> measured_profile(RebalanceRequest const& request,
                                              PlanPhase const& phase) {
  cluster::Device const& device = request.cost.cluster().devices().front();
  cost::ProfileTable const* given = request.cost.profile();
  cost::DeviceCalibration const* given_calibration =
      given ? given->calibration(device.kind) : nullptr;
  runtime::MachineRates rates;
  rates.peak = device.peak_for(ir::DType::fp32).value_or(FlopsPerSecond(0));
  rates.launch = given_calibration && given_calibration->launch ? *given_calibration->launch
                                                                : request.cost.options().launch;
  runtime::MeasuredSteps steps;
  steps.graph = &request.model.training;
  steps.program = &phase.program;
  for (std::size_t s = 1; s < phase.run.steps.size(); ++s) {
    steps.spans.push_back(phase.run.steps[s].spans);
    steps.step_seconds.push_back(phase.run.steps[s].step_s);
  }
  cost::ProfileTable measured;
  CLEAVE_CHECK_OK(runtime::add_measurements(measured, {steps}, rates, device.kind));
  cost::ProfileTable out;
  out.source =
      fmt::format("cleave run --rebalance: steps {}-{} of a {} plan of {}", phase.first_step + 1,
                  phase.last_step, phase.plan.provenance.algorithm, phase.plan.model);
  for (auto& entry : measured.entries())
    CLEAVE_CHECK_OK(out.add(std::move(entry)));
  cost::DeviceCalibration calibration = *measured.calibration(device.kind);
  if (given) {
    for (auto& entry : given->entries())
      if (!out.find(entry.key.view())) CLEAVE_CHECK_OK(out.add(std::move(entry)));
    for (auto const& [kind, c] : given->calibrations())
      if (kind != device.kind) CLEAVE_CHECK_OK(out.add_calibration(kind, c));
  }
  if (given_calibration)
    for (auto const& [op, e] : given_calibration->efficiency)
      calibration.efficiency.emplace(op, e);
  CLEAVE_CHECK_OK(out.add_calibration(device.kind, std::move(calibration)));
  return out;
}

// The plan's algorithm again, with its recorded options, seed and budget, priced by `cost`.
Expected<plan::Plan> repartition(RebalanceRequest const& request, cost::CostModel const& cost) {
  auto const& prov = request.plan.provenance;
  search::Budget budget;
  if (prov.budget_time_s) budget.time = Seconds(*prov.budget_time_s);
  budget.iterations = prov.budget_iterations;
  search::SearchContext ctx{
      request.model.training, request.registry, cost,   request.plan.cluster, request.plan.model,
      request.model.batch,    prov.seed,        budget, prov.options};
  auto p = search::make_plan(prov.algorithm, ctx);
  if (!p) return std::move(p).error().with_context("partitioning again with measured times");
  return p;
}

}  // namespace

std::vector<std::string> const& rebalancing_algorithms() {
  // Those that balance the op times they are given; the others place by rule (data-parallel,
  // expert), minimise bytes (tofu) or search a space of their own (flexflow: left out, its
  // budgeted search is not what a run should wait for between steps).
  static std::vector<std::string> const names = {"mincut", "mincut-split"};
  return names;
}

Status check_rebalance(plan::Plan const& plan, cluster::Cluster const& cluster, int steps,
                       RebalanceOptions const& options) {
  auto const& names = rebalancing_algorithms();
  if (std::find(names.begin(), names.end(), plan.provenance.algorithm) == names.end())
    return Error(ErrorCode::invalid_argument,
                 fmt::format("--rebalance partitions again with the plan's algorithm, which must "
                             "balance measured op times ({}); this plan {}: plan with --algo "
                             "mincut or mincut-split",
                             fmt::join(names, ", "),
                             plan.provenance.algorithm.empty()
                                 ? std::string("records no algorithm")
                                 : "was made by '" + plan.provenance.algorithm + "'"));
  for (auto const& d : cluster.devices())
    if (d.kind != cluster.devices().front().kind)
      return Error(ErrorCode::invalid_argument,
                   fmt::format("--rebalance measures every device on this machine's cores, so it "
                               "needs devices of one kind; cluster {} has '{}' and '{}'",
                               plan.cluster, cluster.devices().front().kind, d.kind));
  if (!std::isfinite(options.threshold) || options.threshold < 1)
    return Error(ErrorCode::invalid_argument,
                 fmt::format("--rebalance-threshold {}: it is the busiest device's compute time "
                             "over the devices' mean, so at least 1 (1.1: 10% over the mean)",
                             options.threshold));
  if (options.measure_steps < 1)
    return Error(
        ErrorCode::invalid_argument,
        fmt::format("--rebalance-steps {}: measure at least 1 step", options.measure_steps));
  int needed = options.measure_steps + 3;
  if (steps < needed)
    return Error(ErrorCode::invalid_argument,
                 fmt::format("--rebalance with {} measured steps needs --steps {} or more (a "
                             "warm-up step, the measured steps, then a warm-up and a measured "
                             "step after the switch), not {}",
                             options.measure_steps, needed, steps));
  return Status::ok();
}

Expected<RebalancedRun> run_rebalanced(RebalanceRequest const& request) {
  cluster::Cluster const& cluster = request.cost.cluster();
  CLEAVE_CHECK_OK(check_rebalance(request.plan, cluster, request.training.steps, request.options));
  RebalancedRun out;
  out.threshold = request.options.threshold;
  ir::Graph const& graph = request.model.training;
  int const first = 1 + request.options.measure_steps;
  CLEAVE_TRY(out.before, run_phase(request, request.plan, request.cost, 1, first,
                                   runtime::synthetic_sources(graph, request.training.seed)));
  CLEAVE_TRY(out.measured, measured_profile(request, out.before));
  cost::CostModel measured_cost(cluster, request.cost.options(), out.measured);
  plan::Plan next = request.plan;
  std::string const imbalance =
      fmt::format("measured imbalance {:.3f} (busiest device's compute over the mean, steps "
                  "2-{})",
                  out.before.imbalance, first);
  if (out.before.imbalance <= out.threshold) {
    out.decision = fmt::format("{} <= threshold {:.3f}: kept the plan", imbalance, out.threshold);
  } else {
    CLEAVE_TRY(plan::Plan candidate, repartition(request, measured_cost));
    CLEAVE_TRY(sim::Evaluation old_eval,
               evaluate(request.model, request.plan, measured_cost, request.registry));
    CLEAVE_TRY(sim::Evaluation new_eval,
               evaluate(request.model, candidate, measured_cost, request.registry));
    out.predicted_before_s = old_eval.prediction.step_time_s;
    out.predicted_after_s = new_eval.prediction.step_time_s;
    out.switched = *out.predicted_after_s < *out.predicted_before_s && new_eval.violations.empty();
    if (out.switched) {
      out.decision = fmt::format("{} > threshold {:.3f}: partitioned again with {} on the "
                                 "measured times and switched after step {}",
                                 imbalance, out.threshold, candidate.provenance.algorithm, first);
      next = std::move(candidate);
    } else {
      out.decision = fmt::format("{} > threshold {:.3f}: partitioned again with {} on the "
                                 "measured times, but the new plan is predicted no faster "
                                 "(or over capacity): kept the plan",
                                 imbalance, out.threshold, candidate.provenance.algorithm);
    }
  }
  cost::CostModel const& next_cost = out.switched ? measured_cost : request.cost;
  CLEAVE_TRY(out.after, run_phase(request, std::move(next), next_cost, first + 1,
                                  request.training.steps - first,
                                  runtime::next_sources(graph, out.before.run)));
  return out;
}

}  // namespace cleave::api
