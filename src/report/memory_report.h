// What a plan's evaluation says about memory: per device its peak and what is live there by role,
// and for each device the plan overflows, by how much, when, and the largest blocks live at its
// peak (what a user changes the plan or the batch against).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "sim/evaluate.h"

namespace cleave::report {

// "memory: tofu overflows 8 of 8 devices, gpu3 the most (19.20 GiB over)\n"; empty if it fits.
std::string over_capacity_summary(std::string const& label, sim::Evaluation const& evaluation);
// Per device over capacity: its peak against its capacity, the shortfall, when it first overflows
// and when it peaks, what is live at the peak by role and its largest blocks; empty if it fits.
std::string violations_to_text(sim::Evaluation const& evaluation);
// Per device with a pool (the plan's, SwapAdvisor's): its classes and bytes, and at its fullest
// the objects taken against the bytes their blocks asked for, the rest internal fragmentation;
// empty where no device has one.
std::string pools_to_text(sim::Evaluation const& evaluation);

// Per device: name, time breakdown, peak_memory_bytes, memory_capacity_bytes, peak_s,
// at_peak (bytes per role), largest_at_peak (tensor, region, bytes, role).
nlohmann::json devices_to_json(sim::Evaluation const& evaluation);
// Per violation: device, device_name, over_bytes, first_over_s, peak_s, largest.
nlohmann::json violations_to_json(sim::Evaluation const& evaluation);

}  // namespace cleave::report
