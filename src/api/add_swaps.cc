#include "api/add_swaps.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/assert.h"
#include "support/format_bytes.h"

namespace cleave::api {

namespace {

DeviceSwaps const* swaps_of(SwapOutcome const& outcome, int device) {
  for (auto const& d : outcome.devices)
    if (d.device == device) return &d;
  return nullptr;
}

// "weights 1.6 GiB, optimizer state 1.1 GiB": the roles with bytes, largest first.
std::string unmovable_text(DeviceSwaps const& d) {
  std::vector<std::size_t> roles;
  for (std::size_t r = 0; r < d.unmovable.size(); ++r)
    if (d.unmovable[r] > 0) roles.push_back(r);
  std::stable_sort(roles.begin(), roles.end(),
                   [&](auto a, auto b) { return d.unmovable[a] > d.unmovable[b]; });
  std::string out;
  for (auto r : roles)
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ",
                       sim::memory_role_name(static_cast<sim::MemoryRole>(r)),
                       format_bytes(Bytes(d.unmovable[r])));
  return out.empty() ? "nothing" : out;
}

std::int64_t total(std::array<std::int64_t, sim::memory_role_count> const& bytes) {
  std::int64_t out = 0;
  for (auto b : bytes)
    out += b;
  return out;
}

}  // namespace

Expected<SwapOutcome> add_swaps(ModelInput const& model, plan::Plan const& plan,
                                sim::Evaluation const& before, cost::CostModel const& cost,
                                ops::OpRegistry const& registry) {
  SwapOutcome out{plan, before, before.prediction.step_time_s, {}, {}};
  for (auto const& d : before.devices)
    out.peak_before_bytes.push_back(d.memory.peak_bytes);
  if (before.violations.empty()) return out;
  auto use = sim::memory_use(model.training, before.program, before.prediction.sim.spans);
  auto planned =
      plan_device_swaps({model.training, registry, plan, cost, model.batch, before}, use);
  out.plan = std::move(planned.plan);
  out.devices = std::move(planned.devices);
  auto after = sim::evaluate({model.training, registry, out.plan, cost, model.batch});
  if (!after) return std::move(after).error().with_context("evaluating the plan with swaps");
  out.evaluation = std::move(*after);
  return out;
}

Expected<std::vector<SwapOutcome>> add_swaps(ModelInput const& model, cost::CostModel const& cost,
                                             ops::OpRegistry const& registry,
                                             std::vector<plan::Plan>& plans,
                                             std::vector<report::PlanRow>& rows) {
  CLEAVE_ASSERT(plans.size() == rows.size(), "one row per plan");
  std::vector<SwapOutcome> out;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    CLEAVE_TRY(auto outcome, add_swaps(model, plans[i], rows[i].evaluation, cost, registry));
    plans[i] = outcome.plan;
    rows[i].evaluation = outcome.evaluation;
    out.push_back(std::move(outcome));
  }
  return out;
}

Status swaps_fit(SwapOutcome const& outcome) {
  if (outcome.fits()) return {};
  std::string what;
  for (auto const& v : outcome.evaluation.violations) {
    auto const& memory = outcome.evaluation.devices[static_cast<std::size_t>(v.device)].memory;
    std::string name = outcome.evaluation.devices[static_cast<std::size_t>(v.device)].name;
    what +=
        fmt::format("\n  {} is {} over its {} with swaps", name, format_bytes(Bytes(v.over_bytes)),
                    format_bytes(Bytes(memory.capacity_bytes)));
    auto const* d = swaps_of(outcome, v.device);
    if (!d) {
      what += " (it fit without them: the swaps' copies pass its capacity)";
      continue;
    }
    what +=
        fmt::format(" ({} swapped); at its peak without swaps {} could not be swapped ({}) "
                    "and {} could",
                    format_bytes(Bytes(d->swapped_bytes)), format_bytes(Bytes(total(d->unmovable))),
                    unmovable_text(*d), format_bytes(Bytes(d->movable_bytes)));
    if (!d->why_not.empty()) what += "; " + d->why_not;
  }
  return Error(ErrorCode::invalid_argument,
               "the plan does not fit even with swaps: a swap may move only a block that the "
               "device's own pieces alone read (the whole output of one of its pieces, or a "
               "weight or optimizer state it holds before the step); gradients that are reduced, "
               "partial results, blocks other devices read and the updated weights and optimizer "
               "state (held to the step's end) stay" +
                   what +
                   "\n  try an algorithm that splits the largest ops further (tofu, flexflow), "
                   "more devices, or devices with more memory");
}

