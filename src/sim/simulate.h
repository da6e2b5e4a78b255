// The execution simulator (FlexFlow's, PAPERS.md §2): event driven over resources (each device's
// compute stream, each link direction, each host-copy stream), FIFO per resource in the order tasks
// become ready, communication overlapping computation. It runs on the lowered program, the same
// one the runtime executes, with each task's duration and resources given by the cost model.
#pragma once

#include <string>
#include <vector>

#include "lower/program.h"

namespace cleave::sim {

using ResourceId = std::uint32_t;

// What one task occupies and for how long. A transfer occupies every link direction on its route
// at once (cut-through), a compute task its device's compute stream.
struct TaskTiming {
  double seconds = 0;
  std::vector<ResourceId> resources;
  bool measured = false;  // compute or reduce: priced from the profile table, not the roofline
};

struct Resource {
  std::string name;  // "device 3 compute", "link nvlink0 0->1"
  int device = -1;   // the device whose compute stream this is; -1 for links
};

struct TaskSpan {
  double start = 0;
  double end = 0;
};

struct SimResult {
  double step_seconds = 0;
  std::vector<TaskSpan> spans;       // per task
  std::vector<double> busy_seconds;  // per resource
  // Per device: compute busy time, and the time its compute stream waited with nothing ready.
  std::vector<double> compute_seconds;
  std::vector<double> idle_seconds;
};

// Simulates the program. timings[i] belongs to program.tasks[i]; every task with no resource takes
// its duration without contention.
SimResult simulate(lower::Program const& program, std::vector<TaskTiming> const& timings,
                   std::vector<Resource> const& resources);

}  // namespace cleave::sim
