// Training precision (issue 24): `precision=fp32|tf32|amp-fp16|amp-bf16`, a model option of every
// zoo model and imported graph. AMP is what PyTorch's autocast and GradScaler do: matmuls and
// convolutions run in half precision, softmax, layer norm and the loss in fp32, other ops in the
// dtype of the activations they read; weights and optimizer state stay fp32 (master weights), and
// every change of dtype is an explicit `cast` op whose time and memory count. docs/precision.md.
#pragma once

#include <optional>
#include <string_view>

#include "autodiff/training_graph.h"

namespace cleave::autodiff {

enum class Precision : std::uint8_t { fp32, tf32, amp_fp16, amp_bf16 };

// "fp32", "tf32", "amp-fp16", "amp-bf16".
std::string_view precision_name(Precision precision);
// An error that lists the accepted names.
Expected<Precision> parse_precision(std::string_view name);
// The half dtype AMP computes in; nothing for fp32 and tf32.
std::optional<ir::DType> amp_dtype(Precision precision);
// The loss scale a precision trains with: GradScaler's initial 2^16 for amp-fp16, else 1.
double loss_scale(Precision precision);

// The forward graph under `precision`: the graph itself for fp32 and tf32 (TF32 is how the cost
// model prices fp32 matmuls and convolutions on GPUs that have it), else a copy with the casts AMP
// inserts (tensor names kept; a cast of T to D is named "T.D", one per tensor and dtype, as
// autocast caches the cast weights). The graph's floating sources must be fp32.
Expected<ir::Graph> apply_precision(ir::Graph const& forward, ops::OpRegistry const& registry,
                                    Precision precision);

}  // namespace cleave::autodiff