std::string swaps_to_text(std::string const& algorithm, SwapOutcome const& outcome) {
  auto const& after = outcome.evaluation;
  if (!outcome.changed())
    return fmt::format("\nswaps (--swap), {}: no device over capacity; the plan is unchanged\n",
                       algorithm);
  std::string out = fmt::format(
      "\nswaps (--swap), {}: {} of {} devices over capacity; step {:.6f} s without swaps, {:.6f} "
      "s with them ({:.3f}x)\n",
      algorithm, outcome.devices.size(), after.devices.size(), outcome.step_time_before_s,
      after.prediction.step_time_s, outcome.slowdown());
  out += fmt::format("{:<10} {:>12} {:>16} {:>12} {:>7} {:>24}  {}\n", "device", "over before",
                     "movable at peak", "swapped", "swaps", "peak after / capacity", "fits");
  for (auto const& d : outcome.devices) {
    auto const& e = after.devices[static_cast<std::size_t>(d.device)];
    out += fmt::format("{:<10} {:>12} {:>16} {:>12} {:>7} {:>24}  {}\n", e.name,
                       format_bytes(Bytes(d.over_bytes)), format_bytes(Bytes(d.movable_bytes)),
                       format_bytes(Bytes(d.swapped_bytes)), d.swaps.size(),
                       format_bytes(Bytes(e.memory.peak_bytes)) + " / " +
                           format_bytes(Bytes(e.memory.capacity_bytes)),
                       e.memory.peak_bytes <= e.memory.capacity_bytes ? "yes" : "NO");
  }
  for (auto const& d : outcome.devices)
    if (!d.why_not.empty())
      out += fmt::format("{}: no swaps: {}\n",
                         after.devices[static_cast<std::size_t>(d.device)].name, d.why_not);
  return out;
}

nlohmann::json swaps_to_json(SwapOutcome const& outcome) {
  auto const& after = outcome.evaluation;
  nlohmann::json devices = nlohmann::json::array();
  std::int64_t swapped = 0;
  for (auto const& d : outcome.devices) {
    auto const& e = after.devices[static_cast<std::size_t>(d.device)];
    nlohmann::json unmovable = nlohmann::json::object();
    for (std::size_t r = 0; r < d.unmovable.size(); ++r)
      if (d.unmovable[r] > 0)
        unmovable[std::string(sim::memory_role_name(static_cast<sim::MemoryRole>(r)))] =
            d.unmovable[r];
    swapped += d.swapped_bytes;
    devices.push_back(
        {{"device", d.device},
         {"name", e.name},
         {"over_bytes", d.over_bytes},
         {"movable_bytes", d.movable_bytes},
         {"unmovable", unmovable},
         {"swaps", d.swaps.size()},
         {"swapped_bytes", d.swapped_bytes},
         {"peak_before_bytes", outcome.peak_before_bytes[static_cast<std::size_t>(d.device)]},
         {"peak_bytes", e.memory.peak_bytes},
         {"capacity_bytes", e.memory.capacity_bytes},
         {"fits", e.memory.peak_bytes <= e.memory.capacity_bytes},
         {"why_not", d.why_not}});
  }
  return {{"changed", outcome.changed()},
          {"fits", outcome.fits()},
          {"step_time_before_s", outcome.step_time_before_s},
          {"step_time_s", after.prediction.step_time_s},
          {"slowdown", outcome.slowdown()},
          {"swapped_bytes", swapped},
          {"devices", devices}};
}

std::string rows_with_swaps_to_json(std::string const& model, std::string const& cluster,
                                    std::vector<report::PlanRow> const& rows,
                                    std::vector<SwapOutcome> const& swaps) {
  auto j = nlohmann::json::parse(report::rows_to_json(model, cluster, rows));
  for (std::size_t i = 0; i < swaps.size(); ++i)
    j["plans"][i]["swap"] = swaps_to_json(swaps[i]);
  return j.dump(2) + "\n";
}

}  // namespace cleave::api
