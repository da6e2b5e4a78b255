// A device's memory pool (SwapAdvisor, PAPERS.md §4): a fixed number of objects per size class,
// each class one contiguous range of the device's memory, classes in ascending object size. A
// block takes an object of the smallest class whose objects hold it and that has one free, so
// that memory never fragments past what the pool's shape wastes: a plan made for a pool fits on
// the device exactly when its blocks find objects, whatever their order of arrival.
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

// Hands out a pool's objects: lowest free index of the smallest class that holds the block, so
// that the same requests in the same order get the same offsets. Not thread-safe.
class PoolAllocator {
 public:
  explicit PoolAllocator(Pool pool);

  // None when no class with a free object holds `bytes`.
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
