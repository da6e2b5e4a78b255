#include "search/tofu/fetch_count.h"

#include <algorithm>
#include <array>
#include <bit>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "lower/program.h"

namespace cleave::search::tofu {
namespace {

// Past this many distinct regions on one device the grid's sum by inclusion and exclusion (2^m
// terms) costs more than visiting the cells the regions cover.
constexpr std::size_t kMaxRegionsByInclusion = 8;

tdl::Interval clip(tdl::Interval a, tdl::Interval b) {
  return {std::max(a.lo, b.lo), std::min(a.hi, b.hi)};
}

// Volume of a ∩ b, 0 when empty.
std::int64_t common_volume(tdl::Box const& a, tdl::Box const& b) {
  std::int64_t volume = 1;
  for (std::size_t d = 0; d < a.size() && volume > 0; ++d)
    volume *= clip(a[d], b[d]).size();
  return volume;
}

// The volumes of the distinct nonempty intersections of `regions` with `box` (what a device
// reading `regions` fetches from one block: identical fetches once).
std::int64_t distinct_volume(std::vector<tdl::Box const*> const& regions, tdl::Box const& box) {
  if (regions.size() == 1) return common_volume(*regions[0], box);
  std::vector<tdl::Box> seen;
  std::int64_t total = 0;
  for (auto const* region : regions) {
    tdl::Box part = tdl::intersect(*region, box);
    std::int64_t volume = tdl::box_volume(part);
    if (volume == 0 || std::find(seen.begin(), seen.end(), part) != seen.end()) continue;
    total += volume;
    seen.push_back(std::move(part));
  }
  return total;
}

// The cell boundaries per dimension when every block is one cell of their grid and every cell
// one block; none otherwise.
std::optional<std::vector<std::vector<std::int64_t>>>
grid_bounds(std::vector<Block> const& blocks) {
  if (blocks.empty()) return std::nullopt;
  std::size_t rank = blocks[0].box.size();
  std::vector<std::vector<std::int64_t>> bounds(rank);
  for (auto const& b : blocks) {
    if (b.box.size() != rank || tdl::box_volume(b.box) == 0) return std::nullopt;
    for (std::size_t d = 0; d < rank; ++d) {
      bounds[d].push_back(b.box[d].lo);
      bounds[d].push_back(b.box[d].hi);
    }
  }
  std::size_t cells = 1;
  for (auto& bd : bounds) {
    std::sort(bd.begin(), bd.end());
    bd.erase(std::unique(bd.begin(), bd.end()), bd.end());
    cells *= bd.size() - 1;
    if (cells > blocks.size()) return std::nullopt;
  }
  if (cells != blocks.size()) return std::nullopt;
  std::vector<bool> taken(cells, false);
  for (auto const& b : blocks) {
    std::size_t cell = 0;
    for (std::size_t d = 0; d < rank; ++d) {
      auto const& bd = bounds[d];
      auto i = static_cast<std::size_t>(std::lower_bound(bd.begin(), bd.end(), b.box[d].lo) -
                                        bd.begin());
      if (bd[i + 1] != b.box[d].hi) return std::nullopt;
      cell = cell * (bd.size() - 1) + i;
    }
    if (taken[cell]) return std::nullopt;
    taken[cell] = true;
  }
  return bounds;
}

}  // namespace

std::size_t BlockIndex::KeyHash::operator()(std::vector<std::int64_t> const& key) const {
  std::size_t h = key.size();
  for (std::int64_t x : key)
    h = h * 1000003 ^ std::hash<std::int64_t>{}(x);
  return h;
}

BlockIndex::BlockIndex(std::vector<Block> blocks) : blocks_(std::move(blocks)) {
  auto bounds = grid_bounds(blocks_);
  grid_ = bounds.has_value();
  if (grid_) bounds_ = std::move(*bounds);
  for (std::size_t i = 0; i < blocks_.size(); ++i)
    on_device_.push_back({blocks_[i].device, i});
  std::sort(on_device_.begin(), on_device_.end());
}

std::int64_t BlockIndex::fetched_elements(std::vector<Read>& reads) const {
  std::erase_if(reads, [](Read const& r) { return tdl::box_volume(*r.region) == 0; });
  std::sort(reads.begin(), reads.end(), [](Read const& a, Read const& b) {
    return std::tie(a.late, a.device) < std::tie(b.late, b.device);
  });
  std::int64_t total = 0;
  std::vector<tdl::Box const*> regions;
  for (std::size_t i = 0; i < reads.size();) {
    regions.clear();
    std::size_t j = i;
    for (; j < reads.size() && reads[j].late == reads[i].late && reads[j].device == reads[i].device;
         ++j)
      if (std::none_of(regions.begin(), regions.end(),
                       [&](tdl::Box const* r) { return *r == *reads[j].region; }))
        regions.push_back(reads[j].region);
    total += device_elements(reads[i].device, regions);
    i = j;
  }
  return total;
}

std::int64_t BlockIndex::device_elements(int device,
                                         std::vector<tdl::Box const*> const& regions) const {
  auto own = std::equal_range(on_device_.begin(), on_device_.end(), std::make_pair(device, 0),
                              [](auto const& a, auto const& b) { return a.first < b.first; });
  std::int64_t total = 0;
  if (grid_) {
    total = regions.size() == 1 ? grid_elements(regions) : remembered_grid_elements(regions);
    for (auto it = own.first; it != own.second; ++it)
      total -= distinct_volume(regions, blocks_[it->second].box);
    return total;
  }
  for (auto const& block : blocks_)
    if (block.device != device) total += distinct_volume(regions, block.box);
  return total;
}

std::int64_t
BlockIndex::remembered_grid_elements(std::vector<tdl::Box const*> const& regions) const {
  // Keyed by the regions in order of their boxes: the sum does not depend on their order.
  std::vector<tdl::Box const*> sorted = regions;
  std::sort(sorted.begin(), sorted.end(),
            [](tdl::Box const* a, tdl::Box const* b) { return lower::box_less(*a, *b); });
  key_.clear();
  for (auto const* r : sorted)
    for (auto const& i : *r) {
      key_.push_back(i.lo);
      key_.push_back(i.hi);
    }
  auto it = grid_sums_.find(key_);
  if (it == grid_sums_.end()) it = grid_sums_.emplace(key_, grid_elements(sorted)).first;
  return it->second;
}

std::int64_t BlockIndex::grid_elements(std::vector<tdl::Box const*> const& regions) const {
  std::size_t rank = bounds_.size();
  if (regions.size() > kMaxRegionsByInclusion) {
    // The cells the regions' hull covers, one by one.
    std::vector<std::size_t> first(rank), last(rank), at(rank);
    for (std::size_t d = 0; d < rank; ++d) {
      auto const& bd = bounds_[d];
      std::int64_t lo = bd.back(), hi = bd.front();
      for (auto const* r : regions) {
        lo = std::min(lo, (*r)[d].lo);
        hi = std::max(hi, (*r)[d].hi);
      }
      first[d] = at[d] = static_cast<std::size_t>(
          std::max<std::ptrdiff_t>(std::upper_bound(bd.begin(), bd.end(), lo) - bd.begin() - 1, 0));
      last[d] = std::min(
          static_cast<std::size_t>(std::lower_bound(bd.begin(), bd.end(), hi) - bd.begin()),
          bd.size() - 1);
      if (last[d] <= first[d]) return 0;
    }
    std::int64_t total = 0;
    tdl::Box cell(rank);
    for (;;) {
      for (std::size_t d = 0; d < rank; ++d)
        cell[d] = {bounds_[d][at[d]], bounds_[d][at[d] + 1]};
      total += distinct_volume(regions, cell);
      std::size_t d = rank;
      while (d-- > 0 && ++at[d] == last[d])
        at[d] = first[d];
      if (d >= rank) return total;
    }
  }
  // Per cell, region j counts unless an earlier region meets the cell in the same box:
  // prod over i < j of (1 - [same]) expanded, each term a product over dimensions.
  std::int64_t total = 0;
  for (std::size_t j = 0; j < regions.size(); ++j) {
    // Only earlier regions that meet region j can meet a cell in the same box.
    std::uint32_t meets = 0;
    for (std::size_t s = 0; s < j; ++s)
      if (common_volume(*regions[s], *regions[j]) > 0) meets |= std::uint32_t{1} << s;
    for (std::uint32_t others = meets;; others = (others - 1) & meets) {
      std::int64_t term = 1;
      for (std::size_t d = 0; d < rank && term != 0; ++d)
        term *= shared_length(d, regions, j, others);
      total += std::popcount(others) % 2 == 0 ? term : -term;
      if (others == 0) break;
    }
  }
  return total;
}

std::int64_t BlockIndex::shared_length(std::size_t d, std::vector<tdl::Box const*> const& regions,
                                       std::size_t j, std::uint32_t others) const {
  auto const& bd = bounds_[d];
  tdl::Interval a = (*regions[j])[d];
  tdl::Interval inside = a;  // what every interval covers
  // The ends of the intervals (at most kMaxRegionsByInclusion of them).
  std::array<std::int64_t, 2 * kMaxRegionsByInclusion> ends{a.lo, a.hi - 1};
  std::size_t num_ends = 2;
  for (std::size_t s = 0; s < j; ++s)
    if (others >> s & 1) {
      inside = clip(inside, (*regions[s])[d]);
      ends[num_ends++] = (*regions[s])[d].lo;
      ends[num_ends++] = (*regions[s])[d].hi - 1;
    }
  // Cells inside every interval count whole; any other cell that counts holds an interval's end
  // (else it lies outside some interval: that intersection is empty, unlike j's or j's itself).
  std::ptrdiff_t i0 = std::lower_bound(bd.begin(), bd.end(), inside.lo) - bd.begin();
  std::ptrdiff_t i1 = std::upper_bound(bd.begin(), bd.end(), inside.hi) - bd.begin() - 1;
  std::int64_t total = 0;
  if (!inside.empty() && i1 > i0)
    total = bd[static_cast<std::size_t>(i1)] - bd[static_cast<std::size_t>(i0)];
  else
    i0 = i1 = 0;
  std::array<std::ptrdiff_t, 2 * kMaxRegionsByInclusion> checked{};
  std::size_t num_checked = 0;
  for (std::size_t e = 0; e < num_ends; ++e) {
    std::ptrdiff_t c = std::upper_bound(bd.begin(), bd.end(), ends[e]) - bd.begin() - 1;
    if (c < 0 || c + 1 >= static_cast<std::ptrdiff_t>(bd.size()) || (c >= i0 && c < i1) ||
        std::find(checked.begin(), checked.begin() + num_checked, c) !=
            checked.begin() + num_checked)
      continue;
    checked[num_checked++] = c;
    tdl::Interval cell{bd[static_cast<std::size_t>(c)], bd[static_cast<std::size_t>(c) + 1]};
    tdl::Interval part = clip(a, cell);
    bool same = !part.empty();
    for (std::size_t s = 0; s < j && same; ++s)
      if (others >> s & 1) same = clip((*regions[s])[d], cell) == part;
    if (same) total += part.size();
  }
  return total;
}

}  // namespace cleave::search::tofu
