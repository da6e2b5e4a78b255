// What occupies each device's memory over a simulated step, block by block and by role, by the one
// memory rule lower/lifetime.h states: the rule predict() counts (its peaks equal these) and the
// runtime's arenas apply. predict() computes only the peaks, inline, because searches call it
// after every change; this is the full account that evaluate() and reports read.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/cluster.h"
#include "ir/graph.h"
#include "sim/simulate.h"

namespace cleave::sim {

// What a block is, as a user reads a device's memory: state held across steps (weights, optimizer
// state), what the step writes (gradients, saved activations, partial results), and copies
// (fetched from another device, swapped in from the host). Inputs and anything else are `other`.
enum class MemoryRole : std::uint8_t {
  weights,
  optimizer_state,
  gradients,
  saved_activations,
  fetched,
  swapped_in,
  partial,
  other
};
inline constexpr std::size_t memory_role_count = 8;
// "weights", "optimizer state", "gradients", "saved activations", "fetched copies",
// "swapped-in data", "partial results", "other".
std::string_view memory_role_name(MemoryRole role);

// The task id of a block held before the step (Program::initial).
inline constexpr lower::TaskId held_before_step = ~lower::TaskId{0};

// A block a device holds during the step.
// Fields ordered so that it takes 32 bytes, not 40 (issue 21: one a task, 22 M at 1,024 devices).
struct MemoryBlock {
  // The region in the program the blocks were made from (its task's or initial block's), which
  // outlives them: a copy per block was a large share of the memory explanation (issue 21).
  tdl::Box const* region = nullptr;
  std::int64_t bytes = 0;
  ir::TensorId tensor;
  int device = 0;
  lower::TaskId task = held_before_step;  // the task that writes it
  MemoryRole role = MemoryRole::other;
};

// A block allocated (bytes > 0) or freed (bytes < 0) at a time of the step. A swap-out's free is
// the block it copies (so that what is live per block and per role never goes negative).
struct BlockEvent {
  double time_s = 0;
  std::int64_t bytes = 0;
  std::uint32_t block = 0;
};

struct MemoryUse {
  std::vector<MemoryBlock> blocks;
  // Per device, by time; at equal times frees first, as predict() orders them. A block a task of
  // no time writes and its readers of no time read (the GPU model prices the ops fused into an
  // element-wise chain so) is freed and allocated at one instant, its free first: it adds nothing
  // to the bytes, and a pool's replay gives it an object and takes it back at once.
  std::vector<std::vector<BlockEvent>> events;
};

// `spans`: per task of the program, as simulated (or measured). The blocks point into the
// program's regions: it outlives the MemoryUse.
MemoryUse memory_use(ir::Graph const& graph, lower::Program const& program,
                     std::vector<TaskSpan> const& spans);

// The bytes a device holds from a time on.
struct MemoryPoint {
  double time_s = 0;
  std::int64_t bytes = 0;
};

struct LiveBlock {
  std::string tensor;
  tdl::Box region;
  std::int64_t bytes = 0;
  MemoryRole role = MemoryRole::other;
};

struct DeviceMemory {
  std::int64_t capacity_bytes = 0;
  std::int64_t peak_bytes = 0;
  double peak_s = 0;  // when the peak is first reached
  // A step function: one point per time at which blocks are allocated or freed, holding the bytes
  // after all of them.
  std::vector<MemoryPoint> timeline;
  std::array<std::int64_t, memory_role_count> peak_by_role{};  // at the peak; sums to peak_bytes
  std::vector<LiveBlock> largest_at_peak;                      // largest first
};

// Per device: its timeline, its peak, what is live there by role and its `largest` largest blocks.
std::vector<DeviceMemory> device_memory(ir::Graph const& graph, MemoryUse const& use,
                                        cluster::Cluster const& cluster, std::size_t largest);

}  // namespace cleave::sim
