#include "runtime/arena.h"

#include <algorithm>

#include "support/assert.h"
#include "support/format_bytes.h"

namespace cleave::runtime {

Status Arena::allocate(Bytes size, std::string const& what) {
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
  in_use_ = after;
  peak_ = std::max(peak_, in_use_);
  return Status::ok();
}

void Arena::release(Bytes size) {
  std::lock_guard lock(mutex_);
  CLEAVE_ASSERT(size.value() <= in_use_, "an arena released more than it holds");
  in_use_ -= size.value();
}

Bytes Arena::peak() const {
  std::lock_guard lock(mutex_);
  return Bytes(peak_);
}

}  // namespace cleave::runtime
