// What `cleave plan`, `simulate` and `compare` print about a plan's prediction: step time,
// samples/s, efficiency against the ideal, memory per device against capacity, traffic and the
// breakdown; and the simulated timeline as a Chrome trace (Perfetto, chrome://tracing).
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "lower/program.h"
#include "sim/predict.h"

namespace cleave::report {

struct PlanRow {
  std::string algorithm;
  sim::Prediction prediction;
  double ideal_step_time_s = 0;  // single-device time / number of devices
  double search_time_s = 0;
  double efficiency() const {
    return prediction.step_time_s > 0 ? ideal_step_time_s / prediction.step_time_s : 0;
  }
};

std::string rows_to_text(std::string const& model, std::string const& cluster,
                         std::vector<PlanRow> const& rows);
// "cleave.compare/1": one object per row with algorithm, step_time_s, samples_per_s,
// ideal_step_time_s, efficiency, peak_memory_bytes, memory_capacity_bytes, fits, comm_bytes,
// search_time_s, breakdown.
std::string rows_to_json(std::string const& model, std::string const& cluster,
                         std::vector<PlanRow> const& rows);

// Chrome trace events: one process per device, threads "compute", "transfers in" (point to point),
// "collectives" (each collective once per device of its group, not its member tasks) and "host
// copies".
std::string chrome_trace(ir::Graph const& graph, lower::Program const& program,
                         sim::Prediction const& prediction);

}  // namespace cleave::report
