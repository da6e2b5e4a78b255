// Counting what a tensor's readers fetch from its blocks (comm_model.h) without listing the
// fetches (issue 21). A reader piece that reads a region held in n blocks fetches n parts, so a
// weight that every piece of a batch cut reads whole is about k^2 fetches on k devices: listing
// them made Tofu's request and evaluation grow with the square of the devices (GPT-3 at 256
// devices: 35 M fetches a step, 480 M box intersections). Fetches from different blocks are
// different (blocks are disjoint), so the total is a sum over blocks, and where the blocks tile a
// grid (an even cut's pieces, a reduce-scatter's parts) the sum over all of them is a product
// over dimensions of sums over intervals, each found by binary search: the work is per read,
// not per (read, block).
#pragma once

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tdl/piece.h"

namespace cleave::search::tofu {

// A block of a tensor held by one device (or device group, in a recursion step).
struct Block {
  tdl::Box box;
  int device = 0;
};

// One piece's read of a tensor: the region device `device` reads, in the tensor's late part or
// not (FetchPolicy::per_pass: the two parts' fetches never merge).
struct Read {
  bool late = false;
  int device = 0;
  tdl::Box const* region = nullptr;
};

// A tensor's blocks (disjoint, as a layout's are), indexed for counting.
class BlockIndex {
 public:
  explicit BlockIndex(std::vector<Block> blocks);
  std::vector<Block> const& blocks() const { return blocks_; }
  // Elements the reads fetch, as the lowering emits them: each read fetches its region's
  // intersection with every block on another device, and identical fetches (part, source,
  // destination, region) count once. Reorders `reads`.
  std::int64_t fetched_elements(std::vector<Read>& reads) const;

 private:
  // What the distinct regions one device reads in one part fetch from the blocks of others.
  std::int64_t device_elements(int device, std::vector<tdl::Box const*> const& regions) const;
  // grid_elements(), remembered: the pieces that read one region on many devices (a batch
  // cut's replicas of a weight's part) ask for the same sum.
  std::int64_t remembered_grid_elements(std::vector<tdl::Box const*> const& regions) const;
  // Sum over every cell of the grid of the distinct intersections of `regions` with it.
  std::int64_t grid_elements(std::vector<tdl::Box const*> const& regions) const;
  // Over every cell, what region j shares with the regions of `others` (a bit set) in dimension
  // d: the lengths of j's intersections with the cells where all of them intersect alike.
  std::int64_t shared_length(std::size_t d, std::vector<tdl::Box const*> const& regions,
                             std::size_t j, std::uint32_t others) const;

  std::vector<Block> blocks_;
  // Whether every block is one cell of the grid of their boundaries and every cell one block;
  // if not, the blocks are counted one by one.
  bool grid_ = false;
  std::vector<std::vector<std::int64_t>> bounds_;       // per dimension, the cells' boundaries
  std::vector<std::pair<int, std::size_t>> on_device_;  // (device, block), by device
  struct KeyHash {
    std::size_t operator()(std::vector<std::int64_t> const& key) const;
  };
  // remembered_grid_elements()'s sums by the regions' bounds, and its key's buffer.
  mutable std::unordered_map<std::vector<std::int64_t>, std::int64_t, KeyHash> grid_sums_;
  mutable std::vector<std::int64_t> key_;
};

}  // namespace cleave::search::tofu
