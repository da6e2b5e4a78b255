// A device's block store: copy_box moves exactly the elements of a part between two row-major
// regions (checked element by element on random boxes), gather assembles a region from shards
// and overlapping halos, view() reads in place only where the region is contiguous, and dropped
// blocks lend their buffers to the next of their size.
#include <gtest/gtest.h>
#include <random>

#include "ir/graph_builder.h"
#include "ops/op_registry.h"
#include "runtime/block_store.h"

namespace cleave::runtime {
namespace {

// A random box inside `outer`.
tdl::Box random_inside(tdl::Box const& outer, std::mt19937& rng) {
  tdl::Box b;
  for (auto const& i : outer) {
    std::uniform_int_distribution<std::int64_t> lo(i.lo, i.hi - 1);
    std::int64_t a = lo(rng);
    std::uniform_int_distribution<std::int64_t> hi(a + 1, i.hi);
    b.push_back({a, hi(rng)});
  }
  return b;
}

// The element of `region` at row-major index k, as coordinates.
std::vector<std::int64_t> coords_of(tdl::Box const& region, std::int64_t k) {
  std::vector<std::int64_t> c(region.size());
  for (std::size_t d = region.size(); d-- > 0;) {
    c[d] = region[d].lo + k % region[d].size();
    k /= region[d].size();
  }
  return c;
}

std::int64_t index_in(tdl::Box const& region, std::vector<std::int64_t> const& c) {
  std::int64_t off = 0;
  for (std::size_t d = 0; d < region.size(); ++d)
    off = off * region[d].size() + (c[d] - region[d].lo);
  return off;
}

bool contains(tdl::Box const& region, std::vector<std::int64_t> const& c) {
  for (std::size_t d = 0; d < region.size(); ++d)
    if (c[d] < region[d].lo || c[d] >= region[d].hi) return false;
  return true;
}

TEST(CopyBox, MovesExactlyThePartOnRandomBoxes) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 500; ++trial) {
    std::size_t rank = 1 + trial % 4;
    tdl::Box whole;
    for (std::size_t d = 0; d < rank; ++d)
      whole.push_back({0, 1 + static_cast<std::int64_t>(rng() % 5)});
    // Whole regions now and then, so that trailing dimensions are often whole in both.
    tdl::Box src = trial % 3 == 0 ? whole : random_inside(whole, rng);
    tdl::Box dst = trial % 5 == 0 ? src : random_inside(whole, rng);
    tdl::Box part = tdl::intersect(src, dst);
    if (tdl::box_volume(part) == 0) continue;
    if (trial % 2) part = random_inside(part, rng);
    std::vector<float> from(static_cast<std::size_t>(tdl::box_volume(src)));
    for (std::size_t k = 0; k < from.size(); ++k)
      from[k] = static_cast<float>(k + 1);
    std::vector<float> to(static_cast<std::size_t>(tdl::box_volume(dst)), -1.0f);
    copy_box(from.data(), src, to.data(), dst, part);
    for (std::int64_t k = 0; k < tdl::box_volume(dst); ++k) {
      auto c = coords_of(dst, k);
      float want = contains(part, c) ? from[static_cast<std::size_t>(index_in(src, c))] : -1.0f;
      ASSERT_EQ(to[static_cast<std::size_t>(k)], want)
          << "trial " << trial << " src " << tdl::box_to_string(src) << " dst "
          << tdl::box_to_string(dst) << " part " << tdl::box_to_string(part);
    }
  }
}

class Store : public ::testing::Test {
 protected:
  static ir::Graph one_tensor() {
    auto registry = ops::OpRegistry::with_builtins();
    ir::GraphBuilder b(*registry);
    auto x = b.add_source("x", {{4, 3, 5}, ir::DType::fp32}, ir::TensorRole::input).value();
    (void)b.add_op1({"relu", {x}, {}, "y", {}, {}}).value();
    return b.finish().value();
  }
  std::vector<float> values(tdl::Box const& region) const {  // element = its whole-tensor index
    std::vector<float> v;
    for (std::int64_t k = 0; k < tdl::box_volume(region); ++k)
      v.push_back(static_cast<float>(index_in(whole_, coords_of(region, k))));
    return v;
  }
  ir::Graph graph_ = one_tensor();
  ir::TensorId t_ = graph_.tensors().front().id;
  tdl::Box whole_{{0, 4}, {0, 3}, {0, 5}};
  Arena arena_{"cpu0", Bytes(1 << 20)};
};

TEST_F(Store, GathersFromShardsAndOverlappingHalos) {
  BlockStore store(graph_, arena_);
  ASSERT_TRUE(store.add(t_, {{0, 2}, {0, 3}, {0, 5}}, values({{0, 2}, {0, 3}, {0, 5}}), false, 1));
  ASSERT_TRUE(store.add(t_, {{1, 4}, {0, 3}, {0, 5}}, values({{1, 4}, {0, 3}, {0, 5}}), false, 2));
  tdl::Box across{{1, 3}, {1, 3}, {2, 4}};
  auto got = store.gather(t_, across);
  ASSERT_TRUE(got.has_value()) << got.error().to_string();
  EXPECT_EQ(*got, values(across));
  EXPECT_FALSE(store.view(t_, across).has_value());  // rows of 2 of 5: not contiguous
  store.free_written(1);
  EXPECT_FALSE(store.gather(t_, {{0, 2}, {0, 3}, {0, 5}}).has_value());  // row 0 is gone
}

