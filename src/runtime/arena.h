// A device's memory arena (DESIGN.md "Runtime"): every block a device holds is charged to it, and
// it refuses what would pass the device's capacity, so a plan that claims to fit must fit when it
// runs. A block is charged its size in its tensor's dtype (what the plan and the simulator count),
// although CPU workers store every element as fp32. With a pool (the plan's, memory/pool.h), each
// block (those held before the step included) also takes an object of the pool, so that a plan
// whose blocks fit its pool in simulation fits it here.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "memory/pool.h"
#include "support/status.h"
#include "support/units.h"

namespace cleave::runtime {

// The bytes an arena holds from a moment on: one per allocation and per release.
struct ArenaSample {
  std::chrono::steady_clock::time_point at;
  std::int64_t bytes = 0;
};

// What an arena holds for a block: its bytes and, in a pool, its object.
struct Charge {
  Bytes bytes;
  std::optional<memory::Slot> slot;
};

class Arena {
 public:
  // A pool without classes: none.
  Arena(std::string device_name, Bytes capacity, memory::Pool pool = {});

  // Charges `size` for a block of `what` ("tensor fc.w[0,4)x[0,8)") and an object of the pool, if
  // there is one; an out_of_memory error that names the device, the block and the shortfall (or
  // the full pool) when it does not fit. Thread-safe.
  Expected<Charge> allocate(Bytes size, std::string const& what);
  void release(Charge const& charge);

  Bytes peak() const;
  // What it held over its life, in order (the measured memory over time of a step, since an
  // executor gives each step fresh arenas).
  std::vector<ArenaSample> samples() const;
  Bytes capacity() const { return capacity_; }
  std::string const& device() const { return device_; }

 private:
  std::string device_;
  Bytes capacity_;
  mutable std::mutex mutex_;
  std::int64_t in_use_ = 0;
  std::int64_t peak_ = 0;
  std::vector<ArenaSample> samples_;
  std::optional<memory::PoolAllocator> pool_;
};

}  // namespace cleave::runtime
