#include "cost/gpu_compute.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace cleave::cost {

namespace {

constexpr double tera = 1e12;

// SM counts and TF32 rates: NVIDIA's architecture whitepapers and datasheets (below). The
// convolution efficiencies and the Winograd factor were fitted, one per published row, by
// bisection on the ResNet-50 rows of bench/results/gpu_truth.md marked "fit"; the GEMM efficiency
// was set by hand against its BERT seq-128 AMP rows (also marked "fit"); every other row is held
// out (docs/cost_model.md). Memory efficiency 0.9 (STREAM-like copies reach ~90% of HBM's peak)
// and 3 us per kernel (the GPU-side gap between PyTorch's asynchronously queued kernels) are set,
// not fitted. Kinds without rows of their own take the V100 or A100 fit.
constexpr double v100_gemm = 0.85, v100_conv = 0.49, v100_cuda_core = 0.85, v100_winograd = 1.09;
constexpr double a100_gemm = 0.85, a100_conv = 0.40, a100_tf32_conv = 0.25;
// The H100's GEMM efficiency from its measured pieces (bench/results/gpu_measured.md): PyTorch's
// linear layers (forward and both gradients, bf16 and TF32) over 50 us, the unaligned vocabulary
// projections aside (27 pieces, all compute-bound), took a median 1.15x the time the A100's 0.85
// gives them: 0.85 / 1.15.
constexpr double h100_gemm = 0.74;
constexpr double memory = 0.9, launch = 3e-6;

constexpr std::array<GpuCompute, 7> table = {{
    {"K80-GK210-12GB", 13, 0, v100_gemm, v100_conv, 0, v100_cuda_core, v100_winograd, memory,
     launch,
     "13 SMX per GK210 die: NVIDIA Tesla K80 datasheet and Kepler GK110/GK210 whitepaper; no "
     "tensor cores; efficiencies not fitted (no published K80 training throughput in "
     "gpu_truth.md): the V100 fit's"},
    {"P100-SXM2-16GB", 56, 0, v100_gemm, v100_conv, 0, v100_cuda_core, v100_winograd, memory,
     launch,
     "56 SMs: NVIDIA Tesla P100 whitepaper; no tensor cores; efficiencies not fitted: the V100 "
     "fit's"},
    {"V100-SXM2-16GB", 80, 0, v100_gemm, v100_conv, 0, v100_cuda_core, v100_winograd, memory,
     launch,
     "80 SMs: NVIDIA Tesla V100 whitepaper; no TF32; conv and Winograd factor fitted on "
     "ResNet-50 AMP and FP32 (gpu_truth.md); GEMMs 0.85, CUDA cores 0.85 (cuBLAS's large-GEMM "
     "fraction, set by hand so that no BERT row exceeds 1.1)"},
    {"V100-SXM3-32GB", 80, 0, v100_gemm, v100_conv, 0, v100_cuda_core, v100_winograd, memory,
     launch, "80 SMs: NVIDIA Tesla V100 whitepaper; no TF32; the V100-SXM2 fit"},
    {"A100-SXM4-80GB", 108, 156 * tera, a100_gemm, a100_conv, a100_tf32_conv, 0, 1, memory, launch,
     "108 SMs, 156 TFLOP/s TF32 (dense): NVIDIA A100 Tensor Core GPU architecture whitepaper and "
     "datasheet; conv and TF32 conv fitted on ResNet-50 AMP and TF32 (gpu_truth.md); GEMMs 0.85 "
     "as on V100"},
    {"A100-SXM4-40GB", 108, 156 * tera, a100_gemm, a100_conv, a100_tf32_conv, 0, 1, memory, launch,
     "the A100 80 GB's SMs, TF32 rate and fit (the same chip; only its HBM differs)"},
    {"H100-SXM5-80GB", 132, 494.7 * tera, h100_gemm, a100_conv, a100_tf32_conv, 0, 1, memory,
     launch,
     "132 SMs, 494.7 TFLOP/s TF32 (dense; 989 with sparsity): NVIDIA H100 datasheet (SXM5); "
     "GEMMs 0.74 from PyTorch's GEMMs measured on an H100 (gpu_measured.md); convolutions the "
     "A100 fit's (no H100 row in the fit)"},
}};

constexpr std::int64_t tile_elements = 128 * 128;
constexpr double min_split_k = 256;

}  // namespace

GpuCompute const* gpu_compute(std::string_view kind) {
  auto it =
      std::find_if(table.begin(), table.end(), [&](GpuCompute const& g) { return g.kind == kind; });
  return it == table.end() ? nullptr : &*it;
}

