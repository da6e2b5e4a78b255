// The kernels' per-thread buffers (staging, scratchpads) outlive their threads: the executor's
// workers are new threads every step, and a large scratchpad allocated afresh each step faults all
// its pages in again (docs/runtime_kernels.md, "Performance"). Threads alive at once never share.
#include <barrier>
#include <gtest/gtest.h>
#include <thread>

#include "runtime/kernels/onednn_util.h"

namespace cleave::runtime {
namespace {

constexpr std::size_t big = std::size_t{48} << 20;  // over glibc's largest mmap threshold

// A new thread's buffer `slot` of `bytes`, after `touch` ran on it.
template <typename F> std::byte* buffer_of_new_thread(int slot, std::size_t bytes, F touch) {
  std::byte* p = nullptr;
  std::thread([&] {
    p = static_cast<std::byte*>(detail::thread_buffer(slot, bytes));
    touch(p);
  }).join();
  return p;
}

// The same memory, not a new mapping at the same address: what one thread wrote is still there.
TEST(ThreadBuffer, PassesToTheNextThread) {
  std::byte* first = buffer_of_new_thread(4, big, [](std::byte* p) {
    p[0] = std::byte{0x5a};
    p[big - 1] = std::byte{0xa5};
  });
  ASSERT_NE(first, nullptr);
  bool kept = false;
  std::byte* second = buffer_of_new_thread(4, big / 2, [&](std::byte* p) {
    kept = p[0] == std::byte{0x5a} && p[big - 1] == std::byte{0xa5};
  });
  EXPECT_EQ(second, first);
  EXPECT_TRUE(kept);
}

TEST(ThreadBuffer, ThreadsAliveAtOnceHaveTheirOwn) {
  void* p[2] = {nullptr, nullptr};
  std::barrier both(2);
  auto take = [&](int i) {
    p[i] = detail::thread_buffer(0, 1 << 20);
    static_cast<std::byte*>(p[i])[0] = std::byte{1};
    both.arrive_and_wait();  // neither exits before the other has its buffer
  };
  std::thread a(take, 0), b(take, 1);
  a.join();
  b.join();
  EXPECT_NE(p[0], p[1]);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p[0]) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p[1]) % 64, 0u);
}

}  // namespace
}  // namespace cleave::runtime
