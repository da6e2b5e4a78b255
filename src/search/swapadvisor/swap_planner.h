// SwapAdvisor's swap planner (PAPERS.md §4): given a schedule of one device's ops and how its
// memory is divided, which blocks to copy to the host and back, and when, so that what the device
// holds never passes its memory.
//
// The step is a walk over the schedule's positions. At position k the op there holds its inputs
// and allocates its output, and the copies back that the next op needs are issued (on-demand
// prefetch one op ahead). A block lives from its writer's position to its last reader's; when an
// allocation finds no room, a block is evicted: copied out after its last use so far and freed
// before the op at k starts (the swap's `out_before`), then copied back before its next use.
// Belady's rule evicts the block whose next use is furthest, among blocks idle for at least
// `idle_threshold` positions, so that the copy out has had time to run, and among those that make
// the room alone where one does (a block copied out for less than the room waits on the copy
// engine for a small gain); LRU evicts the least recently used. Copies out are issued in the
// order their room is needed (the copy engine runs them in the order they become ready). A second
// pass issues each copy back as early as the memory it takes is free over the positions before
// its use (swaps start as early as their dependencies and memory allow).
//
// Blocks held before the step (weights, optimizer state, inputs) are on the device from the step's
// start and stay there unless evicted like any other block; the copy swapped back is freed after
// its last reader. Every block the step writes is freed within the step, or lives to its end
// without being swapped (the updated weights and optimizer state: the next step's blocks held
// before it), so every step starts alike and one step's plan serves all (lower/schedule.h).
//
// Where they take more than half the device (SwapAdvisor's models hold more than all of it), they
// start the step on the host instead, as the paper keeps its parameters: each is brought before
// its first use (plan::Swap without out_after), dropped without a copy out when evicted (the host
// keeps it) and brought again before its next use; the updates' outputs (the next step's blocks)
// are copied to the host (plan::Swap without in_before), when room is needed or at the step's
// end, so that the next step starts alike.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "lower/program.h"
#include "memory/allocation.h"
#include "search/common/search_context.h"

namespace cleave::search::swapadvisor {

// One device's step with every op whole on it, as the planner reads it. Its blocks are numbered
// by task (the block each compute task writes), then, from program.tasks.size() on, the blocks
// held before the step in Program::initial's order.
struct StepModel {
  lower::Program program;  // the lowering of the single-device plan, without order or swaps
  std::vector<lower::TaskId> task_of_op;          // per op id
  std::vector<std::int64_t> bytes;                // per block
  std::vector<std::vector<std::uint32_t>> reads;  // per task: the blocks it reads, distinct
  std::int64_t held_before_step = 0;              // bytes of Program::initial
  // The blocks held before the step start it on the host; then `to_host` marks, per task, the
  // updates' outputs, which end it there.
  bool held_on_host = false;
  std::vector<bool> to_host;
  // With them, the roofline's seconds: per task its computation, per block its copy to or from
  // the host (the updates' outputs leave once their copy has had time to run).
  std::vector<double> compute_s, copy_s;
  memory::AllocationProblem allocation;   // sizes and what is held at once
  std::vector<std::uint32_t> size_index;  // per block, into allocation.sizes
};

// The step of the context's graph on device 0 of its cluster; the pool may take the whole device.
// Its blocks held before the step start it on the host where they take more than half the device.
// Errors: the graph does not lower.
Expected<StepModel> step_model(SearchContext const& ctx);

enum class Eviction : std::uint8_t { belady, lru };

struct SwapRequest {
  StepModel const& model;
  std::vector<ir::OpId> const& schedule;  // a topological order of every op
  // The room: a pool (a block takes an object of its size's class; it evicts in that class),
  // else bytes (a block takes its size; it evicts any block). Either holds every block, those
  // held before the step included.
  memory::Allocation const* allocation = nullptr;
  std::int64_t room_bytes = 0;
  Eviction eviction = Eviction::belady;
  int idle_threshold = 1;     // positions; at least 1
  bool early_copy_in = true;  // the second pass
  // Where blocks start the step on the host: each brought by its copy's time before its use, and
  // the updates' outputs sent there once written (lru-swap's copies are on demand instead).
  bool early_host_copies = true;
};

// The swaps of device 0 for the request's schedule (plan::Swap: every op is piece 0). An error
// names the op whose position found no room and no block to evict.
Expected<std::vector<plan::Swap>> plan_swaps(SwapRequest const& request);

}  // namespace cleave::search::swapadvisor