namespace {

// Parts of batch norm that cuDNN computes inside its bn_mean / bn_apply (forward) and
// bn_apply_grad_gamma / bn_apply_grad_input (backward) passes.
bool inside_cudnn_batch_norm(std::string_view t) {
  return t == "bn_var" || t == "bn_mean_grad_input" || t == "bn_var_grad_input" ||
         t == "bn_var_grad_mean" || t == "bn_apply_grad_mean" || t == "bn_apply_grad_var" ||
         t == "bn_channel_sum";
}

bool batch_norm_gradient(std::string_view t) {
  return t.starts_with("bn_") &&
         (t.find("_grad") != std::string_view::npos || t == "bn_channel_sum");
}

// An add of batch-norm gradient parts (or of such sums): autodiff's accumulation of the input
// gradient, which cuDNN writes once.
bool accumulates_batch_norm_gradient(ir::Graph const& graph, ir::OpId id, int depth) {
  auto const& op = graph.op(id);
  if (op.type != "add" || depth > 4) return false;
  for (auto in : op.inputs) {
    ir::OpId p = graph.producer(in);
    if (!p.valid()) return false;
    auto const& type = graph.op(p).type;
    if (!batch_norm_gradient(type) && !accumulates_batch_norm_gradient(graph, p, depth + 1))
      return false;
  }
  return true;
}

bool element_wise(std::string_view t) {
  static constexpr std::array<std::string_view, 21> types = {"relu",
                                                             "tanh",
                                                             "sigmoid",
                                                             "gelu",
                                                             "clip",
                                                             "hardswish",
                                                             "hardsigmoid",
                                                             "add",
                                                             "sub",
                                                             "mul",
                                                             "div",
                                                             "scale",
                                                             "cast",
                                                             "dropout",
                                                             "relu_grad",
                                                             "gelu_grad",
                                                             "tanh_grad",
                                                             "sigmoid_grad",
                                                             "clip_grad",
                                                             "hardswish_grad",
                                                             "hardsigmoid_grad"};
  return std::find(types.begin(), types.end(), t) != types.end();
}

// The tensor's only reader is an element-wise op.
bool feeds_one_element_wise(ir::Graph const& graph, ir::TensorId t) {
  auto consumers = graph.consumers(t);
  return consumers.size() == 1 && element_wise(graph.op(consumers[0]).type);
}

double tensor_bytes(ir::Graph const& graph, ir::TensorId t) {
  auto const& type = graph.tensor(t).type;
  return static_cast<double>(ir::num_elements(type.shape) * ir::dtype_bytes(type.dtype));
}

}  // namespace

Fusion element_wise_fusion(ir::Graph const& graph, ir::OpId id) {
  auto const& op = graph.op(id);
  if (!element_wise(op.type)) return {};
  double total = 0, kept = 0;
  for (auto in : op.inputs) {
    double b = tensor_bytes(graph, in);
    total += b;
    ir::OpId p = graph.producer(in);
    bool fused = p.valid() && element_wise(graph.op(p).type) && feeds_one_element_wise(graph, in);
    if (!fused) kept += b;
  }
  ir::TensorId out = op.outputs[0];
  double b = tensor_bytes(graph, out);
  total += b;
  bool into_consumer = feeds_one_element_wise(graph, out);
  if (!into_consumer) kept += b;
  return {total > 0 ? kept / total : 1.0, !into_consumer};
}

bool fused_on_gpu(ir::Graph const& graph, ir::OpId op) {
  return inside_cudnn_batch_norm(graph.op(op).type) ||
         accumulates_batch_norm_gradient(graph, op, 0);
}

bool is_conv_class(std::string_view t) {
  return t == "conv2d" || t == "conv2d_grad_input" || t == "conv2d_grad_weight" ||
         t == "conv3d" || t == "conv3d_grad_input" || t == "conv3d_grad_weight";
}

bool is_gemm_class(std::string_view t) {
  return is_conv_class(t) || t == "matmul" || t == "batch_matmul" || t == "linear" ||
         t == "einsum" || t == "linear_grad_input" || t == "linear_grad_weight" ||
         t == "batch_matmul_grad_shared";
}

double alignment_efficiency(ir::Graph const& graph, ir::OpId id) {
  constexpr std::int64_t vector_bytes = 16;
  auto const& op = graph.op(id);
  std::int64_t worst = vector_bytes;
  auto check = [&](ir::TensorId t) {
    auto const& type = graph.tensor(t).type;
    if (type.shape.empty() || !ir::is_floating(type.dtype)) return;
    std::int64_t row = type.shape.back() * ir::dtype_bytes(type.dtype);
    if (row <= 0) return;               // empty: loads nothing
    std::int64_t aligned = row & -row;  // the largest power of two dividing the row's bytes
    worst = std::min(worst, aligned);
  };
  for (auto t : op.inputs)
    check(t);
  for (auto t : op.outputs)
    check(t);
  return static_cast<double>(worst) / vector_bytes;
}

double wave_efficiency(std::int64_t output_elements, double reduction, std::int64_t sms) {
  if (output_elements <= 0) return 1.0;
  double tiles = std::ceil(static_cast<double>(output_elements) / tile_elements);
  // Fewer tiles than SMs with a long reduction (a weight gradient: a small output summed over
  // the batch): cuBLAS and cuDNN split the reduction among SMs (split-K), each part at least
  // min_split_k deep.
  double sm_count = static_cast<double>(sms);
  if (tiles < sm_count)
    tiles *= std::max(1.0, std::min(std::floor(sm_count / tiles), reduction / min_split_k));
  double waves = tiles / sm_count;
  return waves / std::ceil(waves);
}

}  // namespace cleave::cost
