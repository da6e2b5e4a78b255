// An index of a tensor's blocks by region, for the lowering's fetches (issue 21).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "tdl/piece.h"

namespace cleave::lower {

// Whether `inner` lies inside `outer` (same rank).
inline bool contains(tdl::Box const& outer, tdl::Box const& inner) {
  for (std::size_t d = 0; d < outer.size(); ++d)
    if (inner[d].lo < outer[d].lo || inner[d].hi > outer[d].hi) return false;
  return true;
}

// The blocks of a tensor (anything with a `region` box) that may overlap a region, found without
// testing every block (issue 21: with a block and a reading piece per device, testing every pair
// grew with devices squared). Blocks are ordered along the dimension that tells most of them apart;
// where their intervals there are ordered too (both ends ascending, as in every partition and
// reduce-scatter the lowering makes), the overlapping ones are a range found by binary search.
// Otherwise every block is a candidate. Candidates come in the blocks' order, so the lowering is
// the same either way.
template <typename Block> class BlockIndex {
 public:
  explicit BlockIndex(std::vector<Block> const& blocks) : blocks_(blocks) {
    std::size_t rank = blocks.empty() ? 0 : blocks[0].region.size();
    std::size_t most = 0;
    for (std::size_t d = 0; d < rank; ++d) {
      std::vector<std::int64_t> starts;
      for (auto const& b : blocks)
        starts.push_back(b.region[d].lo);
      std::sort(starts.begin(), starts.end());
      auto distinct =
          static_cast<std::size_t>(std::unique(starts.begin(), starts.end()) - starts.begin());
      if (distinct > most) most = distinct, dim_ = d;
    }
    if (most < 2) return;
    sorted_.resize(blocks.size());
    for (std::uint32_t i = 0; i < blocks.size(); ++i)
      sorted_[i] = i;
    std::stable_sort(sorted_.begin(), sorted_.end(), [&](std::uint32_t a, std::uint32_t b) {
      return blocks[a].region[dim_].lo < blocks[b].region[dim_].lo;
    });
    for (std::size_t i = 1; i < sorted_.size(); ++i)
      if (at(i).hi < at(i - 1).hi) {
        sorted_.clear();
        return;
      }
  }

  // The indices of the blocks that may overlap `region`, ascending.
  void candidates(tdl::Box const& region, std::vector<std::uint32_t>& out) const {
    out.clear();
    if (sorted_.empty()) {
      for (std::uint32_t i = 0; i < blocks_.size(); ++i)
        out.push_back(i);
      return;
    }
    tdl::Interval want = region[dim_];
    auto first = std::partition_point(sorted_.begin(), sorted_.end(),
                                      [&](std::uint32_t b) { return hi(b) <= want.lo; });
    auto last = std::partition_point(first, sorted_.end(),
                                     [&](std::uint32_t b) { return lo(b) < want.hi; });
    out.assign(first, last);
    std::sort(out.begin(), out.end());
  }

 private:
  tdl::Interval const& at(std::size_t i) const { return blocks_[sorted_[i]].region[dim_]; }
  std::int64_t lo(std::uint32_t b) const { return blocks_[b].region[dim_].lo; }
  std::int64_t hi(std::uint32_t b) const { return blocks_[b].region[dim_].hi; }

  std::vector<Block> const& blocks_;
  std::size_t dim_ = 0;
  std::vector<std::uint32_t> sorted_;  // by their interval along dim_; empty: scan them all
};

}  // namespace cleave::lower
