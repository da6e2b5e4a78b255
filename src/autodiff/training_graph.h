// From a forward graph with a scalar loss to the training step's graph: the forward ops, the
// backward ops (gradient rules), gradient accumulation where a tensor has several uses, and the
// optimizer update with its state tensors. cleave plans training, not inference (PAPERS.md §1:
// Tofu partitions forward, backward and optimizer ops together).
#pragma once

#include <string>
#include <vector>

#include "autodiff/gradient_rules.h"

namespace cleave::autodiff {

enum class Optimizer { sgd, adam };  // sgd: with momentum

struct TrainingOptions {
  std::string loss = "loss";  // the scalar tensor to minimise
  Optimizer optimizer = Optimizer::sgd;
  double learning_rate = 0.01;
  double momentum = 0.9;                              // sgd
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;  // adam
  std::int64_t step = 1;                              // adam's bias correction
  // Loss scaling (AMP in fp16, autodiff/precision.h): the backward pass starts from this value
  // instead of 1, and each weight's gradient is multiplied by its inverse ("<w>.grad_unscaled",
  // GradScaler's unscale and finiteness check, one kernel per gradient) before the update.
  double loss_scale = 1.0;
};

// Names in the training graph: a tensor's gradient is named by the backward op that computes it,
// or "<t>.grad" where the contributions of several uses are summed; weight "w" is updated into
// "w.updated"; its optimizer state is "w.momentum" (sgd) or "w.adam_m" and "w.adam_v" (adam), with
// updated values "<state>.updated". Backward ops are "<forward op>.grad.<input>"; each records
// its forward op (ir::Op::forward), and so do the optimizer ops (the first op using the weight).
Expected<ir::Graph> build_training_graph(ir::Graph const& forward, ops::OpRegistry const& registry,
                                         TrainingOptions const& options = {});

// The forward tensors that backward ops read: what a training step keeps alive from the forward
// pass to the backward pass (weights excluded).
std::vector<ir::TensorId> saved_for_backward(ir::Graph const& training);

}  // namespace cleave::autodiff
