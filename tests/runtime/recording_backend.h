// A real backend (in-process) that records every call and, when told to, fails one: a device's
// worker calling for the n-th time (a peer that went away: the call
// fails, and the executor must abort the backend), so that tests see which worker made which call
// and what a failing backend does to a run.
#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "runtime/comm_backend.h"

namespace cleave::runtime::testing {

class RecordingBackend final : public CommBackend {
 public:
  enum class Call { send, receive, all_reduce, all_gather, reduce_scatter };
  struct Record {
    Call call;
    std::uint64_t key;
    int device;  // the caller's: a send's source, a receive's destination, a collective's member
    std::thread::id thread;
  };
  // The failure: the `count`-th call (from 1) of `device`'s worker.
  struct Fault {
    int device = 0;
    int count = 1;
  };

  RecordingBackend() = default;
  explicit RecordingBackend(Fault fault) : fault_(fault) {}

  Status send(Message const& m, Payload payload) override {
    CLEAVE_CHECK_OK(record(Call::send, m.key, m.source));
    return inner_.send(m, std::move(payload));
  }
  Status receive(Message const& m, std::span<float> out) override {
    CLEAVE_CHECK_OK(record(Call::receive, m.key, m.destination));
    return inner_.receive(m, out);
  }
  Status all_reduce(CollectiveCall const& c, std::span<float> data) override {
    CLEAVE_CHECK_OK(record(Call::all_reduce, c.key, c.device));
    return inner_.all_reduce(c, data);
  }
  Status all_gather(CollectiveCall const& c, std::span<float const> mine,
                    std::span<float> out) override {
    CLEAVE_CHECK_OK(record(Call::all_gather, c.key, c.device));
    return inner_.all_gather(c, mine, out);
  }
  Status reduce_scatter(CollectiveCall const& c, std::span<float const> in,
                        std::span<float> out) override {
    CLEAVE_CHECK_OK(record(Call::reduce_scatter, c.key, c.device));
    return inner_.reduce_scatter(c, in, out);
  }
  void abort() override { inner_.abort(); }
  Expected<bool> arrived(Message const& m) override { return inner_.arrived(m); }
  Expected<bool> joined(CollectiveCall const& c) override { return inner_.joined(c); }

  std::vector<Record> records() const {
    std::lock_guard lock(mutex_);
    return records_;
  }

 private:
  Status record(Call call, std::uint64_t key, int device) {
    bool fail = false;
    {
      std::lock_guard lock(mutex_);
      records_.push_back({call, key, device, std::this_thread::get_id()});
      if (fault_ && fault_->device == device && --fault_->count == 0) fail = true;
    }
    if (!fail) return Status::ok();
    return Error(ErrorCode::execution_failed,
                 "lost the connection to device " + std::to_string(device) + "'s peers");
  }

  InProcessBackend inner_;
  mutable std::mutex mutex_;
  std::vector<Record> records_;
  std::optional<Fault> fault_;
};

}  // namespace cleave::runtime::testing
