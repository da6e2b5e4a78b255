#include "runtime/comm_backend.h"

#include <algorithm>

#include "support/assert.h"

namespace cleave::runtime {
namespace {

std::size_t rank_in(std::vector<int> const& group, int device) {
  auto it = std::find(group.begin(), group.end(), device);
  CLEAVE_ASSERT(it != group.end(), "a collective's caller is not in its group");
  return static_cast<std::size_t>(it - group.begin());
}

float combine(float a, float b, tdl::Reducer r) {
  switch (r) {
  case tdl::Reducer::max:
    return std::max(a, b);
  case tdl::Reducer::min:
    return std::min(a, b);
  case tdl::Reducer::prod:
    return a * b;
  default:
    return a + b;
  }
}

}  // namespace

Expected<std::vector<float>> InProcessBackend::copy(CopyRequest const& request) {
  CLEAVE_ASSERT(request.source >= 0 && static_cast<std::size_t>(request.source) < stores_.size(),
                "a copy from a device that does not exist");
  BlockStore const& from = *stores_[static_cast<std::size_t>(request.source)];
  if (request.written != no_task) return from.read_written(request.written, request.region);
  return from.gather(request.tensor, request.region);
}

Expected<std::vector<float>> InProcessBackend::meet(CollectiveCall const& call, Op op,
                                                    std::span<float const> mine) {
  std::unique_lock lock(mutex_);
  if (aborted_) return Error(ErrorCode::execution_failed, "the run was aborted");
  auto members = call.group.size();
  Meeting& m = meetings_[call.key];
  m.inputs.resize(members);
  m.inputs[rank_in(call.group, call.device)].assign(mine.begin(), mine.end());
  if (++m.arrived == static_cast<int>(members)) {
    if (op == Op::all_gather) {
      for (auto const& in : m.inputs)
        m.result.insert(m.result.end(), in.begin(), in.end());
    } else {
      m.result = m.inputs[0];
      for (std::size_t k = 1; k < members; ++k) {
        CLEAVE_ASSERT(m.inputs[k].size() == m.result.size(), "collective buffers differ in size");
        for (std::size_t i = 0; i < m.result.size(); ++i)
          m.result[i] = combine(m.result[i], m.inputs[k][i], call.reducer);
      }
    }
    m.ready = true;
    cv_.notify_all();
  } else {
    cv_.wait(lock, [&] { return m.ready || aborted_; });
    if (!m.ready) return Error(ErrorCode::execution_failed, "the run was aborted");
  }
  std::vector<float> result = m.result;
  if (++m.left == static_cast<int>(members)) meetings_.erase(call.key);
  return result;
}

Status InProcessBackend::all_reduce(CollectiveCall const& call, std::span<float> data) {
  CLEAVE_TRY(auto result, meet(call, Op::all_reduce, data));
  std::copy(result.begin(), result.end(), data.begin());
  return Status::ok();
}

Status InProcessBackend::all_gather(CollectiveCall const& call, std::span<float const> mine,
                                    std::span<float> out) {
  CLEAVE_TRY(auto result, meet(call, Op::all_gather, mine));
  CLEAVE_ASSERT(result.size() == out.size(), "all-gather output of the wrong size");
  std::copy(result.begin(), result.end(), out.begin());
  return Status::ok();
}

Status InProcessBackend::reduce_scatter(CollectiveCall const& call, std::span<float const> in,
                                        std::span<float> out) {
  CLEAVE_TRY(auto result, meet(call, Op::reduce_scatter, in));
  std::size_t g = call.group.size(), k = rank_in(call.group, call.device), n = result.size();
  std::size_t lo = k * n / g, hi = (k + 1) * n / g;
  CLEAVE_ASSERT(out.size() == hi - lo, "reduce-scatter output of the wrong size");
  std::copy(result.begin() + static_cast<std::ptrdiff_t>(lo),
            result.begin() + static_cast<std::ptrdiff_t>(hi), out.begin());
  return Status::ok();
}

void InProcessBackend::abort() {
  std::lock_guard lock(mutex_);
  aborted_ = true;
  cv_.notify_all();
}

}  // namespace cleave::runtime
