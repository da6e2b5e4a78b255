// The one lowering (DESIGN.md): (graph, plan) -> program, a DAG of per-device tasks that both the
// simulator and the runtime consume. Compute tasks run pieces; transfer tasks move the regions a
// piece reads from where they are held; reduce tasks combine partial results; swap tasks copy a
// region between a device and its node's host. Collectives group transfers and reduce tasks into
// what they amount to (all-gather, reduce-scatter, all-reduce), so that the simulator prices each
// by its algorithm and the runtime runs each as one call of its communication backend per member
// device.
#pragma once

#include <cstdint>
#include <vector>

#include "cost/collective.h"
#include "plan/plan.h"
#include "support/units.h"

namespace cleave::lower {

using TaskId = std::uint32_t;
using CollectiveId = std::uint32_t;
constexpr CollectiveId no_collective = ~CollectiveId{0};

// swap_out: device -> its node's host; swap_in: host -> device (SwapAdvisor's host copies).
enum class TaskKind : std::uint8_t { compute, transfer, reduce, swap_out, swap_in };

// Fields ordered so that the narrow ones share words (120 bytes on 64-bit targets, was 136): a
// program holds millions of tasks (issue 21: 18 M for GPT-3 data parallel on 1,024 devices).
struct Task {
  TaskKind kind = TaskKind::compute;
  bool partial = false;  // compute: its output is a partial result; transfer: it moves one
  tdl::Reducer reducer = tdl::Reducer::none;  // reduce: how partials combine
  int device = 0;          // where it runs; for a transfer, the destination; for a swap, the device
  int source_device = -1;  // transfer: where the data comes from; -1: from its collective's group
                           // (a device's one member of a collective lowered per device, below)
  ir::OpId op;             // compute: the op; reduce: the op whose partial outputs it combines;
                           // partial transfer: the op that computed the partial result
  std::uint32_t piece = 0;  // compute: the piece of the op; partial transfer: the source piece
  ir::TensorId tensor;      // the tensor written (compute, reduce) or moved (transfer, swap)
  CollectiveId collective = no_collective;  // the collective this task is a member of, if any
  Flops flops;                              // compute and reduce work
  Bytes bytes;         // transfer, swap: bytes moved (and, for a transfer, held where it lands);
                       // compute: bytes read and written
  tdl::Box iteration;  // compute: the piece's box of the op's iteration space
  tdl::Box region;     // the region written or moved
  std::vector<TaskId> deps;  // tasks that must finish first (always earlier in the list)
};

// The cost model's kinds: what a collective amounts to is what it is priced as.
using cost::CollectiveKind;

// When a task ran, in seconds from the step's start: simulated (sim::simulate) or measured (the
// runtime's executor), so that the two traces compare task by task.
struct TaskSpan {
  double start = 0;
  double end = 0;
};

// What a group of member tasks amounts to. An all-gather's members are transfers (each device of
// the group receives every other member's whole block); a reduce-scatter's are the partial
// transfers and reduce tasks; an all-reduce's are both (a reduce-scatter whose result is then
// all-gathered over the same group). Every dependency of a member that is not itself a member
// precedes the collective's first member in the task list, so that taking the members as one unit
// keeps the program acyclic (the simulator checks it).
struct Collective {
  CollectiveKind kind = CollectiveKind::all_gather;
  std::vector<int> group;  // distinct devices, ascending: the ring order
  ir::TensorId tensor;
  tdl::Box region;              // the whole buffer gathered or reduced
  Bytes bytes;                  // of that buffer
  std::vector<TaskId> members;  // ascending
};

// A block of a tensor held by a device before the step starts (inputs, weights, optimizer state).
struct InitialBlock {
  ir::TensorId tensor;
  tdl::Box region;
  int device = 0;
  // It starts the step in its device's host's memory, not the device's: a swap brings it
  // (plan::Swap without out_after).
  bool on_host = false;
};

// An ordering-only dependency: `task` starts only after `after` has ended, but does not read its
// output, so it does not keep that output alive (lifetime.h reads only Task::deps). The plan's
// per-device orders and swap points become such edges (schedule.h). Unlike a task's deps, `after`
// may come later in the task list than `task`.
struct OrderEdge {
  TaskId task = 0;
  TaskId after = 0;
  bool operator==(OrderEdge const&) const = default;
};

struct Program {
  int num_devices = 1;
  std::vector<InitialBlock> initial;
  std::vector<Task> tasks;  // in a topological order of their deps (not of `ordering`)
  std::vector<Collective> collectives;
  std::vector<OrderEdge> ordering;  // empty where the plan has no order
};

// A total order on tasks by what they are, not where they sit in the list; the simulator breaks
// ties with it, so that a program assembled in another order simulates identically. The tasks of
// a lowered program are pairwise distinct under it.
bool canonical_less(Task const& a, Task const& b);
// Lexicographic on (lo, hi) per dimension.
bool box_less(tdl::Box const& a, tdl::Box const& b);

// The dimension along which a reduce-scatter over `members` devices cuts the region of partial
// results it combines: the first dimension at least `members` long, so that activations' parts
// land in the batch split that data- and sequence-parallel readers take (Megatron's
// reduce-scatter) and weight gradients' in the rows that a data-parallel update shards (ZeRO);
// else the longest. Planners that count the lowering's bytes (Tofu's) use it too.
std::size_t scatter_dimension(tdl::Box const& region, std::size_t members);
bool canonical_less(Collective const& a, Collective const& b);

// How a regular collective becomes tasks. `explicit_transfers`: one transfer per pair of devices
// that exchange a block (what the runtime executes, and what irregular collectives always are).
// `per_device`: one member per device of the group (issue 21: an all-gather or reduce-scatter
// over n devices is then n tasks, not n^2): an all-gather's member on device d receives every
// other member's block (a transfer with source_device -1 whose bytes are those blocks', waiting
// for d's own block); a reduce-scatter's transfer member on d receives the other members' partial
// results for d's part (waiting for d's own partial result) and its reduce member waits for that
// transfer and d's partial result. A member waits for what d contributes; the collective, which
// the simulator takes as one node, waits for what all of them wait for, as the explicit form's
// does. Each member's output is what the explicit transfers into d held, with the same readers,
// so the predicted step, its bytes and each device's memory over time are the same.
enum class CollectiveForm : std::uint8_t { explicit_transfers, per_device };

// Lowers a validated plan. Where a tensor lives: a produced tensor where its producer's pieces
// (or, for partial pieces, the reduce tasks) wrote it; a weight or optimizer state where its
// update writes the next value (so that every step starts from the layout the previous one left);
// other sources (inputs) on every device that reads them, as a data loader delivers them.
Expected<Program> lower(ir::Graph const& graph, plan::Plan const& plan,
                        ops::OpRegistry const& registry,
                        CollectiveForm form = CollectiveForm::explicit_transfers);

}  // namespace cleave::lower
