// The GPU compute model (issue 24): per device kind, what the vendor's peak rates do not say —
// how many SMs a kernel must fill, the TF32 rate, the fraction of peak that large GEMMs and
// convolutions reach, and the per-kernel launch cost — with their sources, and the time of a piece
// from them: a GEMM-class op (matmuls, linears, convolutions and their gradients) cut into
// 128 x 128 output tiles that run in waves of one tile per SM, so a piece too small to fill the
// GPU, or whose last wave is partial, runs below the large-GEMM efficiency (tile and wave
// quantisation). The fitted constants and the published figures they were fitted on are in
// docs/cost_model.md and bench/results/gpu_truth.md.
#pragma once

#include <cstdint>
#include <string_view>

#include "ir/graph.h"

namespace cleave::cost {

struct GpuCompute {
  std::string_view kind;   // cluster::Device::kind
  std::int64_t sms;        // streaming multiprocessors
  double tf32_peak;        // FLOP/s; 0 where the GPU has no TF32 tensor cores
  double gemm_efficiency;  // of the dtype's peak, a large matmul or linear and their gradients
  double conv_efficiency;  // of the dtype's peak, a large convolution and its gradients
  // Of the TF32 peak, a large fp32 convolution on tensor cores (cuDNN's TF32 kernels reach less
  // of their peak than its half ones; TF32 matmuls take gemm_efficiency).
  double tf32_conv_efficiency;
  // Of the fp32 peak, a large fp32 GEMM-class op on CUDA cores (GPUs without TF32).
  double cuda_core_efficiency;
  // fp32 convolutions on CUDA cores: cuDNN's Winograd and FFT algorithms do this many times fewer
  // multiplications than the direct convolution cleave counts (Lavin and Gray, CVPR 2016: 2.25x
  // for F(2x2, 3x3)), averaged over a network's convolutions.
  double fp32_conv_speedup;
  double memory_efficiency;
  double launch_s;  // per kernel: launch and the framework's per-op overhead
  std::string_view source;
};

// The parameters of a device kind; null for kinds without them (CPU cores, cluster files' own
// kinds), which the plain roofline prices.
GpuCompute const* gpu_compute(std::string_view kind);

// Whether an op type runs as a GEMM (a matmul, linear or convolution, or one of their gradients):
// tensor cores, tiles and waves apply to it; every other op is priced as memory traffic.
bool is_gemm_class(std::string_view op_type);
bool is_conv_class(std::string_view op_type);

// Whether a GPU framework runs `op` inside another op's kernel, so that it costs nothing of its
// own: cleave writes batch norm as three ops and its gradient as eight plus the sums of the three
// contributions to the input's gradient, where cuDNN runs one forward kernel (a pass for the
// statistics, bn_mean, and one to normalise, bn_apply) and one backward kernel (a pass for the
// reductions, bn_apply_grad_gamma, and one for the input gradient, bn_apply_grad_input):
// cudnnBatchNormalizationForwardTraining and cudnnBatchNormalizationBackward, which PyTorch's
// batch_norm calls. The other parts (bn_var, the gradients through the statistics, the channel
// sum, and the adds that accumulate the input gradient's parts) are fused.
bool fused_on_gpu(ir::Graph const& graph, ir::OpId op);

// The part of a piece's bytes a GPU framework still moves, and whether it still launches a kernel
// of its own, where it fuses chains of element-wise ops (nvFuser, TorchScript and XLA do; so do
// the fused bias-GeLU, bias-dropout-add and softmax kernels of NVIDIA's BERT and Megatron): an
// element-wise op reads from registers, not memory, an input that an element-wise op made for it
// alone, and does not write an output that only an element-wise op reads (it runs inside that
// op's kernel). Inputs and output share the piece's bytes in proportion to the tensors' sizes.
struct Fusion {
  double bytes_fraction = 1;
  bool launches = true;
};
Fusion element_wise_fusion(ir::Graph const& graph, ir::OpId op);

// The fraction of the tensor-core rate a matmul-class op (not a convolution) keeps given its
// tensors' alignment: cuBLAS's tensor-core kernels load 16-byte vectors along each operand's
// contiguous (last) dimension, and a row whose bytes are not a multiple of 16 makes it take the
// kernels with 2-, 4- or 8-byte loads (align1/align2/align4): alignment / 16 bytes, the worst
// operand's. A 50257-word vocabulary projection in bf16 keeps 2/16 (measured on an H100: 5.4-8.6x
// the aligned roofline), in TF32 4/16 (3.1-3.5x); GPT-2 and MPT pad their vocabulary to a
// multiple of 64 for this. 1 where every tensor is aligned.
double alignment_efficiency(ir::Graph const& graph, ir::OpId op);

// The fraction of the large-kernel efficiency that a GEMM writing `output_elements`, each a sum of
// `reduction` products, reaches on `sms` SMs: waves of one 128 x 128 tile per SM, the last one
// partial, a short output's reduction split among SMs. 1 when the output is unknown (0).
double wave_efficiency(std::int64_t output_elements, double reduction, std::int64_t sms);

}  // namespace cleave::cost
