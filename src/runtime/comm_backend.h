// How device workers exchange data (DESIGN.md "Runtime"): point-to-point region copies and the
// collectives a program's transfers amount to. The executor talks only to this interface, so that
// the MPI backend (one rank per device, a later issue) can replace the in-process one: a copy
// names the source device, the tensor, the region and (for a partial result) the task that wrote
// it, which is all a rank needs to match a send with a receive.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <vector>

#include "runtime/block_store.h"

namespace cleave::runtime {

// One point-to-point copy: `region` of `tensor` from what `source` holds (its whole-valued
// blocks; or, when `written` is a task, that task's block: a partial result).
struct CopyRequest {
  int source = 0;
  int destination = 0;
  ir::TensorId tensor;
  tdl::Box region;
  lower::TaskId written = no_task;
};

// One member's part in a collective. Every member of `group` (distinct devices) calls with the
// same key and buffers of the sizes the operation expects.
struct CollectiveCall {
  std::uint64_t key = 0;  // the same for all members of one collective, distinct across them
  std::vector<int> group;
  int device = 0;
  tdl::Reducer reducer = tdl::Reducer::sum;
};

class CommBackend {
 public:
  virtual ~CommBackend() = default;
  virtual Expected<std::vector<float>> copy(CopyRequest const& request) = 0;
  // data (the same size on every member) becomes the element-wise reduction over the group.
  virtual Status all_reduce(CollectiveCall const& call, std::span<float> data) = 0;
  // out (group size x mine.size()) becomes every member's `mine`, in group order.
  virtual Status all_gather(CollectiveCall const& call, std::span<float const> mine,
                            std::span<float> out) = 0;
  // in: the same size n on every member; out: this member's chunk of the reduction, chunk k of
  // [k*n/g, (k+1)*n/g) for the k-th member of the group.
  virtual Status reduce_scatter(CollectiveCall const& call, std::span<float const> in,
                                std::span<float> out) = 0;
  // Wakes every member blocked in a collective with an error; later calls fail at once.
  virtual void abort() = 0;
};

// Workers as threads of one process: copies read the source device's block store directly;
// collectives meet in a rendezvous where the last member to arrive computes the result.
class InProcessBackend final : public CommBackend {
 public:
  explicit InProcessBackend(std::vector<BlockStore*> stores) : stores_(std::move(stores)) {}

  Expected<std::vector<float>> copy(CopyRequest const& request) override;
  Status all_reduce(CollectiveCall const& call, std::span<float> data) override;
  Status all_gather(CollectiveCall const& call, std::span<float const> mine,
                    std::span<float> out) override;
  Status reduce_scatter(CollectiveCall const& call, std::span<float const> in,
                        std::span<float> out) override;
  void abort() override;

 private:
  enum class Op { all_reduce, all_gather, reduce_scatter };
  struct Meeting {
    std::vector<std::vector<float>> inputs;  // per member
    std::vector<float> result;
    int arrived = 0;
    int left = 0;
    bool ready = false;
  };
  // Deposits `mine`, waits for the others, and returns the whole result (the reduction or the
  // concatenation), or an error when aborted.
  Expected<std::vector<float>> meet(CollectiveCall const& call, Op op, std::span<float const> mine);

  std::vector<BlockStore*> stores_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::map<std::uint64_t, Meeting> meetings_;
  bool aborted_ = false;
};

}  // namespace cleave::runtime
