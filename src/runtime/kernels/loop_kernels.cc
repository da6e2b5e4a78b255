// Plain-loop kernels for embedding's gradient (a scatter) and for row-wise ops whose statements
// nest reductions (so the expression kernel cannot take them) and which oneDNN has no primitive
// for: the cross-entropy loss and its gradient, and layer norm's gradients. One pass per row over
// the last axis (never split: nosplit); row statistics accumulate in double, values are fp32. A
// piece that splits the rows of a reduction over rows (the loss, dG) writes its partial sum.
#include <algorithm>
#include <cmath>
#include <vector>

#include "runtime/kernels/onednn_kernels.h"
#include "runtime/kernels/onednn_util.h"

namespace cleave::runtime {
namespace {

enum class RowOp {
  cross_entropy,
  cross_entropy_grad,
  layer_norm_grad_input,
  layer_norm_grad_gamma
};

std::optional<RowOp> row_op(std::string const& type) {
  if (type == "cross_entropy") return RowOp::cross_entropy;
  if (type == "cross_entropy_grad") return RowOp::cross_entropy_grad;
  if (type == "layer_norm_grad_input") return RowOp::layer_norm_grad_input;
  if (type == "layer_norm_grad_gamma") return RowOp::layer_norm_grad_gamma;
  return std::nullopt;
}

// Mean and 1/sqrt(var + eps) of one row, as layer_norm computes them (two passes).
std::pair<double, double> row_stats(float const* x, std::int64_t width, double eps) {
  double mean = 0;
  for (std::int64_t j = 0; j < width; ++j)
    mean += x[j];
  mean /= static_cast<double>(width);
  double var = 0;
  for (std::int64_t j = 0; j < width; ++j)
    var += (x[j] - mean) * (x[j] - mean);
  var /= static_cast<double>(width);
  return {mean, var + eps};
}

class RowKernel final : public Kernel {
 public:
  std::string_view name() const override { return "loop_rows"; }

  bool handles(KernelCall const& call) const override {
    if (call.op == nullptr || !row_op(call.op->type) || !detail::inputs_dense(call)) return false;
    // The rows' last axis is whole in X (input 0): nosplit guarantees it.
    auto const& x = call.piece->inputs[0].box;
    auto const& shape = call.graph->tensor(call.op->inputs[0]).type.shape;
    return !x.empty() && x.back().lo == 0 && x.back().hi == shape.back();
  }

