// What `cleave plan`, `simulate` and `compare` print about a plan's prediction: step time,
// samples/s, efficiency against the ideal, memory per device against capacity, traffic and the
// breakdown; and the simulated timeline as a Chrome trace (Perfetto, chrome://tracing).
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "lower/program.h"
#include "sim/evaluate.h"

namespace cleave::report {

struct PlanRow {
  std::string algorithm;
  sim::Evaluation evaluation;
  double ideal_step_time_s = 0;  // single-device time / number of devices
  double search_time_s = 0;
  sim::Prediction const& prediction() const { return evaluation.prediction; }
  double efficiency() const {
    return prediction().step_time_s > 0 ? ideal_step_time_s / prediction().step_time_s : 0;
  }
};

// The table, the breakdowns, and per row over capacity one line per device it overflows
// (violations_to_text has the details).
std::string rows_to_text(std::string const& model, std::string const& cluster,
                         std::vector<PlanRow> const& rows);
// "cleave.compare/1": one object per row with algorithm, step_time_s, samples_per_s,
// ideal_step_time_s, efficiency, peak_memory_bytes, memory_capacity_bytes, fits, comm_bytes,
// search_time_s, breakdown, devices (devices_to_json) and violations (violations_to_json).
std::string rows_to_json(std::string const& model, std::string const& cluster,
                         std::vector<PlanRow> const& rows);

// When each task and each collective ran, simulated or measured: what a trace shows.
struct Timeline {
  std::vector<sim::TaskSpan> tasks;  // per task of the program, in seconds from the step's start
  struct CollectiveSpan {
    std::string name;       // "all-reduce fc.w.grad"
    std::string algorithm;  // "ring", "tree"; for a measured run, how the runtime ran it
    std::int64_t bytes = 0;
    double start_s = 0;
    double end_s = 0;
  };
  std::vector<CollectiveSpan> collectives;  // per collective of the program
  // A run over MPI: per device, the rank that ran it. The trace then has one process per rank
  // and, in it, each of the rank's devices' threads; empty: one process per device.
  std::vector<int> rank_of_device;
  // A measured run's memory: per device, the bytes its arena held over the step (a counter in
  // the trace); empty: none (a simulated timeline, whose memory evaluate() accounts).
  std::vector<std::vector<sim::MemoryPoint>> memory;
};

// The simulator's timeline: its task spans and each collective as priced.
Timeline simulated_timeline(lower::Program const& program, sim::Prediction const& prediction);
// A measured timeline from per-task spans: each collective spans its members' first start to
// their last end; `algorithm` names how they ran.
Timeline measured_timeline(ir::Graph const& graph, lower::Program const& program,
                           std::vector<sim::TaskSpan> tasks, std::string const& algorithm);

// Chrome trace events: one process per device (per rank where Timeline::rank_of_device says),
// threads "compute", "transfers in" (point to point),
// "collectives" (each collective once per device of its group, not its member tasks) and "host
// copies", and with Timeline::memory a counter "memory" (bytes) per device. Simulated and
// measured traces come from this one function.
std::string chrome_trace(ir::Graph const& graph, lower::Program const& program,
                         Timeline const& timeline);
// chrome_trace(graph, program, simulated_timeline(program, prediction)).
std::string chrome_trace(ir::Graph const& graph, lower::Program const& program,
                         sim::Prediction const& prediction);

}  // namespace cleave::report