TEST_F(Store, ViewsOnlyContiguousRegions) {
  BlockStore store(graph_, arena_);
  ASSERT_TRUE(store.add(t_, whole_, values(whole_), false, 1));
  for (tdl::Box region : {tdl::Box{{1, 3}, {0, 3}, {0, 5}}, tdl::Box{{2, 3}, {1, 3}, {0, 5}},
                          tdl::Box{{2, 3}, {1, 2}, {1, 4}}, whole_}) {
    auto v = store.view(t_, region);
    ASSERT_TRUE(v.has_value()) << tdl::box_to_string(region);
    std::vector<float> seen(v->data, v->data + tdl::box_volume(region));
    EXPECT_EQ(seen, values(region)) << tdl::box_to_string(region);
  }
  for (tdl::Box region : {tdl::Box{{0, 4}, {0, 3}, {0, 4}}, tdl::Box{{1, 3}, {1, 3}, {0, 5}}})
    EXPECT_FALSE(store.view(t_, region).has_value()) << tdl::box_to_string(region);
  // A view keeps its block alive after the store drops it.
  auto v = store.view(t_, whole_);
  store.free_written(1);
  EXPECT_EQ(v->data[7], 7.0f);
}

// With the plan's pool, each block takes an object of its class, those held before the step
// included; a block whose class has no free object is an out_of_memory error naming the pool,
// although the bytes (and a larger class's object) would hold it; freeing a block (or swapping it
// out) frees its object.
TEST_F(Store, APoolGivesEveryBlockAnObject) {
  std::int64_t row = 3 * 5 * 4;  // bytes of one row of the tensor
  Arena arena("cpu0", Bytes(1 << 20), memory::Pool{{{row, 1}, {2 * row, 1}, {4 * row, 1}}});
  BlockStore store(graph_, arena);
  ASSERT_TRUE(store.add(t_, whole_, values(whole_), false, no_task));  // the 4-row object
  tdl::Box one{{0, 1}, {0, 3}, {0, 5}}, two{{1, 3}, {0, 3}, {0, 5}}, three{{0, 3}, {0, 3}, {0, 5}};
  ASSERT_TRUE(store.add(t_, one, values(one), false, 1));
  ASSERT_TRUE(store.add(t_, two, values(two), false, 3));
  Status full = store.add(t_, one, values(one), false, 2);  // not the free 2-row object
  ASSERT_FALSE(full.is_ok());
  EXPECT_NE(full.error().to_string().find("pool (1x60 B, 1x120 B, 1x240 B) has no free object"),
            std::string::npos)
      << full.error().to_string();
  store.free_written(3);
  EXPECT_FALSE(store.add(t_, one, values(one), false, 2).is_ok());
  EXPECT_FALSE(store.add(t_, three, values(three), false, 4).is_ok());  // the held block's
  store.free_written(1);
  EXPECT_TRUE(store.add(t_, one, values(one), false, 2).is_ok());
  store.free_inside(t_, whole_);  // every block of the tensor: the held one's object too
  EXPECT_TRUE(store.add(t_, three, values(three), false, 4).is_ok());
}

// A dropped block's buffer goes to the store's BufferPool once no view holds it, and the next
// buffer of its size is that one (not a new one); the pool keeps no more than its capacity.
TEST_F(Store, DroppedBlocksLendTheirBuffersToTheNextOfTheirSize) {
  auto pool = std::make_shared<BufferPool>(2 * 60 * sizeof(float));
  BlockStore store(graph_, arena_, pool);
  ASSERT_TRUE(store.add(t_, whole_, values(whole_), false, 1));
  float const* held = store.view(t_, whole_)->data;
  {
    auto v = store.view(t_, whole_);
    store.free_written(1);
    EXPECT_EQ(pool->take(60).data() == held, false);  // still viewed: not in the pool yet
  }
  std::vector<float> again = pool->take(60);
  EXPECT_EQ(again.data(), held);
  EXPECT_EQ(again[7], 7.0f);  // its old values: kernels overwrite every element
  EXPECT_NE(pool->take(60).data(), held);
  // Beyond the capacity (two buffers of 60 floats) a given buffer is dropped.
  for (int i = 0; i < 3; ++i)
    pool->give(std::vector<float>(60, 1.0f));
  EXPECT_EQ(pool->take(60)[0], 1.0f);
  EXPECT_EQ(pool->take(60)[0], 1.0f);
  EXPECT_EQ(pool->take(60)[0], 0.0f);  // a new, zeroed one
}

}  // namespace
}  // namespace cleave::runtime
