// From a lowered program to a prediction: task timings from the cost model, the simulation, and
// the figures a user reads (step time, samples/s, where the time goes, traffic per link, memory
// per device over the simulated order). Every figure carries its unit in its name.
#pragma once

#include <string>
#include <vector>

#include "cost/collective.h"
#include "cost/cost_model.h"
#include "sim/simulate.h"

namespace cleave::sim {

// Resources: each device's compute stream (ids 0..D-1), then every link direction
// (D + Hop::channel()).
std::vector<Resource> resources_of(cluster::Cluster const& cluster);

// A task's duration and resources; a member of a collective gets none (the collective has them).
TaskTiming timing_of(lower::Task const& task, ir::Graph const& graph, cost::CostModel const& cost);
// A collective priced by its algorithm over the group's routes (cost::collective_cost), plus, on
// devices that copy on their compute stream (cluster::copies_on_compute), the slowest device's
// reduce members priced as compute.
cost::CollectiveCost cost_of(lower::Collective const& collective, lower::Program const& program,
                             ir::Graph const& graph, cost::CostModel const& cost);
TaskTiming timing_of(cost::CollectiveCost const& price, lower::Collective const& collective,
                     cluster::Cluster const& cluster);

std::vector<cost::CollectiveCost> collective_costs(lower::Program const& program,
                                                   ir::Graph const& graph,
                                                   cost::CostModel const& cost);
Timings timings_of(lower::Program const& program, ir::Graph const& graph,
                   cost::CostModel const& cost,
                   std::vector<cost::CollectiveCost> const& collective_costs);

// Where one device's step goes: computing, waiting for data in flight, waiting for its host copies,
// and the rest of the step (dependencies, imbalance); the four add up to the step time.
struct DeviceTime {
  double compute_s = 0;
  double exposed_comm_s = 0;
  double exposed_swap_s = 0;
  double idle_s = 0;
};

struct Breakdown {
  double compute_s = 0;       // the busiest device's compute time
  double exposed_comm_s = 0;  // its waiting while data it needs is in flight
  double exposed_swap_s = 0;  // its other waiting while its host copies are in flight
  double idle_s = 0;          // its other waiting (dependencies, imbalance)
  double comm_s = 0;          // busiest link direction's busy time (overlapped or not)
};

struct CollectiveSummary {
  std::string kind;       // "all-gather", "reduce-scatter", "all-reduce"
  std::string algorithm;  // "ring", "tree"
  std::string tensor;
  std::size_t group_size = 0;
  std::int64_t bytes = 0;  // the whole buffer
  double start_s = 0;
  double seconds = 0;
};

struct Prediction {
  double step_time_s = 0;
  double samples_per_s = 0;
  Breakdown breakdown;
  std::vector<double> device_compute_s;             // per device
  std::vector<std::int64_t> peak_memory_bytes;      // per device, over the simulated order
  std::vector<std::int64_t> memory_capacity_bytes;  // per device
  bool fits = true;
  std::int64_t comm_bytes = 0;  // all transfers, members of collectives included
  std::int64_t swap_bytes = 0;  // all host copies
  std::vector<std::pair<std::string, std::int64_t>> link_bytes;  // per link direction used
  // Compute and reduce tasks, and how many of them the profile table priced (its coverage).
  std::int64_t priced_tasks = 0;
  std::int64_t measured_tasks = 0;
  std::vector<CollectiveSummary> collectives;  // per collective of the program
  SimResult sim;
};

Prediction predict(ir::Graph const& graph, lower::Program const& program,
                   cost::CostModel const& cost, std::int64_t samples_per_step);

// Per task, what summarize() reads of it, kept compact: a Task is ~140 bytes with three lists
// on the heap, and reading every task three times was most of summarize's time.
struct TaskFacts {
  lower::TaskKind kind = lower::TaskKind::compute;
  bool member = false;  // of a collective
  int device = 0;
  int source_device = -1;
  std::int64_t bytes = 0;         // Task::bytes
  std::int64_t output_bytes = 0;  // of the region it writes or moves
};
TaskFacts facts_of(ir::Graph const& graph, lower::Task const& task);

// The program's tasks as the event loop and summarize() read them. Delta simulation carries the
// index from one change to the next (renumbered) instead of reading every task again.
struct TaskIndex {
  std::vector<TaskFacts> facts;  // per task
  Dependencies deps;
};
TaskIndex index_of(ir::Graph const& graph, lower::Program const& program);

// A device's DeviceTime in a simulated program: its compute and reduce spans; the transfers it
// receives and the collectives of its groups, where they overlap none of those; its host copies,
// where they overlap neither.
DeviceTime device_time(lower::Program const& program, TaskIndex const& index, SimResult const& sim,
                       int device);
// Every device's, in one pass over the program (device by device would read it once per device).
std::vector<DeviceTime> device_times(lower::Program const& program, TaskIndex const& index,
                                     SimResult const& sim);

// The figures of a simulated program (what predict() reports after simulating). With `index`
// (the program's), the tasks are read there.
Prediction summarize(ir::Graph const& graph, lower::Program const& program,
                     cost::CostModel const& cost,
                     std::vector<cost::CollectiveCost> const& collective_costs,
                     Timings const& timings, SimResult sim, std::int64_t samples_per_step,
                     TaskIndex const* index = nullptr);

// What summarize() reads of the timings: per task, a compute or reduce task's seconds and whether
// the profile table priced it (0 and false for other tasks). A plain evaluation keeps these instead
// of the timings, which the event loop copies into its own lists: at 1,024 devices the timings
// (32 bytes a task) were 0.65 GiB under both the loop's and the memory explanation's peaks (issue
// 21).
struct ComputeTimes {
  std::vector<double> seconds;
  std::vector<bool> measured;
};
ComputeTimes compute_times(lower::Program const& program, Timings const& timings);
// The same figures as from the timings they came from; `compute` is freed before the memory
// explanation's per-task events.
Prediction summarize(ir::Graph const& graph, lower::Program const& program,
                     cost::CostModel const& cost,
                     std::vector<cost::CollectiveCost> const& collective_costs,
                     ComputeTimes compute, SimResult sim, std::int64_t samples_per_step,
                     TaskIndex const* index = nullptr);

}  // namespace cleave::sim
