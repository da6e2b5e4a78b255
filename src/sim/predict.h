// From a lowered program to a prediction: task timings from the cost model, the simulation, and
// the figures a user reads (step time, samples/s, where the time goes, traffic per link, memory
// per device over the simulated order). Every figure carries its unit in its name.
#pragma once

#include <string>
#include <vector>

#include "cost/cost_model.h"
#include "sim/simulate.h"

namespace cleave::sim {

// Resources: each device's compute stream (ids 0..D-1), then every link direction
// (D + Hop::channel()).
std::vector<Resource> resources_of(cluster::Cluster const& cluster);
std::vector<TaskTiming> timings_of(lower::Program const& program, ir::Graph const& graph,
                                   cost::CostModel const& cost);

struct Breakdown {
  double compute_s = 0;       // the busiest device's compute time
  double exposed_comm_s = 0;  // its waiting while data it needs is in flight
  double idle_s = 0;          // its other waiting (dependencies, imbalance)
  double comm_s = 0;          // busiest link direction's busy time (overlapped or not)
};

struct Prediction {
  double step_time_s = 0;
  double samples_per_s = 0;
  Breakdown breakdown;
  std::vector<double> device_compute_s;             // per device
  std::vector<std::int64_t> peak_memory_bytes;      // per device, over the simulated order
  std::vector<std::int64_t> memory_capacity_bytes;  // per device
  bool fits = true;
  std::int64_t comm_bytes = 0;                                   // all transfers
  std::vector<std::pair<std::string, std::int64_t>> link_bytes;  // per link direction used
  // Compute and reduce tasks, and how many of them the profile table priced (its coverage).
  std::int64_t priced_tasks = 0;
  std::int64_t measured_tasks = 0;
  SimResult sim;
};

Prediction predict(ir::Graph const& graph, lower::Program const& program,
                   cost::CostModel const& cost, std::int64_t samples_per_step);

}  // namespace cleave::sim
