// `--swap` (issue 18 item 5): any plan that overflows a device, whatever searched it, gets swaps
// on each device over capacity (api/swap_fix.h's plan_device_swaps, SwapAdvisor's planner), is
// evaluated again, and says per device what it was over, what was swapped, whether it fits now
// (what no swap may move, where it does not) and what the swaps cost in step time
// (docs/search_swapadvisor.md "Swaps for any plan").
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "api/model_input.h"
#include "api/swap_fix.h"
#include "report/plan_report.h"

namespace cleave::api {

struct SwapOutcome {
  plan::Plan plan;             // with the swaps and every device's order; unchanged if none over
  sim::Evaluation evaluation;  // of `plan`
  double step_time_before_s = 0;
  std::vector<std::int64_t> peak_before_bytes;  // per device
  std::vector<DeviceSwaps> devices;             // per device over capacity before
  bool changed() const { return !devices.empty(); }
  bool fits() const { return evaluation.violations.empty(); }
  double slowdown() const { return evaluation.prediction.step_time_s / step_time_before_s; }
};

// `plan` with swaps on every device its evaluation `before` overflows, evaluated again. Errors:
// the plan with swaps does not evaluate (a bug in the planner's mapping, reported not hidden).
Expected<SwapOutcome> add_swaps(ModelInput const& model, plan::Plan const& plan,
                                sim::Evaluation const& before, cost::CostModel const& cost,
                                ops::OpRegistry const& registry);

// `--swap` on rows of `plan`, `simulate` or `compare`: each of `plans` (rows[i] its evaluation)
// with swaps on the devices it overflows; rows[i] then evaluates plans[i] with them. Per row,
// what the swaps did.
Expected<std::vector<SwapOutcome>> add_swaps(ModelInput const& model, cost::CostModel const& cost,
                                             ops::OpRegistry const& registry,
                                             std::vector<plan::Plan>& plans,
                                             std::vector<report::PlanRow>& rows);

// A device the swaps leave over capacity: its name, by how much, and what at its peak no swap may
// move, by role. Ok when every device fits.
Status swaps_fit(SwapOutcome const& outcome);

// Per device over capacity before: over by, movable at the peak, swapped (blocks and bytes), peak
// after against capacity, fits; the step without and with the swaps.
std::string swaps_to_text(std::string const& algorithm, SwapOutcome const& outcome);
// The same as an object (bytes, seconds): changed, fits, step_time_before_s, step_time_s,
// slowdown, swapped_bytes, devices [{device, name, over_bytes, movable_bytes, unmovable {role:
// bytes}, swaps, swapped_bytes, peak_before_bytes, peak_bytes, capacity_bytes, fits, why_not}].
nlohmann::json swaps_to_json(SwapOutcome const& outcome);
// report::rows_to_json with each row's swaps under "swap", as `--swap --json` prints them.
std::string rows_with_swaps_to_json(std::string const& model, std::string const& cluster,
                                    std::vector<report::PlanRow> const& rows,
                                    std::vector<SwapOutcome> const& swaps);

}  // namespace cleave::api
