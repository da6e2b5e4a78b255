#include "runtime/arena.h"

#include <algorithm>

#include "support/assert.h"
#include "support/format_bytes.h"

namespace cleave::runtime {

Arena::Arena(std::string device_name, Bytes capacity, memory::Pool pool)
    : device_(std::move(device_name)), capacity_(capacity) {
  if (!pool.classes.empty()) pool_.emplace(std::move(pool));
}

Expected<Charge> Arena::allocate(Bytes size, std::string const& what) {
  std::lock_guard lock(mutex_);
  std::int64_t after = in_use_ + size.value();
  if (after > capacity_.value()) {
    std::int64_t shortfall = after - capacity_.value();
    return Error(ErrorCode::out_of_memory,
                 "device " + device_ + " is out of memory: " + what + " needs " +
                     format_bytes(size) + " with " + format_bytes(Bytes(in_use_)) + " of " +
                     format_bytes(capacity_) + " in use, " + format_bytes(Bytes(shortfall)) + " (" +
                     std::to_string(shortfall) +
                     " bytes) short; give the device more memory or plan again for it");
  }
  Charge charge{size, std::nullopt};
  if (pool_) {
    charge.slot = pool_->allocate(size.value());
    if (!charge.slot)
      return Error(ErrorCode::out_of_memory,
                   "device " + device_ + " is out of memory: " + what + " needs " +
                       format_bytes(size) + " and its plan's pool (" +
                       memory::pool_to_string(pool_->pool()) +
                       ") has no free object that holds it; plan again for the device");
  }
  in_use_ = after;
  peak_ = std::max(peak_, in_use_);
  samples_.push_back({std::chrono::steady_clock::now(), in_use_});
  return charge;
}

void Arena::release(Charge const& charge) {
  std::lock_guard lock(mutex_);
  CLEAVE_ASSERT(charge.bytes.value() <= in_use_, "an arena released more than it holds");
  in_use_ -= charge.bytes.value();
  if (charge.slot) pool_->release(*charge.slot);
  samples_.push_back({std::chrono::steady_clock::now(), in_use_});
}

Bytes Arena::peak() const {
  std::lock_guard lock(mutex_);
  return Bytes(peak_);
}

std::vector<ArenaSample> Arena::samples() const {
  std::lock_guard lock(mutex_);
  return samples_;
}

}  // namespace cleave::runtime
