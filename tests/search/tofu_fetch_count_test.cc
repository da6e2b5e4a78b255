// BlockIndex::fetched_elements (src/search/tofu/fetch_count.h) against the fetches listed one by
// one, as the lowering emits them: every (read, block on another device) pair with a nonempty
// intersection is a fetch, identical ones (part, source, destination, region) count once.
#include <gtest/gtest.h>
#include <random>
#include <set>
#include <tuple>

#include "search/tofu/fetch_count.h"

namespace cleave::search::tofu {
namespace {

std::int64_t listed_elements(std::vector<Block> const& blocks, std::vector<Read> const& reads) {
  std::set<std::tuple<bool, int, int, std::vector<std::pair<std::int64_t, std::int64_t>>>> fetches;
  std::int64_t total = 0;
  for (auto const& r : reads)
    for (auto const& b : blocks) {
      if (b.device == r.device) continue;
      tdl::Box part = tdl::intersect(*r.region, b.box);
      std::int64_t volume = tdl::box_volume(part);
      std::vector<std::pair<std::int64_t, std::int64_t>> key;
      for (auto const& i : part)
        key.push_back({i.lo, i.hi});
      if (volume > 0 && fetches.insert({r.late, b.device, r.device, key}).second) total += volume;
    }
  return total;
}

// Cut points of [0, extent): 0 < ... < extent.
std::vector<std::int64_t> cuts(std::mt19937& rng, std::int64_t extent) {
  std::vector<std::int64_t> out{0, extent};
  int n = extent >= 2 ? std::uniform_int_distribution<int>(0, 4)(rng) : 0;
  for (int i = 0; i < n; ++i)
    out.push_back(std::uniform_int_distribution<std::int64_t>(1, extent - 1)(rng));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// The cells of a random grid over `extents`, on random devices of `devices`; with `irregular`, one
// cell is cut in two along a dimension of its own (the blocks then tile no grid).
std::vector<Block> random_blocks(std::mt19937& rng, std::vector<std::int64_t> const& extents,
                                 int devices, bool irregular) {
  std::vector<std::vector<std::int64_t>> bounds;
  for (auto e : extents)
    bounds.push_back(cuts(rng, e));
  std::vector<Block> out{{tdl::Box{}, 0}};
  for (auto const& b : bounds) {
    std::vector<Block> next;
    for (auto const& block : out)
      for (std::size_t i = 0; i + 1 < b.size(); ++i) {
        next.push_back(block);
        next.back().box.push_back({b[i], b[i + 1]});
      }
    out = std::move(next);
  }
  std::uniform_int_distribution<int> device(0, devices - 1);
  for (auto& block : out)
    block.device = device(rng);
  if (irregular && !extents.empty()) {
    auto& cell = out[std::uniform_int_distribution<std::size_t>(0, out.size() - 1)(rng)];
    auto d = std::uniform_int_distribution<std::size_t>(0, extents.size() - 1)(rng);
    if (cell.box[d].size() >= 2) {
      Block half = cell;
      half.box[d].lo = cell.box[d].hi = (cell.box[d].lo + cell.box[d].hi) / 2;
      half.device = device(rng);
      out.push_back(half);
    }
  }
  return out;
}

// Regions drawn from a small pool (so that devices read equal and overlapping regions), some past
// the tensor's extent, some empty.
std::vector<tdl::Box> random_regions(std::mt19937& rng, std::vector<std::int64_t> const& extents) {
  std::vector<tdl::Box> out(6);
  for (auto& box : out)
    for (auto e : extents) {
      std::int64_t lo = std::uniform_int_distribution<std::int64_t>(-1, e)(rng);
      std::int64_t hi = std::uniform_int_distribution<std::int64_t>(lo, e + 1)(rng);
      box.push_back({lo, hi});
    }
  return out;
}

TEST(TofuFetchCount, EqualsTheFetchesListedOneByOne) {
  std::mt19937 rng(21);
  int grids = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::size_t rank = std::uniform_int_distribution<std::size_t>(0, 3)(rng);
    std::vector<std::int64_t> extents;
    for (std::size_t d = 0; d < rank; ++d)
      extents.push_back(std::uniform_int_distribution<std::int64_t>(1, 12)(rng));
    int devices = std::uniform_int_distribution<int>(1, 6)(rng);
    auto blocks = random_blocks(rng, extents, devices, trial % 4 == 3);
    auto pool = random_regions(rng, extents);
    std::vector<Read> reads;
    // Up to 24 reads on few devices: some device reads more regions than inclusion and
    // exclusion takes (kMaxRegionsByInclusion).
    int n = std::uniform_int_distribution<int>(0, 24)(rng);
    for (int i = 0; i < n; ++i)
      reads.push_back({std::bernoulli_distribution(0.3)(rng),
                       std::uniform_int_distribution<int>(0, devices)(rng),
                       &pool[std::uniform_int_distribution<std::size_t>(0, pool.size() - 1)(rng)]});
    std::int64_t expected = listed_elements(blocks, reads);
    BlockIndex index(blocks);
    grids += trial % 4 != 3;
    ASSERT_EQ(index.fetched_elements(reads), expected) << "trial " << trial << ", rank " << rank;
  }
  EXPECT_GT(grids, 2000);
}

TEST(TofuFetchCount, ManyRegionsOnOneDeviceOverAGrid) {
  // Nine distinct regions on device 0 (one past inclusion and exclusion), nested and
  // overlapping, over a 4 x 4 grid on devices 1..4, against the listed fetches.
  std::vector<Block> blocks;
  for (std::int64_t i = 0; i < 4; ++i)
    for (std::int64_t j = 0; j < 4; ++j)
      blocks.push_back(
          {{{2 * i, 2 * i + 2}, {3 * j, 3 * j + 3}}, static_cast<int>(1 + (i + j) % 4)});
  std::vector<tdl::Box> regions;
  for (std::int64_t r = 0; r < 9; ++r)
    regions.push_back({{r % 3, 8 - r / 3}, {r, 12 - r}});
  std::vector<Read> reads;
  for (auto const& region : regions)
    reads.push_back({false, 0, &region});
  std::int64_t expected = listed_elements(blocks, reads);
  EXPECT_GT(expected, 0);
  EXPECT_EQ(BlockIndex(blocks).fetched_elements(reads), expected);
}

}  // namespace
}  // namespace cleave::search::tofu
