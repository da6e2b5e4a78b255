// The memory pool (size classes laid out one after another, a block in its class, the smallest
// that holds it) and the allocation chromosome's repair, which must always give a
// valid pool: monotone classes, enough objects for what one op holds at once, within capacity.
#include <gtest/gtest.h>
#include <limits>
#include <random>

#include "memory/allocation.h"
#include "memory/pool.h"

namespace cleave::memory {
namespace {

TEST(Pool, ClassesAreLaidOutInOrderAndBlocksTakeObjectsOfTheirOwnClass) {
  Pool pool{{{100, 2}, {1000, 1}}};
  EXPECT_EQ(pool_bytes(pool).value(), 1200);
  EXPECT_EQ(class_offsets(pool), (std::vector<std::int64_t>{0, 200}));
  PoolAllocator a(pool);
  auto x = a.allocate(60), y = a.allocate(100);
  ASSERT_TRUE(x && y);
  EXPECT_EQ(x->offset, 0);
  EXPECT_EQ(y->offset, 100);
  // Class 0 is full: a small block does not take the larger class's object (its fit would then
  // depend on the order blocks come in); a block of that class does.
  EXPECT_FALSE(a.allocate(10));
  auto z = a.allocate(101);
  ASSERT_TRUE(z);
  EXPECT_EQ(z->size_class, 1u);
  EXPECT_EQ(z->offset, 200);
  EXPECT_FALSE(a.allocate(101));
  // At the fullest, 1200 bytes of objects held 261 bytes of blocks.
  EXPECT_EQ(a.fragmentation().peak_object_bytes, 1200);
  EXPECT_EQ(a.fragmentation().peak_block_bytes, 261);
  EXPECT_NEAR(a.fragmentation().wasted(), 1 - 261.0 / 1200, 1e-12);
  a.release(*x);
  auto again = a.allocate(100);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->offset, 0);
  EXPECT_FALSE(a.allocate(1001));  // larger than every object
  EXPECT_EQ(pool_to_string(pool), "2x100 B, 1x1 KB");
}

TEST(Allocation, MinimaCoverWhatOneOpHoldsAtOnceInEachClass) {
  AllocationProblem p{{10, 20, 30}, {{0, 0, 1}, {2, 1, 1, 1}}, 1000};
  // One class for all: the second set holds 4 blocks at once.
  EXPECT_EQ(min_objects(p, {0, 0, 0}), (std::vector<std::int64_t>{4}));
  // A class per size: each class the most blocks of one set in it (a block takes an object of
  // its own class only).
  EXPECT_EQ(min_objects(p, {0, 1, 2}), (std::vector<std::int64_t>{2, 3, 1}));
  EXPECT_EQ(pool_of(p, {{0, 0, 1}, {2, 3}}), (Pool{{{20, 2}, {30, 3}}}));
  // A block held beside every set (one that lives to the step's end) takes an object of its own.
  p.always = {0};
  EXPECT_EQ(min_objects(p, {0, 1, 2}), (std::vector<std::int64_t>{3, 3, 1}));
  p.always.clear();
  // A class without objects is left out of the pool.
  EXPECT_EQ(pool_of(p, {{0, 1, 2}, {0, 3, 1}}), (Pool{{{20, 3}, {30, 1}}}));
}

TEST(Allocation, BrokenAllocationsAreNamedErrors) {
  AllocationProblem p{{10, 20}, {{0, 1}}, 100};
  EXPECT_TRUE(check_allocation(p, {{0, 1}, {1, 1}}).is_ok());
  auto says = [&](Allocation const& a, std::string const& what) {
    Status s = check_allocation(p, a);
    ASSERT_FALSE(s.is_ok());
    EXPECT_NE(s.error().to_string().find(what), std::string::npos) << s.error().to_string();
  };
  says({{1, 1}, {1, 1}}, "classes start at 0 and step by 0 or 1");
  says({{0, 1}, {1}}, "counts objects for 1 classes, not 2");
  says({{0, 0}, {1}}, "one op needs 2 at once");
  says({{0, 1}, {-1, 2}}, "gives class 0 -1 objects");
  says({{0, 1}, {5, 5}}, "over the capacity");
  auto tiny = repair({{10, 20}, {{0, 1}}, 25}, {{0, 1}, {1, 1}});
  ASSERT_FALSE(tiny.has_value());
  EXPECT_NE(tiny.error().to_string().find("over the pool's capacity"), std::string::npos);
}

// A mapping whose minima overfill the device is replaced by the least one where that fits: one
// class of 100 needs 3 objects (300 bytes) for the set {10, 10, 100}, a class per size 2 x 10 +
// 100; but where two sets hold {10, 10} and {20, 20}, one class of 2 x 20 beats 2 x 10 + 2 x 20.
TEST(Allocation, RepairFindsAPoolWhereTheChromosomesClassesCannotFit) {
  AllocationProblem p{{10, 100}, {{0, 0, 1}}, 150};
  EXPECT_EQ(least_classes(p), (std::vector<std::uint32_t>{0, 1}));
  auto r = repair(p, {{0, 0}, {3}});
  ASSERT_TRUE(r.has_value()) << r.error().to_string();
  EXPECT_EQ(*r, (Allocation{{0, 1}, {2, 1}}));
  AllocationProblem q{{10, 20}, {{0, 0}, {1, 1}}, 50};
  EXPECT_EQ(least_classes(q), (std::vector<std::uint32_t>{0, 0}));
  auto merged = repair(q, {{0, 1}, {2, 2}});
  ASSERT_TRUE(merged.has_value()) << merged.error().to_string();
  EXPECT_EQ(*merged, (Allocation{{0, 0}, {2}}));
}

// Property: whatever crossover and mutation leave (classes stepping anywhere, counts anywhere),
// repair gives an allocation check_allocation accepts, or an error exactly when no mapping's
// minima fit the capacity.
TEST(Allocation, RepairAlwaysGivesAValidPool) {
  std::mt19937_64 rng(42);
  int repaired = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    AllocationProblem p;
    std::int64_t size = 0;
    std::size_t sizes = std::uniform_int_distribution<std::size_t>(1, 12)(rng);
    for (std::size_t s = 0; s < sizes; ++s)
      p.sizes.push_back(size += std::uniform_int_distribution<std::int64_t>(1, 1 << 20)(rng));
    std::uniform_int_distribution<std::uint32_t> any_size(0, static_cast<std::uint32_t>(sizes - 1));
    for (int k = std::uniform_int_distribution<int>(0, 6)(rng); k > 0; --k) {
      std::vector<std::uint32_t> set(std::uniform_int_distribution<std::size_t>(1, 5)(rng));
      for (auto& s : set)
        s = any_size(rng);
      p.together.push_back(set);
    }
    for (int k = std::uniform_int_distribution<int>(0, 3)(rng); k > 0; --k)
      p.always.push_back(any_size(rng));
    p.capacity = std::uniform_int_distribution<std::int64_t>(0, std::int64_t(1) << 26)(rng);
    Allocation a;
    for (std::size_t s = 0; s < sizes; ++s)
      a.size_class.push_back(std::uniform_int_distribution<std::uint32_t>(0, 15)(rng));
    for (int c = std::uniform_int_distribution<int>(0, 16)(rng); c > 0; --c)
      a.objects.push_back(std::uniform_int_distribution<std::int64_t>(-5, 1000)(rng));
    auto r = repair(p, a);
    // Every mapping (a class break after each size or not): repair fails exactly when none holds
    // the sets within the capacity, and least_classes needs the least of them.
    auto floor = [&](std::vector<std::uint32_t> const& m) {
      return pool_bytes(pool_of(p, {m, min_objects(p, m)})).value();
    };
    std::int64_t least = std::numeric_limits<std::int64_t>::max();
    for (std::uint32_t breaks = 0; breaks < (1u << (sizes - 1)); ++breaks) {
      std::vector<std::uint32_t> m{0};
      for (std::size_t s = 1; s < sizes; ++s)
        m.push_back(m.back() + ((breaks >> (s - 1)) & 1));
      least = std::min(least, floor(m));
    }
    EXPECT_EQ(floor(least_classes(p)), least) << "trial " << trial;
    EXPECT_EQ(r.has_value(), least <= p.capacity) << "trial " << trial;
    if (!r) {
      EXPECT_NE(r.error().to_string().find("for the blocks held at once"), std::string::npos);
      continue;
    }
    ++repaired;
    Status s = check_allocation(p, *r);
    EXPECT_TRUE(s.is_ok()) << "trial " << trial << ": " << s.error().to_string();
    EXPECT_LE(pool_bytes(pool_of(p, *r)).value(), p.capacity);
    // A valid allocation is its own repair.
    auto twice = repair(p, *r);
    ASSERT_TRUE(twice.has_value());
    EXPECT_EQ(*twice, *r);
  }
  EXPECT_GT(repaired, 500);  // the property was exercised, not skipped
}

}  // namespace
}  // namespace cleave::memory