  Status run(KernelCall const& call) const override {
    if (!handles(call)) return Error(ErrorCode::unsupported, "loop_rows: not a row op it handles");
    CLEAVE_CHECK_OK(detail::check_data(name(), call));
    auto const& shape = call.graph->tensor(call.op->inputs[0]).type.shape;
    std::int64_t width = shape.back();
    std::int64_t rows = tdl::box_volume(call.piece->inputs[0].box) / width;
    float const* x = call.inputs[0].data;
    float* out = call.output.data;
    double eps = call.op->attrs.get_float("eps", 1e-5);
    switch (*row_op(call.op->type)) {
    case RowOp::cross_entropy:
    case RowOp::cross_entropy_grad: {
      float const* labels = call.inputs[1].data;
      double inv_batch = 1.0 / static_cast<double>(shape[0]);
      bool grad = call.op->type == "cross_entropy_grad";
      double scale = grad ? inv_batch * call.inputs[2].data[0] : inv_batch;
      double loss = 0;
      for (std::int64_t r = 0; r < rows; ++r) {
        float const* row = x + r * width;
        double top = *std::max_element(row, row + width);
        double sum = 0;
        for (std::int64_t j = 0; j < width; ++j)
          sum += std::exp(row[j] - top);
        auto t = static_cast<std::int64_t>(labels[r]);
        if (grad) {
          float* d = out + r * width;
          for (std::int64_t j = 0; j < width; ++j)
            d[j] =
                static_cast<float>((std::exp(row[j] - top) / sum - (j == t ? 1.0 : 0.0)) * scale);
        } else {
          double picked = t >= 0 && t < width ? row[t] : 0.0;  // TDL pads X with 0
          loss += std::log(sum) + top - picked;
        }
      }
      if (!grad) out[0] = static_cast<float>(loss * scale);
      return Status::ok();
    }
    case RowOp::layer_norm_grad_input: {
      float const* gamma = call.inputs[1].data;
      float const* dy = call.inputs[2].data;
      double inv_width = 1.0 / static_cast<double>(width);
      for (std::int64_t r = 0; r < rows; ++r) {
        float const* xr = x + r * width;
        float const* dyr = dy + r * width;
        auto [mean, var_eps] = row_stats(xr, width, eps);
        double sum_g = 0, sum_gx = 0;
        for (std::int64_t j = 0; j < width; ++j) {
          double g = static_cast<double>(dyr[j]) * gamma[j];
          sum_g += g;
          sum_gx += g * (xr[j] - mean);
        }
        double inv_std = 1.0 / std::sqrt(var_eps);
        double k = sum_gx * inv_width * std::pow(var_eps, -1.5);
        float* d = out + r * width;
        for (std::int64_t j = 0; j < width; ++j)
          d[j] = static_cast<float>((static_cast<double>(dyr[j]) * gamma[j] - sum_g * inv_width) *
                                        inv_std -
                                    (xr[j] - mean) * k);
      }
      return Status::ok();
    }
    case RowOp::layer_norm_grad_gamma: {
      float const* dy = call.inputs[1].data;
      std::vector<double> acc(static_cast<std::size_t>(width), 0.0);
      for (std::int64_t r = 0; r < rows; ++r) {
        float const* xr = x + r * width;
        float const* dyr = dy + r * width;
        auto [mean, var_eps] = row_stats(xr, width, eps);
        double inv_std = 1.0 / std::sqrt(var_eps);
        for (std::int64_t j = 0; j < width; ++j)
          acc[static_cast<std::size_t>(j)] += dyr[j] * (xr[j] - mean) * inv_std;
      }
      for (std::int64_t j = 0; j < width; ++j)
        out[j] = static_cast<float>(acc[static_cast<std::size_t>(j)]);
      return Status::ok();
    }
    }
    return Status::ok();
  }
};

// embedding_grad as a scatter-add: its TDL is a one-hot contraction over the vocabulary (TDL has
// no scatter), V times the work. dW[v, h] for the piece's rows v gets every dY row whose index
// I is v; a piece with part of the positions writes its partial sum.
class EmbeddingGradKernel final : public Kernel {
 public:
  std::string_view name() const override { return "loop_embedding_grad"; }

  bool handles(KernelCall const& call) const override {
    if (call.op == nullptr || call.op->type != "embedding_grad" || !detail::inputs_dense(call))
      return false;
    auto const& ids = call.piece->inputs[0].box;
    auto const& dy = call.piece->inputs[1].box;
    auto const& out = call.piece->output;
    if (out.size() != 2 || dy.size() != ids.size() + 1) return false;
    for (std::size_t d = 0; d < ids.size(); ++d)
      if (ids[d] != dy[d]) return false;
    return dy.back() == out[1];
  }

  Status run(KernelCall const& call) const override {
    if (!handles(call))
      return Error(ErrorCode::unsupported, "loop_embedding_grad: not a piece it handles");
    CLEAVE_CHECK_OK(detail::check_data(name(), call));
    auto const& out = call.piece->output;
    std::int64_t width = out[1].size();
    std::int64_t positions = tdl::box_volume(call.piece->inputs[0].box);
    float* dw = call.output.data;
    std::fill(dw, dw + tdl::box_volume(out), 0.f);
    float const* ids = call.inputs[0].data;
    float const* dy = call.inputs[1].data;
    for (std::int64_t p = 0; p < positions; ++p) {
      auto v = static_cast<std::int64_t>(ids[p]);
      if (v < out[0].lo || v >= out[0].hi) continue;
      float* row = dw + (v - out[0].lo) * width;
      float const* g = dy + p * width;
      for (std::int64_t j = 0; j < width; ++j)
        row[j] += g[j];
    }
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Kernel> make_embedding_grad_kernel() {
  return std::make_unique<EmbeddingGradKernel>();
}

std::unique_ptr<Kernel> make_row_kernel() {
  return std::make_unique<RowKernel>();
}

}  // namespace cleave::runtime
