#include "runtime/kernels/onednn_util.h"

#include <omp.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <vector>

namespace cleave::runtime::detail {

dnnl::engine const& cpu_engine() {
  static dnnl::engine const engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream& thread_stream() {
  thread_local dnnl::stream stream(cpu_engine());
  return stream;
}

dnnl::primitive_attr default_attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

namespace {

// One thread's staging and scratchpad buffers. Uninitialised: every user overwrites what it reads.
struct BufferSet {
  static constexpr int slots = 5;
  std::unique_ptr<std::byte[]> data[slots];
  std::size_t size[slots] = {};
};

// Buffer sets outlive the threads that used them. The executor started fresh worker threads every
// step (it keeps them now; calibration and the piece timer still start threads per measurement);
// were a thread's buffers freed with it, the next step's first call of each large primitive
// would allocate its scratchpad again, and glibc maps a block over its mmap threshold afresh (and
// unmaps it on free), so every page faults in again: ResNet-18's 512-channel conv2d_grad_weight
// piece books a 38 MB gemm scratchpad, and its first call per step took 65 ms instead of 9 ms.
class BufferPool {
 public:
  std::unique_ptr<BufferSet> take() {
    std::lock_guard lock(mutex_);
    if (free_.empty()) return std::make_unique<BufferSet>();
    auto set = std::move(free_.back());
    free_.pop_back();
    return set;
  }
  void give_back(std::unique_ptr<BufferSet> set) {
    std::lock_guard lock(mutex_);
    free_.push_back(std::move(set));
  }

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<BufferSet>> free_;
};

BufferPool& buffer_pool() {
  static BufferPool pool;  // destroyed after the main thread's thread_locals
  return pool;
}

// The calling thread's set, taken from the pool on first use and given back when it exits.
struct ThreadBuffers {
  std::unique_ptr<BufferSet> set = buffer_pool().take();
  ~ThreadBuffers() { buffer_pool().give_back(std::move(set)); }
};

}  // namespace

void* thread_buffer(int slot, std::size_t bytes) {
  thread_local ThreadBuffers buffers;
  auto& set = *buffers.set;
  std::size_t need = bytes + 64;
  if (set.size[slot] < need) {  // grown as needed; the old contents are not kept
    set.data[slot].reset(new std::byte[need]);
    set.size[slot] = need;
  }
  auto address = reinterpret_cast<std::uintptr_t>(set.data[slot].get());
  return set.data[slot].get() + ((64 - address % 64) % 64);
}

dnnl::memory scratchpad(dnnl::memory::desc const& desc) {
  return dnnl::memory(desc, cpu_engine(), thread_buffer(4, desc.get_size()));
}

Staged make_staged(dnnl::memory::desc const& plain, dnnl::memory::desc const& inner, bool input) {
  Staged s{plain, inner, {}, {}};
  if (!s.staged()) return s;
  auto const& eng = cpu_engine();
  dnnl::reorder::primitive_desc pd =
      input ? dnnl::reorder::primitive_desc(eng, plain, eng, inner, default_attr())
            : dnnl::reorder::primitive_desc(eng, inner, eng, plain, default_attr());
  s.reorder_scratch = pd.scratchpad_desc();
  s.reorder = dnnl::reorder(pd);
  return s;
}

Expected<dnnl::memory> stage_in(std::string_view kernel, Staged const& s, float const* data,
                                int slot, bool input) {
  dnnl::memory block = wrap(s.plain, data);
  if (!s.staged()) return block;
  dnnl::memory inner(s.inner, cpu_engine(), thread_buffer(slot, s.inner.get_size()));
  if (input) {
    Status st = execute(kernel, s.reorder, s.reorder_scratch,
                        {{DNNL_ARG_FROM, block}, {DNNL_ARG_TO, inner}});
    if (!st.is_ok()) return st.error();
  }
  return inner;
}

Status stage_out(std::string_view kernel, Staged const& s, dnnl::memory const& inner, float* data) {
  if (!s.staged()) return Status::ok();
  return execute(kernel, s.reorder, s.reorder_scratch,
                 {{DNNL_ARG_FROM, inner}, {DNNL_ARG_TO, wrap(s.plain, data)}});
}

Dims box_sizes(tdl::Box const& box) {
  Dims out;
  for (auto const& iv : box)
    out.push_back(iv.size());
  return out;
}

Dims row_major_strides(Dims const& sizes) {
  Dims out(sizes.size(), 1);
  for (std::size_t i = sizes.size(); i-- > 1;)
    out[i - 1] = out[i] * std::max<dnnl::memory::dim>(sizes[i], 1);
  return out;
}

std::string make_key(std::string_view tag, std::initializer_list<Dims> parts) {
  std::string key(tag);
  for (auto const& part : parts) {
    key += ':';
    for (auto v : part) {
      key += std::to_string(v);
      key += ',';
    }
  }
  return key;
}

Status execute(std::string_view kernel, dnnl::primitive const& primitive,
               dnnl::memory::desc const& scratchpad_desc,
               std::unordered_map<int, dnnl::memory> args) {
  try {
    if (scratchpad_desc.get_size() > 0)
      args.emplace(DNNL_ARG_SCRATCHPAD, scratchpad(scratchpad_desc));
    auto& stream = thread_stream();
    primitive.execute(stream, args);
    stream.wait();
  } catch (dnnl::error const& e) {
    return Error(ErrorCode::unsupported, std::string(kernel) + ": oneDNN failed: " + e.what() +
                                             " (status " +
                                             std::to_string(static_cast<int>(e.status)) + ")");
  }
  return Status::ok();
}

Status check_data(std::string_view kernel, KernelCall const& call) {
  if (call.output.data == nullptr)
    return Error(ErrorCode::invalid_argument, std::string(kernel) + ": the output has no data");
  for (std::size_t i = 0; i < call.inputs.size(); ++i)
    if (call.inputs[i].data == nullptr && !call.piece->inputs[i].empty())
      return Error(ErrorCode::invalid_argument,
                   std::string(kernel) + ": input " + std::to_string(i) + " has no data");
  return Status::ok();
}

int threads_for(std::int64_t work, std::int64_t min_work) {
#if defined(__SANITIZE_THREAD__)
  (void)work;
  (void)min_work;
  return 1;
#else
  return work < min_work ? 1 : std::max(1, omp_get_max_threads());
#endif
}

bool inputs_dense(KernelCall const& call) {
  if (call.piece == nullptr || call.bound == nullptr || call.op == nullptr || call.graph == nullptr)
    return false;
  if (call.inputs.size() != call.piece->inputs.size()) return false;
  for (auto const& region : call.piece->inputs)
    if (region.empty() || region.has_padding()) return false;
  return true;
}

}  // namespace cleave::runtime::detail
