#include "memory/pool.h"

#include <algorithm>

#include "support/assert.h"
#include "support/format_bytes.h"

namespace cleave::memory {

Bytes pool_bytes(Pool const& pool) {
  std::int64_t total = 0;
  for (auto const& c : pool.classes)
    total += c.object_bytes * c.objects;
  return Bytes(total);
}

std::vector<std::int64_t> class_offsets(Pool const& pool) {
  std::vector<std::int64_t> out;
  std::int64_t at = 0;
  for (auto const& c : pool.classes) {
    out.push_back(at);
    at += c.object_bytes * c.objects;
  }
  return out;
}

std::string pool_to_string(Pool const& pool) {
  std::string out;
  for (auto const& c : pool.classes)
    out += (out.empty() ? "" : ", ") + std::to_string(c.objects) + "x" +
           format_bytes(Bytes(c.object_bytes));
  return out.empty() ? "empty" : out;
}

PoolAllocator::PoolAllocator(Pool pool) : pool_(std::move(pool)), offsets_(class_offsets(pool_)) {
  for (std::size_t c = 0; c < pool_.classes.size(); ++c) {
    CLEAVE_ASSERT(pool_.classes[c].objects >= 1, "a size class without objects");
    CLEAVE_ASSERT(c == 0 || pool_.classes[c - 1].object_bytes < pool_.classes[c].object_bytes,
                  "size classes not in ascending object size");
    taken_.emplace_back(static_cast<std::size_t>(pool_.classes[c].objects), false);
  }
  fragmentation_.pool_bytes = pool_bytes(pool_).value();
}

std::optional<Slot> PoolAllocator::allocate(std::int64_t bytes) {
  auto first =
      std::lower_bound(pool_.classes.begin(), pool_.classes.end(), bytes,
                       [](SizeClass const& c, std::int64_t b) { return c.object_bytes < b; });
  auto c = static_cast<std::size_t>(first - pool_.classes.begin());
  if (c == taken_.size()) return std::nullopt;
  auto free = std::find(taken_[c].begin(), taken_[c].end(), false);
  if (free == taken_[c].end()) return std::nullopt;
  *free = true;
  auto index = static_cast<std::int64_t>(free - taken_[c].begin());
  std::int64_t object = pool_.classes[c].object_bytes;
  object_bytes_ += object;
  block_bytes_ += bytes;
  if (object_bytes_ > fragmentation_.peak_object_bytes) {
    fragmentation_.peak_object_bytes = object_bytes_;
    fragmentation_.peak_block_bytes = block_bytes_;
  }
  return Slot{static_cast<std::uint32_t>(c), index, offsets_[c] + index * object, bytes};
}

void PoolAllocator::release(Slot const& slot) {
  auto& taken = taken_.at(slot.size_class);
  CLEAVE_ASSERT(taken.at(static_cast<std::size_t>(slot.index)), "releasing a free pool object");
  taken[static_cast<std::size_t>(slot.index)] = false;
  object_bytes_ -= pool_.classes[slot.size_class].object_bytes;
  block_bytes_ -= slot.bytes;
}

}  // namespace cleave::memory
