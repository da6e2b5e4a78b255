// max_pool2d_grad as a plain-loop gather. Its TDL statement (ops/builtin_gradients_dense.cc)
//   dX[n,c,h,w] = sum(dy:KH,dx:KW) (X[n,c,h,w] == Y[n,c,yi,xi]) * dY[n,c,yi,xi] * hits
// with yi = (h+pt-dy*dh)/sh, exact division required when sh > 1 (likewise xi), is evaluated
// literally: dX at (h, w) sums dY over the windows that read (h, w) and whose max Y equals X there.
// So ties keep the TDL's semantics: every position equal to its window's max gets the window's
// gradient (PyTorch gives it to the first one only). Taps whose division is not exact or whose
// output row/column lies outside Y contribute 0 in the statement (the hit factor; Y and dY pad
// with 0) and are skipped here, which is the same sum as long as dY is finite.
//
// The expression kernel could run the statement too, but its rows are the innermost iteration
// dimension (dx, 2-3 long) and its reads go through floor division per element: ~100x slower.
// Here the taps that feed each row h and each column w of the piece are listed once, so the
// inner loop is compares and adds. A piece must cover the window (dy, dx) whole; one that splits
// it (a partial sum) is left to the expression kernel. A piece of 16K elements or more is split
// among the worker's OpenMP threads by (n, c) planes.
#include <vector>

#include "runtime/kernels/onednn_kernels.h"
#include "runtime/kernels/onednn_util.h"

namespace cleave::runtime {
namespace {

// Slots of the statement's iteration space: n, c, h, w parallel, then dy, dx.
constexpr std::size_t num_dims = 6;
constexpr int num_parallel = 4;

struct Window {
  std::int64_t k, s, d, p;  // kernel, stride, dilation, leading padding along one axis
};

// Along one axis: for each position v of `out` (dX's rows or columns), the offsets inside the
// Y/dY block (which holds `block` of the axis, of `extent` in all) of the output positions whose
// windows read v, in tap order. CSR: the taps of out.lo + i are at[start[i] .. start[i+1]).
struct Taps {
  std::vector<std::int64_t> start, at;
};

Expected<Taps> list_taps(tdl::Interval out, tdl::Interval block, std::int64_t extent, Window w) {
  Taps t;
  t.start.reserve(static_cast<std::size_t>(out.size()) + 1);
  t.start.push_back(0);
  for (std::int64_t v = out.lo; v < out.hi; ++v) {
    for (std::int64_t k = 0; k < w.k; ++k) {
      std::int64_t num = v + w.p - k * w.d;
      if (num < 0 || num % w.s != 0 || num / w.s >= extent) continue;
      std::int64_t y = num / w.s;
      // Region analysis puts every row a tap reads in the block; a miss is a bug, not bad input.
      if (y < block.lo || y >= block.hi)
        return Error(ErrorCode::execution_failed,
                     "loop_max_pool_grad: output row " + std::to_string(y) +
                         " is outside the piece's Y block [" + std::to_string(block.lo) + "," +
                         std::to_string(block.hi) + ")");
      t.at.push_back(y - block.lo);
    }
    t.start.push_back(static_cast<std::int64_t>(t.at.size()));
  }
  return t;
}

class MaxPoolGradKernel final : public Kernel {
 public:
  std::string_view name() const override { return "loop_max_pool_grad"; }

  bool handles(KernelCall const& call) const override {
    if (call.op == nullptr || call.op->type != "max_pool2d_grad" || call.piece == nullptr ||
        call.bound == nullptr || call.graph == nullptr)
      return false;
    auto const& piece = *call.piece;
    auto const& bound = *call.bound;
    if (call.inputs.size() != 3 || piece.inputs.size() != 3 || !piece.output_exact ||
        bound.dims().size() != num_dims || bound.num_parallel() != num_parallel)
      return false;
    // The whole window: dX is complete, not a partial sum.
    for (std::size_t d = num_parallel; d < num_dims; ++d)
      if (piece.iter_box[d].lo != 0 || piece.iter_box[d].hi != bound.dims()[d].extent) return false;
    // X is read where dX is written; Y and dY in the same block (empty when no window reaches
    // the piece), for the same images and channels.
    auto const& x = piece.inputs[0];
    auto const& y = piece.inputs[1];
    if (x.empty() || x.has_padding() || x.box != piece.output || y.box.size() != 4 ||
        y.box != piece.inputs[2].box)
      return false;
    if (!y.empty() && (y.box[0] != piece.output[0] || y.box[1] != piece.output[1])) return false;
    // Skipping taps outside Y is exact because dY reads 0 there.
    return bound.inputs()[2].pad_value == 0;
  }

  Status run(KernelCall const& call) const override {
    if (!handles(call))
      return Error(ErrorCode::unsupported, "loop_max_pool_grad: not a piece it handles");
    CLEAVE_CHECK_OK(detail::check_data(name(), call));
    auto const& a = call.op->attrs;
    auto kernel = a.get_ints("kernel", {});
    auto stride = a.get_ints("stride", {});
    if (stride.empty()) stride = kernel;  // pooling's stride defaults to its kernel
    auto dil = a.get_ints("dilation", {1, 1});
    auto pad = a.get_ints("padding", {0, 0});  // (top, left[, bottom, right]): dX needs top, left
    auto const& out = call.piece->output;
    auto const& yb = call.piece->inputs[1].box;
    auto const& y_shape = call.graph->tensor(call.op->inputs[1]).type.shape;
    CLEAVE_TRY(Taps rows,
               list_taps(out[2], yb[2], y_shape[2], {kernel[0], stride[0], dil[0], pad[0]}));
    CLEAVE_TRY(Taps cols,
               list_taps(out[3], yb[3], y_shape[3], {kernel[1], stride[1], dil[1], pad[1]}));
    std::int64_t planes = out[0].size() * out[1].size();
    std::int64_t height = out[2].size(), width = out[3].size();
    std::int64_t y_width = yb[3].size(), y_plane = yb[2].size() * y_width;
    float const* xs = call.inputs[0].data;
    float const* ys = call.inputs[1].data;
    float const* gs = call.inputs[2].data;
    float* dx = call.output.data;
    // Planes (one image's channel) are independent: split among the worker's threads.
    int threads = detail::threads_for(planes * height * width, std::int64_t{1} << 14);
    detail::parallel_for(planes, threads, [&](std::int64_t p) {
      float const* x = xs + p * height * width;
      float* o = dx + p * height * width;
      for (std::int64_t h = 0; h < height; ++h) {
        auto rh = static_cast<std::size_t>(h);
        for (std::int64_t w = 0; w < width; ++w) {
          auto cw = static_cast<std::size_t>(w);
          float v = x[h * width + w];
          float acc = 0;
          for (auto r = rows.start[rh]; r < rows.start[rh + 1]; ++r) {
            std::int64_t at = p * y_plane + rows.at[static_cast<std::size_t>(r)] * y_width;
            for (auto c = cols.start[cw]; c < cols.start[cw + 1]; ++c) {
              std::int64_t i = at + cols.at[static_cast<std::size_t>(c)];
              if (ys[i] == v) acc += gs[i];
            }
          }
          o[h * width + w] = acc;
        }
      }
    });
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Kernel> make_max_pool_grad_kernel() {
  return std::make_unique<MaxPoolGradKernel>();
}

}  // namespace cleave::runtime
