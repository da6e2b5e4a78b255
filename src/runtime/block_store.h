// What one device holds while a step runs: dense fp32 blocks of tensors' regions, each charged to
// the device's arena, found by the task that wrote it or by tensor and region. The data movement
// rules are lower::run_reference's: a read gathers a region from the device's whole-valued
// blocks of the tensor; partial results are read only by the task that wrote them.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"
#include "lower/program.h"
#include "runtime/arena.h"

namespace cleave::runtime {

constexpr lower::TaskId no_task = ~lower::TaskId{0};

struct Block {
  ir::TensorId tensor;
  tdl::Box region;
  std::vector<float> data;  // row-major over region
  bool partial = false;
  lower::TaskId task = no_task;  // the task that wrote it; no_task for blocks held before the step
  Charge charged;                // what the arena holds for it
};

// Copies the elements of `part` (inside both regions) from src (holding src_region) to dst
// (holding dst_region), row by row.
void copy_box(float const* src, tdl::Box const& src_region, float* dst, tdl::Box const& dst_region,
              tdl::Box const& part);

// "fc.w[0,4)x[0,8)".
std::string block_name(ir::Graph const& graph, ir::TensorId tensor, tdl::Box const& region);
// A block's charge: its volume in its tensor's dtype.
Bytes block_bytes(ir::Graph const& graph, ir::TensorId tensor, tdl::Box const& region);

// Buffers of freed blocks kept for the next block of the same size: a step writes the same
// blocks as the one before, so from the second step on a compute task's output takes a buffer
// that is already allocated and faulted in, and needs no zeroing (kernels write every element).
// Zeroing and faulting in fresh outputs took 10% of an MLP's step. What an arena charges (the
// blocks held) is unaffected; the pool holds at most `capacity` bytes besides. Thread-safe.
class BufferPool {
 public:
  explicit BufferPool(std::size_t capacity) : capacity_(capacity) {}
  // `size` floats: a kept buffer (its old values) or a new zeroed one.
  std::vector<float> take(std::size_t size);
  void give(std::vector<float> buffer);

 private:
  std::mutex mutex_;
  std::size_t capacity_;
  std::size_t held_ = 0;  // bytes
  std::unordered_map<std::size_t, std::vector<std::vector<float>>> free_;
};

// Thread-safe: a device's worker adds and frees blocks while other workers copy from them.
class BlockStore {
 public:
  // With a pool, a block's buffer goes to it when the block is dropped and no view holds it.
  BlockStore(ir::Graph const& graph, Arena& arena, std::shared_ptr<BufferPool> pool = nullptr)
      : graph_(graph), arena_(arena), pool_(std::move(pool)) {}

  // Charges the arena and keeps the block `task` wrote (no_task: held before the step); the
  // arena's out_of_memory error when it does not fit.
  Status add(ir::TensorId tensor, tdl::Box region, std::vector<float> data, bool partial,
             lower::TaskId task);
  // The region of a tensor assembled from the whole-valued blocks held; an error naming what is
  // missing when they do not cover it. The copying happens outside the store's lock, so a
  // large copy does not hold up the device's own worker (blocks are never changed once added,
  // and a block a copy reads stays alive until the copy ends).
  Expected<std::vector<float>> gather(ir::TensorId tensor, tdl::Box const& region) const;
  // The region read in place where one whole-valued block holds it contiguously (row-major: the
  // block's region, or a run of its first dimensions with the others whole); none otherwise.
  // The view keeps the block alive.
  struct View {
    std::shared_ptr<Block const> block;
    float const* data = nullptr;
  };
  std::optional<View> view(ir::TensorId tensor, tdl::Box const& region) const;
  // The part `region` of the block `task` wrote (partial or not).
  Expected<std::vector<float>> read_written(lower::TaskId task, tdl::Box const& region) const;
  // Drops the block `task` wrote, if still held.
  void free_written(lower::TaskId task);
  // Drops every whole-valued block of the tensor inside region (a swap-out).
  void free_inside(ir::TensorId tensor, tdl::Box const& region);
  // Every whole-valued block of the tensor (copies), for assembling results.
  std::vector<Block> blocks_of(ir::TensorId tensor) const;
  void clear();

  Arena& arena() { return arena_; }

 private:
  ir::Graph const& graph_;
  Arena& arena_;
  std::shared_ptr<BufferPool> pool_;
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<Block>> blocks_;
};

}  // namespace cleave::runtime
