// What `cleave inspect` reports of a model's training step: sizes of what training keeps in
// memory (weights, gradients, optimizer state, activations saved for backward) and its FLOPs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ops/op_registry.h"

namespace cleave::report {

struct TensorSummary {
  std::string name;
  ir::TensorType type;
  ir::TensorRole role;
  std::int64_t bytes = 0;
};

struct ModelSummary {
  std::string model;
  std::optional<std::int64_t> forward_ops;  // absent when only a training graph was given
  std::int64_t training_ops = 0;
  std::int64_t backward_ops = 0;   // ops with a forward op, excluding the optimizer's
  std::int64_t optimizer_ops = 0;  // ops producing updated weights or optimizer state
  std::int64_t parameters = 0;     // elements of the weights
  std::int64_t parameter_bytes = 0;
  std::int64_t gradient_bytes = 0;         // one gradient per weight
  std::int64_t optimizer_state_bytes = 0;  // momentum, Adam's moments
  std::int64_t training_state_bytes = 0;   // weights + gradients + optimizer state
  // Training state per parameter: this graph's (training_state_bytes / parameters), and under
  // each precision of a model built in fp32 (autodiff/precision.h): fp32 weight and gradient and
  // the optimizer's fp32 state (4 + 4 + 4 per state element: Adam 16, SGD with momentum 12), as
  // ZeRO counts; AMP keeps the same fp32 master state and adds only transient half copies.
  double bytes_per_parameter = 0;
  std::vector<std::pair<std::string, double>> bytes_per_parameter_by_precision;
  std::int64_t activation_bytes = 0;  // forward tensors saved for backward
  std::int64_t flops_per_step = 0;    // forward + backward + optimizer
  std::int64_t forward_flops = 0;
  std::vector<TensorSummary> largest;  // the largest tensors, biggest first
};

// `training` is a training graph (autodiff::build_training_graph); `forward_ops` the size of the
// forward graph if known.
Expected<ModelSummary> summarize(std::string model, ir::Graph const& training,
                                 std::optional<std::int64_t> forward_ops,
                                 ops::OpRegistry const& registry, std::size_t largest = 10);

std::string to_text(ModelSummary const& s);
std::string to_json(ModelSummary const& s);  // "cleave.inspect/1"

}  // namespace cleave::report
