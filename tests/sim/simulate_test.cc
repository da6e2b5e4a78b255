#include <gtest/gtest.h>

#include "sim/simulate.h"

namespace cleave::sim {
namespace {

lower::Task task(int device, std::vector<lower::TaskId> deps = {}) {
  lower::Task t;
  t.device = device;
  t.deps = std::move(deps);
  return t;
}

std::vector<ResourceId> listed(ResourceList const& list) {
  return {list.begin(), list.end()};
}

TEST(ResourceList, HoldsTwoInPlaceAndMoreOnTheHeapThroughCopiesAndMoves) {
  ResourceList list{7};
  EXPECT_EQ(listed(list), (std::vector<ResourceId>{7}));
  std::vector<ResourceId> want = {7};
  for (ResourceId r = 10; r < 30; ++r) {  // past the two in place, then growing
    list.push_back(r);
    want.push_back(r);
    ASSERT_EQ(listed(list), want);
  }
  ResourceList copy = list;
  ResourceList small{1, 2};
  ResourceList moved = std::move(list);
  EXPECT_TRUE(list.empty());  // NOLINT(bugprone-use-after-move): a moved-from list is empty
  EXPECT_EQ(listed(copy), want);
  EXPECT_EQ(listed(moved), want);
  copy = small;  // a heap list assigned an in-place one
  EXPECT_EQ(listed(copy), (std::vector<ResourceId>{1, 2}));
  small = std::move(moved);  // an in-place list given a heap one
  EXPECT_EQ(listed(small), want);
  list.push_back(3);  // a moved-from list is usable
  EXPECT_EQ(listed(list), (std::vector<ResourceId>{3}));
}

TEST(Simulate, FifoPerResourceAndOverlap) {
  // Device 0 computes A (2 s) then B (1 s); a transfer (3 s on the link) follows A and feeds C on
  // device 1 (1 s). The transfer overlaps B.
  lower::Program p;
  p.num_devices = 2;
  p.tasks = {task(0), task(0), task(1, {0}), task(1, {2})};
  std::vector<Resource> res = {{"d0", 0}, {"d1", 1}, {"link", -1}};
  std::vector<TaskTiming> t = {{2, {0}}, {1, {0}}, {3, {2}}, {1, {1}}};
  auto r = simulate(p, {t, {}}, res);
  EXPECT_DOUBLE_EQ(r.spans[0].start, 0);
  EXPECT_DOUBLE_EQ(r.spans[1].start, 2);  // FIFO behind A on device 0
  EXPECT_DOUBLE_EQ(r.spans[2].start, 2);  // the transfer starts when A ends, beside B
  EXPECT_DOUBLE_EQ(r.spans[3].start, 5);
  EXPECT_DOUBLE_EQ(r.step_seconds, 6);
  EXPECT_DOUBLE_EQ(r.compute_seconds[0], 3);
  EXPECT_DOUBLE_EQ(r.idle_seconds[1], 5);
  EXPECT_DOUBLE_EQ(r.busy_seconds[2], 3);
}

TEST(Simulate, StopsOnceABoundOnTheStepPassesTheLimit) {
  // FifoPerResourceAndOverlap's program (step 6 s): device 0 and the link have 3 s of work each.
  lower::Program p;
  p.num_devices = 2;
  p.tasks = {task(0), task(0), task(1, {0}), task(1, {2})};
  std::vector<Resource> res = {{"d0", 0}, {"d1", 1}, {"link", -1}};
  std::vector<TaskTiming> t = {{2, {0}}, {1, {0}}, {3, {2}}, {1, {1}}};
  // Their work alone passes 2.5 s: nothing is taken.
  auto early = run_event_loop(p, {t, {}}, res, {}, nullptr, 2.5);
  EXPECT_TRUE(early.stopped);
  EXPECT_TRUE(early.order.empty());
  // The transfer starts at 2 and ends at 5 > 4: the run stops before C.
  auto mid = run_event_loop(p, {t, {}}, res, {}, nullptr, 4.0);
  EXPECT_TRUE(mid.stopped);
  EXPECT_LT(mid.order.size(), 4u);
  auto done = run_event_loop(p, {t, {}}, res, {}, nullptr, 6.0);
  EXPECT_FALSE(done.stopped);
  EXPECT_EQ(done.order.size(), 4u);
  EXPECT_DOUBLE_EQ(done.result.step_seconds, 6);
}

TEST(Simulate, TransferWaitsForEveryLinkOnItsRoute) {
  lower::Program p;
  p.num_devices = 1;
  p.tasks = {task(0), task(0), task(0)};
  std::vector<Resource> res = {{"d0", 0}, {"l1", -1}, {"l2", -1}};
  // Two transfers share link l2; the second waits for it even though l1 is free.
  std::vector<TaskTiming> t = {{4, {2}}, {1, {1, 2}}, {1, {0}}};
  auto r = simulate(p, {t, {}}, res);
  EXPECT_DOUBLE_EQ(r.spans[1].start, 4);
  EXPECT_DOUBLE_EQ(r.spans[2].start, 0);
}

}  // namespace
}  // namespace cleave::sim
