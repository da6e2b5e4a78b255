// Shared helpers of the oneDNN kernels: the one CPU engine, a stream per worker thread, a
// thread-safe cache of primitives keyed by (shape, attributes), user-managed scratchpads (so that
// concurrent calls never share one), and the conversion of oneDNN's exceptions into Status.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "runtime/kernels/kernel.h"

namespace cleave::runtime::detail {

using Dims = dnnl::memory::dims;

dnnl::engine const& cpu_engine();
// A stream on cpu_engine() owned by the calling thread (each device worker has its own).
dnnl::stream& thread_stream();

// Primitive attributes every kernel uses: user scratchpad (see scratchpad()).
dnnl::primitive_attr default_attr();
// A scratchpad buffer of at least desc's size, owned by the calling thread.
dnnl::memory scratchpad(dnnl::memory::desc const& desc);

// A 64-byte aligned, uninitialised buffer of at least `bytes`, owned by the calling thread; `slot`
// (0..3; 4 is the scratchpad's) tells apart buffers one call needs at once. A thread's buffers
// pass to a later thread when it exits, so the executor's per-step workers keep them.
void* thread_buffer(int slot, std::size_t bytes);

// A tensor a primitive wants in its own (blocked) layout while the call's block is plain: the
// primitive was created with format `any`, and a reorder converts through a per-thread staging
// buffer (plain -> inner before the primitive for inputs, inner -> plain after it for outputs).
// When oneDNN picks the plain layout itself, nothing is staged.
struct Staged {
  dnnl::memory::desc plain, inner;
  dnnl::reorder reorder;
  dnnl::memory::desc reorder_scratch;

  bool staged() const { return plain != inner; }
};
Staged make_staged(dnnl::memory::desc const& plain, dnnl::memory::desc const& inner, bool input);

// The memory the primitive reads or writes for `data` (the call's block): the block itself, or the
// staging buffer `slot`, filled from the block first when the tensor is an input.
Expected<dnnl::memory> stage_in(std::string_view kernel, Staged const& s, float const* data,
                                int slot, bool input);
// For an output that was staged: writes the staging memory back into the block.
Status stage_out(std::string_view kernel, Staged const& s, dnnl::memory const& inner, float* data);

// A memory object over caller-owned data (no copy). oneDNN never writes inputs: the const_cast
// only satisfies its API.
inline dnnl::memory wrap(dnnl::memory::desc const& desc, float const* data) {
  return dnnl::memory(desc, cpu_engine(), const_cast<float*>(data));
}

inline dnnl::memory::desc plain_desc(Dims const& dims, Dims const& strides) {
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, strides);
}

// Sizes of a box, and the row-major strides of a dense block of it.
Dims box_sizes(tdl::Box const& box);
Dims row_major_strides(Dims const& sizes);

// Builds a cache key from integers: "tag:1,2,3".
std::string make_key(std::string_view tag, std::initializer_list<Dims> parts);

// Primitives (with whatever the kernel needs beside them) by key, created once; a key whose
// creation failed is remembered as unsupported. Thread-safe; entries are immutable once made.
template <typename Entry> class PrimitiveCache {
 public:
  // The entry for key, created by make() (which may throw dnnl::error: unsupported) if absent;
  // nullptr when oneDNN cannot make it.
  std::shared_ptr<Entry const>
  get(std::string const& key, std::function<std::shared_ptr<Entry const>()> const& make) const {
    {
      std::lock_guard lock(mutex_);
      if (auto it = entries_.find(key); it != entries_.end()) return it->second;
      if (failed_.contains(key)) return nullptr;
    }
    std::shared_ptr<Entry const> made;
    try {
      made = make();
    } catch (dnnl::error const&) {
      made = nullptr;
    }
    std::lock_guard lock(mutex_);
    if (!made) {
      failed_.insert(key);
      return nullptr;
    }
    return entries_.emplace(key, std::move(made)).first->second;
  }

 private:
  mutable std::mutex mutex_;
  mutable std::unordered_map<std::string, std::shared_ptr<Entry const>> entries_;
  mutable std::unordered_set<std::string> failed_;
};

// Runs a primitive with its arguments (plus the scratchpad) on the thread's stream and waits,
// converting oneDNN errors into a Status that names the kernel.
Status execute(std::string_view kernel, dnnl::primitive const& primitive,
               dnnl::memory::desc const& scratchpad_desc,
               std::unordered_map<int, dnnl::memory> args);

// The worker's OpenMP threads (`cleave run --threads`) that a loop kernel splits `work` among:
// all of them from `min_work` on, else 1 (a parallel region costs microseconds). 1 under
// ThreadSanitizer: Debian's libgomp is not instrumented, so its barriers are invisible to it and
// it reports the pool threads' reuse of memory across regions as races.
int threads_for(std::int64_t work, std::int64_t min_work);

// f(i) for i in [0, n): on `threads` OpenMP threads, each a contiguous range of i, or in the
// calling thread alone (no parallel region at all) when threads <= 1.
template <typename F> void parallel_for(std::int64_t n, int threads, F const& f) {
  if (threads <= 1) {
    for (std::int64_t i = 0; i < n; ++i)
      f(i);
    return;
  }
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::int64_t i = 0; i < n; ++i)
    f(i);
}

// Every input of the call's piece is read (non-empty region) and needs no padding. Looks at the
// piece only, not at data (handles() may be asked before buffers exist).
bool inputs_dense(KernelCall const& call);
// The output and every read input have data.
Status check_data(std::string_view kernel, KernelCall const& call);

}  // namespace cleave::runtime::detail
