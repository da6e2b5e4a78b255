// A device's memory pool (SwapAdvisor, PAPERS.md §4): a fixed number of objects per size class,
// each class one contiguous range of the device's memory, classes in ascending object size. A
// block takes an object of its class, the smallest whose objects hold it, never a larger class's
// (the paper's rule): memory never fragments past what the pool's shape wastes, and whether the
// blocks held at once fit depends only on how many of each class there are, not on the order they
// come in, so a plan made for a pool fits it in the simulated and the real step alike.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "support/units.h"

namespace cleave::memory {

struct SizeClass {
  std::int64_t object_bytes = 0;
  std::int64_t objects = 0;
  bool operator==(SizeClass const&) const = default;
};

// Classes in strictly ascending object size, each with at least one object.
struct Pool {
  std::vector<SizeClass> classes;
  bool operator==(Pool const&) const = default;
};

// The bytes the pool reserves: sum of object size x objects.
Bytes pool_bytes(Pool const& pool);
// Per class, the offset of its first object from the pool's base (classes laid out in order).
std::vector<std::int64_t> class_offsets(Pool const& pool);
// "3x1.0 MiB, 2x4.0 MiB" for errors and reports.
std::string pool_to_string(Pool const& pool);

// An object handed out: its class, its index in the class and its offset from the pool's base.
struct Slot {
  std::uint32_t size_class = 0;
  std::int64_t index = 0;
  std::int64_t offset = 0;
  std::int64_t bytes = 0;  // what the block asked for (at most the object's size)
};

// How well a pool's shape matched what it held: at its fullest, the bytes its blocks asked for
// against the bytes of the objects they took; the rest is internal fragmentation.
struct Fragmentation {
  std::int64_t pool_bytes = 0;
  std::int64_t peak_object_bytes = 0;  // of the objects taken, at the most at once
  std::int64_t peak_block_bytes = 0;   // of the blocks in them, at that moment
  double wasted() const {
    return peak_object_bytes == 0 ? 0 : 1 - double(peak_block_bytes) / double(peak_object_bytes);
  }
};

// Hands out a pool's objects: lowest free index of the block's class (the smallest that holds
// it), so that the same requests in the same order get the same offsets. Not thread-safe.
class PoolAllocator {
 public:
  explicit PoolAllocator(Pool pool);

  // None when the class of `bytes` has no free object, or no class holds it.
  std::optional<Slot> allocate(std::int64_t bytes);
  void release(Slot const& slot);

  Pool const& pool() const { return pool_; }
  Fragmentation fragmentation() const { return fragmentation_; }

 private:
  Pool pool_;
  std::vector<std::int64_t> offsets_;
  std::vector<std::vector<bool>> taken_;  // per class, per object
  std::int64_t object_bytes_ = 0;         // of the objects taken now
  std::int64_t block_bytes_ = 0;          // of the blocks in them
  Fragmentation fragmentation_;
};

}  // namespace cleave::memory
