// The execution simulator (FlexFlow's, PAPERS.md §2): event driven over resources (each device's
// compute stream, each link direction; a device's host copies use the link directions of its host
// route), FIFO per resource in the order tasks become ready, communication overlapping
// computation. It runs on the lowered program, the same one the runtime executes, with each
// task's duration and resources given by the cost model.
//
// The unit of scheduling is a node: a task that belongs to no collective, or a whole collective
// (its member tasks all get the collective's span). A node is ready once every task its tasks
// wait for has ended: their dependencies and their ordering-only edges (Program::ordering, which
// carry a plan's per-device order, so that each device's compute pieces run in exactly that
// order). Nodes are taken in the order they become ready; ties are broken by
// lower::canonical_less, never by position in the task list, so a program assembled in another
// order simulates bit for bit the same (delta simulation relies on it).
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "lower/program.h"

namespace cleave::sim {

using ResourceId = std::uint32_t;

// A list of resources that holds up to two in place: a compute task's one stream, a transfer's
// link directions within a node. A list on the heap per task was, with its header, two fifths
// of a task's timing and a twelfth of the simulation's peak (issue 21).
class ResourceList {
 public:
  ResourceList() = default;
  ResourceList(std::initializer_list<ResourceId> list) {
    for (auto r : list)
      push_back(r);
  }
  ResourceList(ResourceList const& other) { *this = other; }
  ResourceList(ResourceList&& other) noexcept { *this = std::move(other); }
  ResourceList& operator=(ResourceList const& other) {
    if (this == &other) return *this;
    size_ = 0;
    for (auto r : other)
      push_back(r);
    return *this;
  }
  ResourceList& operator=(ResourceList&& other) noexcept {
    if (this == &other) return *this;
    release();
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, in_place);
    if (capacity_ == in_place) {
      for (std::uint32_t i = 0; i < size_; ++i)
        local_[i] = other.local_[i];
    } else {
      heap_ = other.heap_;
    }
    return *this;
  }
  ~ResourceList() { release(); }

  void push_back(ResourceId r) {
    if (size_ == capacity_) {
      std::uint32_t grown_capacity = std::max(2 * capacity_, 2 * in_place);
      auto* grown = new ResourceId[grown_capacity];
      std::uninitialized_copy_n(data(), size_, grown);
      release();
      heap_ = grown;
      capacity_ = grown_capacity;
    }
    data()[size_++] = r;
  }
  ResourceId const* begin() const { return data(); }
  ResourceId const* end() const { return data() + size_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  static constexpr std::uint32_t in_place = 2;
  ResourceId* data() { return capacity_ == in_place ? local_ : heap_; }
  ResourceId const* data() const { return capacity_ == in_place ? local_ : heap_; }
  void release() {
    if (capacity_ != in_place) delete[] heap_;
    capacity_ = in_place;
  }
  std::uint32_t size_ = 0;
  std::uint32_t capacity_ = in_place;
  union {
    ResourceId local_[in_place] = {};
    ResourceId* heap_;
  };
};

// What one task or collective occupies and for how long. A transfer occupies every link direction
// on its route at once (cut-through), a compute task its device's compute stream, a collective
// every link direction its algorithm uses.
struct TaskTiming {
  double seconds = 0;
  ResourceList resources;
  bool measured = false;  // compute or reduce: priced from the profile table, not the roofline
};

struct Timings {
  std::vector<TaskTiming> tasks;        // per task; unused for members of a collective
  std::vector<TaskTiming> collectives;  // per collective
};

struct Resource {
  std::string name;  // "device 3 compute", "link nvlink0 0->1"
  int device = -1;   // the device whose compute stream this is; -1 for links
};

using lower::TaskSpan;

struct SimResult {
  double step_seconds = 0;
  std::vector<TaskSpan> spans;       // per task
  std::vector<double> busy_seconds;  // per resource
  // Per device: its compute stream's busy time (copies included on a device that runs them on
  // its stream, cluster::copies_on_compute), and the time the stream waited with nothing ready.
  std::vector<double> compute_seconds;
  std::vector<double> idle_seconds;
};

// Simulates the program. Every node with no resource takes its duration without contention.
SimResult simulate(lower::Program const& program, Timings const& timings,
                   std::vector<Resource> const& resources);
// The same, freeing the timings once the event loop has copied what it reads of them, before its
// own per-node lists (issue 21: at 1,024 devices 0.65 GiB of the loop's peak).
SimResult simulate(lower::Program const& program, Timings&& timings,
                   std::vector<Resource> const& resources);

// The event loop behind simulate(), resumable after a prefix of a previous run (delta simulation).
// Node ids: a task's id for a task in no collective, tasks.size() + c for collective c.
using NodeId = std::uint32_t;

// The resources' state before the `pops`-th node was taken.
struct Checkpoint {
  std::size_t pops = 0;
  std::vector<double> free_at;  // per resource
  std::vector<double> busy;     // per resource
  double step = 0;
};

struct Run {
  SimResult result;
  std::vector<NodeId> order;            // nodes in the order taken
  std::vector<double> ready;            // per node: when it became ready
  std::vector<Checkpoint> checkpoints;  // every checkpoint_every pops, from the first
  static constexpr std::size_t checkpoint_every = 256;
  // The loop gave up (run_event_loop's stop_above): the step time is sure to exceed that bound,
  // and the rest of the run is incomplete.
  bool stopped = false;
};

// Nodes taken, in this order, exactly as a previous run took them (same ready times and spans),
// and that run's checkpoints up to their number. The loop replays them from the last checkpoint
// and goes on from there.
struct Prefix {
  std::vector<NodeId> taken;
  std::vector<double> ready;    // per taken node
  std::vector<TaskSpan> spans;  // per taken node
  std::vector<Checkpoint> checkpoints;
};

// The tasks' dependency lists, flattened: task i's are deps[first[i]] .. deps[first[i + 1]].
// Delta simulation keeps them from one change to the next (most tasks' lists only get renumbered),
// so that the loop need not read every task's own list again.
struct Dependencies {
  std::vector<std::uint32_t> first;
  std::vector<lower::TaskId> deps;
};

// With `deps`, the loop reads the tasks' dependencies there (they must be the program's).
// With a finite `stop_above`, the loop stops (Run::stopped) as soon as a lower bound on the step
// time exceeds it: a node's end, or per resource, when it is next free plus the durations of the
// nodes still to take on it (a resource runs one node at a time, and is free no earlier than it
// is now). A run whose step exceeds `stop_above` always stops, at the latest at its end. MCMC
// rejects a proposal that is sure to be slower than its acceptance test allows without finishing
// the run (search/flexflow).
Run run_event_loop(lower::Program const& program, Timings const& timings,
                   std::vector<Resource> const& resources, Prefix const& prefix = {},
                   Dependencies const* deps = nullptr,
                   double stop_above = std::numeric_limits<double>::infinity());

}  // namespace cleave::sim
