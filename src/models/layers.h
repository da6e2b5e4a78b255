// Layers written as primitive ops, shared by the zoo's models. Weights are named
// "<scope>.<name>.weight" and so on, and take the dtype of the layer's input.
#pragma once

#include <array>
#include <optional>
#include <string>

#include "ops/op_builder.h"

namespace cleave::models {

// y = x W^T (+ b) over the last dimension; W is [out, in] as in PyTorch.
ir::TensorId linear(ops::OpBuilder& b, ir::TensorId x, std::int64_t out, std::string const& name,
                    bool bias = true);

struct Conv {
  std::int64_t out_channels = 0;
  std::int64_t kernel_h = 1, kernel_w = 1;
  std::int64_t stride_h = 1, stride_w = 1;
  std::int64_t pad_h = 0, pad_w = 0;  // before (top, left), and after too unless pad_after is set
  // (bottom, right) where they differ from the pads before: TensorFlow's SAME padding of a
  // stride-2 window over an even side puts the odd row and column after (nasnet).
  std::optional<std::array<std::int64_t, 2>> pad_after;
  std::int64_t groups = 1;
  bool bias = false;
};
// NCHW convolution; W is [out, in/groups, kh, kw]; a bias is a broadcast add over [out, 1, 1].
ir::TensorId conv2d(ops::OpBuilder& b, ir::TensorId x, Conv const& c, std::string const& name);

// Training-mode batch norm over channel dim 1: batch statistics as explicit reductions
// (bn_mean, bn_var), then bn_apply with learned gamma and beta ("<name>.weight", "<name>.bias").
// `eps` is added to the variance (PyTorch's default; Inception-v3 uses 0.001).
ir::TensorId batch_norm(ops::OpBuilder& b, ir::TensorId x, std::string const& name,
                        double eps = 1e-5);
// Layer norm over the last dimension, with gamma and beta.
ir::TensorId layer_norm(ops::OpBuilder& b, ir::TensorId x, std::string const& name);

ir::TensorId max_pool(ops::OpBuilder& b, ir::TensorId x, std::int64_t kernel, std::int64_t stride,
                      std::int64_t pad, std::string const& name);
ir::TensorId avg_pool(ops::OpBuilder& b, ir::TensorId x, std::int64_t kernel, std::int64_t stride,
                      std::int64_t pad, std::string const& name);
// [N, d1, d2, ...] -> [N, d1*d2*...].
ir::TensorId flatten(ops::OpBuilder& b, ir::TensorId x, std::string const& name);
// Dropout with its seeded 0/1 mask as an input tensor "<name>.mask".
ir::TensorId dropout(ops::OpBuilder& b, ir::TensorId x, double p, std::string const& name);

// The classification loss every model ends with: mean softmax cross-entropy of logits [B, C]
// against int64 labels [B] (an input named "labels"); the result is the scalar "loss".
ir::TensorId classification_loss(ops::OpBuilder& b, ir::TensorId logits);

// One LSTM step (PyTorch's gate order i, f, g, o): gates = x W_ih^T + h W_hh^T + bias, split in
// four; c' = f*c + i*g; h' = o*tanh(c'). The weights are passed in so that time steps share them.
struct LstmWeights {
  ir::TensorId w_ih, w_hh, bias;  // [4H, I], [4H, H], [4H]
};
struct LstmState {
  ir::TensorId h, c;  // [B, H]
};
LstmWeights lstm_weights(ops::OpBuilder& b, std::int64_t input, std::int64_t hidden,
                         std::string const& name, ir::DType dtype);
LstmState lstm_cell(ops::OpBuilder& b, ir::TensorId x, LstmState state, LstmWeights const& w,
                    std::string const& name);

// Multi-head self-attention on x [B, S, H]: q, k, v projections, scores = q k^T / sqrt(d),
// an additive mask input [S, S] when causal, softmax, dropout of the probabilities when
// `dropout` > 0, weighted sum, output projection.
ir::TensorId self_attention(ops::OpBuilder& b, ir::TensorId x, std::int64_t heads, bool causal,
                            std::string const& name, double dropout = 0);

}  // namespace cleave::models
