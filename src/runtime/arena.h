// A device's memory arena (DESIGN.md "Runtime"): every block a device holds is charged to it, and
// it refuses what would pass the device's capacity, so a plan that claims to fit must fit when it
// runs. A block is charged its size in its tensor's dtype (what the plan and the simulator count),
// although CPU workers store every element as fp32.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "support/status.h"
#include "support/units.h"

namespace cleave::runtime {

class Arena {
 public:
  Arena(std::string device_name, Bytes capacity)
      : device_(std::move(device_name)), capacity_(capacity) {}

  // Charges `size` for a block of `what` ("tensor fc.w[0,4)x[0,8)"); an out_of_memory error that
  // names the device, the block and the shortfall when it does not fit. Thread-safe.
  Status allocate(Bytes size, std::string const& what);
  void release(Bytes size);

  Bytes peak() const;
  Bytes capacity() const { return capacity_; }
  std::string const& device() const { return device_; }

 private:
  std::string device_;
  Bytes capacity_;
  mutable std::mutex mutex_;
  std::int64_t in_use_ = 0;
  std::int64_t peak_ = 0;
};

}  // namespace cleave::runtime
