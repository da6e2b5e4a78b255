// The allocation half of SwapAdvisor's chromosome (PAPERS.md §4): the distinct block sizes of a
// step, sorted, each mapped to a size class (the first to class 0, each next to the same class or
// the next one), and a number of objects per class. A class's objects are as large as its largest
// size, so the mapping trades internal fragmentation (few classes) against objects that only
// some blocks can use (many). Crossover and mutation may break the mapping's steps or overfill
// the device; `repair` restores both.
//
// A block is counted in its own class only (the paper's rule): a pool holds a set of blocks
// exactly when no class has more of them than objects, whatever order they come in, so a plan
// that fits the pool in the planner's walk fits it in the simulated and the real step, whose
// copies and frees interleave otherwise (PoolAllocator, which would let a block take a larger
// class's object, never has to).
#pragma once

#include <cstdint>
#include <vector>

#include "memory/pool.h"
#include "support/status.h"

namespace cleave::memory {

struct AllocationProblem {
  std::vector<std::int64_t> sizes;  // the distinct block sizes, strictly ascending
  // Sizes (indices into `sizes`, repeated as often as needed) that must be held at once, such as
  // one op's inputs and output: every class keeps objects enough for each such set.
  std::vector<std::vector<std::uint32_t>> together;
  std::int64_t capacity = 0;  // the bytes the pool may take
  // Sizes held beside every set (such as blocks that live to the step's end from wherever their
  // writer runs).
  std::vector<std::uint32_t> always;
  // least_classes(*this), where computed once for many repairs; empty: repair computes it.
  std::vector<std::uint32_t> least_classes;
};

struct Allocation {
  std::vector<std::uint32_t> size_class;  // per size
  std::vector<std::int64_t> objects;      // per class
  bool operator==(Allocation const&) const = default;
};

// The pool an allocation describes (object size: the largest size of the class; a class without
// objects left out).
Pool pool_of(AllocationProblem const& problem, Allocation const& allocation);
// Per class of `size_class`, the fewest objects that hold every `together` set: the most blocks
// of one set in that class, and those of `always`.
std::vector<std::int64_t> min_objects(AllocationProblem const& problem,
                                      std::vector<std::uint32_t> const& size_class);

// The classes whose minima take the fewest bytes of all mappings (a split of the sorted sizes,
// found by dynamic programming): where their pool overfills the capacity, every pool does.
std::vector<std::uint32_t> least_classes(AllocationProblem const& problem);

// Whether an allocation is one `repair` could return: a class per size, the first 0 and steps of
// 0 or 1, objects enough in each class for every `together` set, and a pool within capacity. The
// error says which rule it breaks. A class that no set needs may have no objects (pool_of leaves
// it out).
Status check_allocation(AllocationProblem const& problem, Allocation const& allocation);

// The allocation with its mapping made monotone (a step back or beyond one is cut to the nearest
// allowed), a count for every class, at least its minimum (min_objects), and, where the pool is
// over capacity, each class's objects above its minimum cut in proportion until it fits. Where the
// mapping's minima overfill the capacity, least_classes in its place; an error only when even
// those overfill it: no pool holds what the step needs at once.
Expected<Allocation> repair(AllocationProblem const& problem, Allocation allocation);

}  // namespace cleave::memory
