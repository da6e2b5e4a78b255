// SGD's updates as one loop over the piece: sgd_momentum (Y = momentum * V + G) and sgd_update
// (Y = W - lr * D), in fp32 with the attribute rounded to fp32 first, as the expression kernel
// computes them (the same bits). The expression kernel evaluated them node by node over chunks
// (a load, a multiply, a load and an add, each a pass over the chunk): on ResNet-18 (11.2M
// parameters) the two took 11.5 ms a step on one core against PyTorch's 5.5 ms for its in-place
// mul_ and add_s. A piece of 32K elements or more is cut among the worker's OpenMP threads.
//
// A large output (1 MiB or more) is written with non-temporal stores: the output is a fresh
// buffer, not the input updated in place as PyTorch's are, so an ordinary store first reads each
// line of it from memory only to overwrite it, a fourth stream beside two reads and a write. On
// ResNet-18's weights (45 MB a tensor, past the 32 MB L3) that cut the two ops from 5.0-5.5 ms to
// 3.2-3.5 ms a step on two threads.
#include <algorithm>
#include <cstdint>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "runtime/kernels/onednn_kernels.h"
#include "runtime/kernels/onednn_util.h"

namespace cleave::runtime {
namespace {

// y[i] = k * a[i] + b[i] (momentum) or a[i] - k * b[i] over [lo, hi).
void update(bool momentum, float k, float const* a, float const* b, float* y, std::int64_t lo,
            std::int64_t hi, bool stream) {
  std::int64_t i = lo;
#if defined(__SSE2__)
  if (stream && reinterpret_cast<std::uintptr_t>(y + i) % 16 == 0) {
    __m128 kk = _mm_set1_ps(k);
    if (momentum)
      for (; i + 4 <= hi; i += 4)
        _mm_stream_ps(y + i, _mm_add_ps(_mm_mul_ps(kk, _mm_loadu_ps(a + i)), _mm_loadu_ps(b + i)));
    else
      for (; i + 4 <= hi; i += 4)
        _mm_stream_ps(y + i, _mm_sub_ps(_mm_loadu_ps(a + i), _mm_mul_ps(kk, _mm_loadu_ps(b + i))));
    _mm_sfence();  // the stores are visible before the task is seen done
  }
#else
  (void)stream;
#endif
  if (momentum)
    for (; i < hi; ++i)
      y[i] = k * a[i] + b[i];
  else
    for (; i < hi; ++i)
      y[i] = a[i] - k * b[i];
}

class UpdateKernel final : public Kernel {
 public:
  std::string_view name() const override { return "loop_sgd"; }

  bool handles(KernelCall const& call) const override {
    if (call.op == nullptr || call.piece == nullptr || !call.piece->output_exact) return false;
    if (call.op->type != "sgd_momentum" && call.op->type != "sgd_update") return false;
    if (!detail::inputs_dense(call) || call.inputs.size() != 2) return false;
    auto const& out = call.piece->output;
    return call.piece->inputs[0].box == out && call.piece->inputs[1].box == out;
  }

  Status run(KernelCall const& call) const override {
    if (!handles(call)) return Error(ErrorCode::unsupported, "loop_sgd: not an update it handles");
    CLEAVE_CHECK_OK(detail::check_data(name(), call));
    bool momentum = call.op->type == "sgd_momentum";
    auto k = static_cast<float>(momentum ? call.op->attrs.get_float("momentum", 0.9)
                                         : call.op->attrs.get_float("lr", 0.01));
    float const* a = call.inputs[0].data;  // V or W
    float const* b = call.inputs[1].data;  // G or D
    float* y = call.output.data;
    std::int64_t n = tdl::box_volume(call.piece->output);
    bool stream = n >= (std::int64_t{1} << 18);
    int parts = detail::threads_for(n, std::int64_t{1} << 15);
    // Contiguous ranges, one per thread, each starting on a 16-element boundary.
    detail::parallel_for(parts, parts, [&](std::int64_t part) {
      std::int64_t lo = n * part / parts / 16 * 16;
      std::int64_t hi = part == parts - 1 ? n : n * (part + 1) / parts / 16 * 16;
      update(momentum, k, a, b, y, lo, hi, stream);
    });
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Kernel> make_update_kernel() {
  return std::make_unique<UpdateKernel>();
}

}  // namespace cleave::runtime
