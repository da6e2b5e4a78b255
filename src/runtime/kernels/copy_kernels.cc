// Copies that the expression kernel would compute element by element: a reshape whose piece is
// one contiguous range of both tensors (a memcpy), and a statement that is one read of its input
// shifted by a constant per dimension, `Y[i, j] = X[i - a, j - b]` with reads outside X giving its
// pad value (slice, slice_grad with step 1, constant padding). The expression kernel evaluates
// these per element (floor divisions for a reshape, bounds checks for a padded read): GPT's
// logits reshape of 1M elements took 20 ms there and a split's gradients 3-7 ms each.
#include <algorithm>
#include <cstring>

#include "runtime/kernels/onednn_kernels.h"
#include "runtime/kernels/onednn_util.h"

namespace cleave::runtime {
namespace {

// The start of `box` in `shape`'s row-major order, when the box is one contiguous range of it.
std::optional<std::int64_t> contiguous_start(tdl::Box const& box, ir::Shape const& shape) {
  if (box.size() != shape.size()) return std::nullopt;
  std::size_t d = box.size();
  while (d > 0 && box[d - 1].lo == 0 && box[d - 1].hi == shape[d - 1])
    --d;
  // Dimensions before the first partial one (d - 1) hold one index each.
  for (std::size_t k = 0; k + 1 < d; ++k)
    if (box[k].size() != 1) return std::nullopt;
  std::int64_t start = 0, stride = 1;
  for (std::size_t k = box.size(); k-- > 0;) {
    start += box[k].lo * stride;
    stride *= shape[k];
  }
  return start;
}

// Per output dimension, the input coordinate's offset when the statement is `Y[i..] = X[i.. +
// shift]` (identity output indices, one read of input 0, each index its own slot plus a constant).
std::optional<std::vector<std::int64_t>> shifted_read(tdl::BoundOp const& op) {
  auto const& body = op.body();
  if (op.opaque() || op.reducer() != tdl::Reducer::none ||
      body.kind != tdl::BoundExpr::Kind::access || body.input != 0 || op.inputs().size() != 1)
    return std::nullopt;
  auto const& out = op.output_indices();
  if (body.indices.size() != out.size()) return std::nullopt;
  std::vector<std::int64_t> shift(out.size());
  for (std::size_t t = 0; t < out.size(); ++t) {
    auto const& o = out[t];
    auto const& i = body.indices[t];
    for (auto const* ix : {&o, &i})
      if (ix->kind != tdl::BoundIndex::Kind::linear || !ix->children.empty() ||
          ix->var_terms.size() != 1 ||
          ix->var_terms[0] != std::pair<int, std::int64_t>{static_cast<int>(t), 1})
        return std::nullopt;
    if (o.constant != 0) return std::nullopt;
    shift[t] = i.constant;
  }
  return shift;
}

class CopyKernel final : public Kernel {
 public:
  std::string_view name() const override { return "loop_copy"; }

  bool handles(KernelCall const& call) const override {
    return reshape_source(call).has_value() || shifted(call).has_value();
  }

  Status run(KernelCall const& call) const override {
    CLEAVE_CHECK_OK(detail::check_data(name(), call));
    if (reshape_source(call)) {
      std::memcpy(call.output.data, call.inputs[0].data,
                  static_cast<std::size_t>(tdl::box_volume(call.piece->output)) * sizeof(float));
      return Status::ok();
    }
    auto shift = shifted(call);
    if (!shift) return Error(ErrorCode::unsupported, "loop_copy: not a copy it handles");
    copy_shifted(call, *shift);
    return Status::ok();
  }

 private:
  // A reshape piece whose output and input regions are the same contiguous range.
  static std::optional<std::int64_t> reshape_source(KernelCall const& call) {
    if (call.op == nullptr || call.op->type != "reshape" || call.piece == nullptr ||
        call.inputs.size() != 1 || call.piece->inputs.size() != 1 ||
        call.piece->inputs[0].has_padding())
      return std::nullopt;
    auto const& in = call.piece->inputs[0].box;
    auto out_start =
        contiguous_start(call.piece->output, call.graph->tensor(call.op->outputs[0]).type.shape);
    auto in_start = contiguous_start(in, call.graph->tensor(call.op->inputs[0]).type.shape);
    if (!out_start || !in_start || *out_start != *in_start ||
        tdl::box_volume(in) != tdl::box_volume(call.piece->output))
      return std::nullopt;
    return in_start;
  }

  static std::optional<std::vector<std::int64_t>> shifted(KernelCall const& call) {
    if (call.bound == nullptr || call.piece == nullptr || !call.piece->output_exact ||
        call.inputs.size() != 1 || call.piece->output.empty())
      return std::nullopt;
    return shifted_read(*call.bound);
  }

  // Row by row over the output's last dimension: the part inside the input block is copied, the
  // rest takes the pad value (reads beyond the tensor: the block holds every read inside it).
  static void copy_shifted(KernelCall const& call, std::vector<std::int64_t> const& shift) {
    tdl::Box const& out = call.piece->output;
    tdl::Box const& in = call.piece->inputs[0].box;
    auto pad = static_cast<float>(call.bound->inputs()[0].pad_value);
    std::size_t rank = out.size();
    std::vector<std::int64_t> in_strides(rank, 1);
    for (std::size_t d = rank - 1; d-- > 0;)
      in_strides[d] = in_strides[d + 1] * in[d + 1].size();
    std::int64_t width = out[rank - 1].size();
    std::int64_t lo =
        std::clamp(in[rank - 1].lo - shift[rank - 1], out[rank - 1].lo, out[rank - 1].hi);
    std::int64_t hi = std::clamp(in[rank - 1].hi - shift[rank - 1], lo, out[rank - 1].hi);
    std::vector<std::int64_t> at(rank);
    for (std::size_t d = 0; d < rank; ++d)
      at[d] = out[d].lo;
    float* dst = call.output.data;
    float const* src = call.inputs[0].data;
    for (;; dst += width) {
      std::int64_t offset = 0;
      bool inside = true;
      for (std::size_t d = 0; d + 1 < rank; ++d) {
        std::int64_t c = at[d] + shift[d];
        inside = inside && c >= in[d].lo && c < in[d].hi;
        offset += (c - in[d].lo) * in_strides[d];
      }
      if (!inside || lo == hi) {
        std::fill(dst, dst + width, pad);
      } else {
        std::int64_t first = lo - out[rank - 1].lo, last = hi - out[rank - 1].lo;
        std::fill(dst, dst + first, pad);
        std::memcpy(dst + first, src + offset + (lo + shift[rank - 1] - in[rank - 1].lo),
                    static_cast<std::size_t>(last - first) * sizeof(float));
        std::fill(dst + last, dst + width, pad);
      }
      std::size_t d = rank - 1;
      while (d-- > 0) {
        if (++at[d] < out[d].hi) break;
        at[d] = out[d].lo;
      }
      if (d == static_cast<std::size_t>(-1)) return;
    }
  }
};

}  // namespace

std::unique_ptr<Kernel> make_copy_kernel() {
  return std::make_unique<CopyKernel>();
}

}  // namespace cleave::runtime
