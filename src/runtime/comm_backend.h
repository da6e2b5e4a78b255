// How device workers exchange data (DESIGN.md "Runtime"): the two ends of a point-to-point
// transfer and the collectives a program's transfers amount to. The executor is given a backend
// and talks only to this interface, which never reaches into another device's memory: a sender
// hands its bytes over, a receiver gets them, and every member of a collective calls with its own
// buffers. So an MPI backend (one rank per device, a later issue) can replace the in-process one;
// every rank lowers the same program, so the keys below (task and collective ids) match across
// ranks without any exchange.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "support/status.h"
#include "tdl/bound_op.h"

namespace cleave::runtime {

// One transfer, named alike by its sender and its receiver.
struct Message {
  std::uint64_t key = 0;  // the transfer task's id in the program
  int source = 0;
  int destination = 0;
};

// What a sender hands over: `data` stays valid, unchanged, for as long as `keep` is held (MPI's
// rule for a buffer in flight), so a sender need not copy a block it holds contiguously.
struct Payload {
  std::span<float const> data;
  std::shared_ptr<void const> keep;
};

// One member's part in a collective. Every member of `group` (distinct devices) calls with the
// same key, group, reducer and counts.
struct CollectiveCall {
  std::uint64_t key = 0;  // the same for all members of one collective, distinct across them
  std::vector<int> group;
  int device = 0;
  tdl::Reducer reducer = tdl::Reducer::sum;
  // all_gather, reduce_scatter: the k-th member's share in elements, in group order.
  std::vector<std::size_t> counts;
};

// out[i] = r(out[i], in[i]) for i < n: how partial results combine, in reduce tasks and in
// the in-process collectives.
void combine_into(float* out, float const* in, std::size_t n, tdl::Reducer r);

class CommBackend {
 public:
  virtual ~CommBackend() = default;
  // Hands the payload over and returns without waiting for the receiver.
  virtual Status send(Message const& message, Payload payload) = 0;
  // Waits for the message and copies it into `out`, which must have the size sent.
  virtual Status receive(Message const& message, std::span<float> out) = 0;
  // data (the same size on every member) becomes the element-wise reduction over the group.
  virtual Status all_reduce(CollectiveCall const& call, std::span<float> data) = 0;
  // out (the sum of counts) becomes every member's `mine` (counts[k] elements), in group order.
  virtual Status all_gather(CollectiveCall const& call, std::span<float const> mine,
                            std::span<float> out) = 0;
  // in: the same size (the sum of counts) on every member, the k-th member's share counts[k]
  // elements after the shares before it; out: this member's share of the reduction.
  virtual Status reduce_scatter(CollectiveCall const& call, std::span<float const> in,
                                std::span<float> out) = 0;
  // Wakes every member waiting for a message or for a collective's other members with an error;
  // later calls fail at once.
  virtual void abort() = 0;

  // Where devices run in several processes (ExecOptions::devices), a worker takes a receive only
  // once its message has arrived, and a part in a collective only once every member has joined
  // it (its own dependencies are done), so that it never blocks in a call while work a peer
  // waits for is queued behind it. Both poll without waiting; an error when the wait has lasted
  // longer than the backend allows (a peer that is gone).
  virtual Expected<bool> arrived(Message const& message) = 0;
  // The first call for a member is its joining.
  virtual Expected<bool> joined(CollectiveCall const& call) = 0;
};

// Workers as threads of one process. A message waits in a mailbox until received. The members of
// a collective meet: once all have arrived, each computes its share of the result from the
// others' buffers in place (the reduction split evenly among them, as a ring would split it),
// and none leaves before every share is done.
class InProcessBackend final : public CommBackend {
 public:
  Status send(Message const& message, Payload payload) override;
  Status receive(Message const& message, std::span<float> out) override;
  Status all_reduce(CollectiveCall const& call, std::span<float> data) override;
  Status all_gather(CollectiveCall const& call, std::span<float const> mine,
                    std::span<float> out) override;
  Status reduce_scatter(CollectiveCall const& call, std::span<float const> in,
                        std::span<float> out) override;
  void abort() override;
  Expected<bool> arrived(Message const& message) override;
  Expected<bool> joined(CollectiveCall const& call) override;

 private:
  struct Meeting {
    std::vector<float const*> inputs;  // per member, valid until every member has left
    std::vector<float> result;         // all_reduce: the whole reduction
    int arrived = 0;
    int done = 0;
    int left = 0;
  };
  // Deposits `mine`, waits for the others (an error when aborted first), runs `share` (this
  // member's part of the work, on the meeting's inputs), waits until every member's is done and
  // runs `after`. The first to arrive sizes the result.
  template <typename Share, typename After>
  Status meet(CollectiveCall const& call, float const* mine, std::size_t result_size,
              Share const& share, After const& after);

  // Waits (the lock held) until done(): first polls for up to spin_limit, with the lock released
  // between events, since waking a sleeping thread took 0.2 to 0.5 ms on virtual cores (the
  // executor's workers poll alike, docs/runtime.md); then sleeps.
  template <typename Done> void wait(std::unique_lock<std::mutex>& lock, Done const& done);
  void notify();  // the lock held: something a waiter may wait for happened

  static constexpr auto spin_limit = std::chrono::microseconds(500);
  std::mutex mutex_;
  std::condition_variable cv_;
  std::atomic<std::uint64_t> events_{0};
  std::map<std::uint64_t, Payload> mailbox_;
  std::map<std::uint64_t, Meeting> meetings_;
  struct Joining {
    std::vector<int> members;  // those who have joined
    std::size_t seen = 0;      // members who saw it complete; at the group's size it is dropped
  };
  std::map<std::uint64_t, Joining> joinings_;
  bool aborted_ = false;
};

}  // namespace cleave::runtime
