#include "models/layers.h"

#include <cmath>

namespace cleave::models {

using Ints = std::vector<std::int64_t>;

ir::TensorId linear(ops::OpBuilder& b, ir::TensorId x, std::int64_t out, std::string const& name,
                    bool bias) {
  auto s = b.scope(name);
  ir::DType dtype = b.type_of(x).dtype;
  std::int64_t in = b.shape_of(x).empty() ? 1 : b.shape_of(x).back();
  auto w = b.weight("weight", {out, in}, dtype);
  auto y = b.op("linear", {x, w}, {}, "linear");
  if (!bias) return y;
  auto bv = b.weight("bias", {out}, dtype);
  return b.op("add", {y, bv}, {}, "add_bias");
}

ir::TensorId conv2d(ops::OpBuilder& b, ir::TensorId x, Conv const& c, std::string const& name) {
  auto s = b.scope(name);
  ir::DType dtype = b.type_of(x).dtype;
  auto const& shape = b.shape_of(x);
  std::int64_t in = shape.size() == 4 ? shape[1] : 1;
  auto w = b.weight(
      "weight", {c.out_channels, in / std::max<std::int64_t>(c.groups, 1), c.kernel_h, c.kernel_w},
      dtype);
  Ints padding = {c.pad_h, c.pad_w};
  if (c.pad_after) padding.insert(padding.end(), c.pad_after->begin(), c.pad_after->end());
  auto y =
      b.op("conv2d", {x, w},
           {{"stride", Ints{c.stride_h, c.stride_w}}, {"padding", padding}, {"groups", c.groups}},
           "conv");
  if (!c.bias) return y;
  auto bv = b.weight("bias", {c.out_channels, 1, 1}, dtype);
  return b.op("add", {y, bv}, {}, "add_bias");
}

ir::TensorId batch_norm(ops::OpBuilder& b, ir::TensorId x, std::string const& name, double eps) {
  auto s = b.scope(name);
  ir::DType dtype = b.type_of(x).dtype;
  std::int64_t c = b.shape_of(x).size() >= 2 ? b.shape_of(x)[1] : 1;
  auto mean = b.op("bn_mean", {x}, {}, "mean");
  auto var = b.op("bn_var", {x, mean}, {}, "var");
  auto gamma = b.weight("weight", {c}, dtype);
  auto beta = b.weight("bias", {c}, dtype);
  ir::Attrs attrs;
  if (eps != 1e-5) attrs.set("eps", eps);  // else the op's default: other graphs stay unchanged
  return b.op("bn_apply", {x, mean, var, gamma, beta}, std::move(attrs), "normalize");
}

ir::TensorId layer_norm(ops::OpBuilder& b, ir::TensorId x, std::string const& name) {
  auto s = b.scope(name);
  ir::DType dtype = b.type_of(x).dtype;
  std::int64_t d = b.shape_of(x).empty() ? 1 : b.shape_of(x).back();
  auto gamma = b.weight("weight", {d}, dtype);
  auto beta = b.weight("bias", {d}, dtype);
  return b.op("layer_norm", {x, gamma, beta}, {}, "normalize");
}

ir::TensorId max_pool(ops::OpBuilder& b, ir::TensorId x, std::int64_t kernel, std::int64_t stride,
                      std::int64_t pad, std::string const& name) {
  return b.op("max_pool2d", {x},
              {{"kernel", Ints{kernel, kernel}},
               {"stride", Ints{stride, stride}},
               {"padding", Ints{pad, pad}}},
              name);
}

ir::TensorId avg_pool(ops::OpBuilder& b, ir::TensorId x, std::int64_t kernel, std::int64_t stride,
                      std::int64_t pad, std::string const& name) {
  return b.op("avg_pool2d", {x},
              {{"kernel", Ints{kernel, kernel}},
               {"stride", Ints{stride, stride}},
               {"padding", Ints{pad, pad}}},
              name);
}

ir::TensorId flatten(ops::OpBuilder& b, ir::TensorId x, std::string const& name) {
  std::int64_t n = b.shape_of(x).empty() ? 1 : b.shape_of(x)[0];
  return b.op("reshape", {x}, {{"shape", Ints{n, -1}}}, name);
}

ir::TensorId dropout(ops::OpBuilder& b, ir::TensorId x, double p, std::string const& name) {
  auto s = b.scope(name);
  auto mask = b.source("mask", b.type_of(x), ir::TensorRole::input);
  return b.op("dropout", {x, mask}, {{"p", p}}, "dropout");
}

ir::TensorId classification_loss(ops::OpBuilder& b, ir::TensorId logits) {
  std::int64_t batch = b.shape_of(logits).empty() ? 1 : b.shape_of(logits)[0];
  auto labels = b.input("labels", {batch}, ir::DType::int64);
  return b.op("cross_entropy", {logits, labels}, {}, "loss");
}

LstmWeights lstm_weights(ops::OpBuilder& b, std::int64_t input, std::int64_t hidden,
                         std::string const& name, ir::DType dtype) {
  auto s = b.scope(name);
  return {b.weight("weight_ih", {4 * hidden, input}, dtype),
          b.weight("weight_hh", {4 * hidden, hidden}, dtype),
          b.weight("bias", {4 * hidden}, dtype)};
}

LstmState lstm_cell(ops::OpBuilder& b, ir::TensorId x, LstmState state, LstmWeights const& w,
                    std::string const& name) {
  auto s = b.scope(name);
  std::int64_t hidden = b.shape_of(w.w_hh).empty() ? 1 : b.shape_of(w.w_hh)[1];
  auto xi = b.op("linear", {x, w.w_ih}, {}, "input_proj");
  auto hh = b.op("linear", {state.h, w.w_hh}, {}, "hidden_proj");
  auto sum = b.op("add", {xi, hh}, {}, "gates_sum");
  auto gates = b.op("add", {sum, w.bias}, {}, "gates");
  auto parts = b.split(gates, -1, {hidden, hidden, hidden, hidden}, "gate");
  auto i = b.op("sigmoid", {parts[0]}, {}, "input_gate");
  auto f = b.op("sigmoid", {parts[1]}, {}, "forget_gate");
  auto g = b.op("tanh", {parts[2]}, {}, "cell_gate");
  auto o = b.op("sigmoid", {parts[3]}, {}, "output_gate");
  auto fc = b.op("mul", {f, state.c}, {}, "keep");
  auto ig = b.op("mul", {i, g}, {}, "write");
  auto c = b.op("add", {fc, ig}, {}, "cell");
  auto tc = b.op("tanh", {c}, {}, "cell_tanh");
  auto h = b.op("mul", {o, tc}, {}, "hidden");
  return {h, c};
}

ir::TensorId self_attention(ops::OpBuilder& b, ir::TensorId x, std::int64_t heads, bool causal,
                            std::string const& name, double dropout_p) {
  auto s = b.scope(name);
  auto const& shape = b.shape_of(x);
  if (shape.size() != 3) {
    b.fail(Error(ErrorCode::shape_mismatch,
                 "self_attention '" + b.scoped("") + "' needs [B, S, H] input"));
    return {};
  }
  std::int64_t batch = shape[0], seq = shape[1], hidden = shape[2];
  if (heads < 1 || hidden % heads != 0) {
    b.fail(Error(ErrorCode::invalid_argument, "heads=" + std::to_string(heads) +
                                                  " must divide hidden=" + std::to_string(hidden)));
    return {};
  }
  std::int64_t d = hidden / heads;
  auto split_heads = [&](ir::TensorId t, std::string const& n) {
    auto r = b.op("reshape", {t}, {{"shape", Ints{batch, seq, heads, d}}}, n + "_heads");
    return b.op("transpose", {r}, {{"perm", Ints{0, 2, 1, 3}}}, n + "_transpose");
  };
  auto q = split_heads(linear(b, x, hidden, "query"), "query");
  auto k = split_heads(linear(b, x, hidden, "key"), "key");
  auto v = split_heads(linear(b, x, hidden, "value"), "value");
  auto scores = b.op("batch_matmul", {q, k}, {{"transpose_b", std::int64_t{1}}}, "scores");
  auto scaled =
      b.op("scale", {scores}, {{"alpha", 1.0 / std::sqrt(static_cast<double>(d))}}, "scaled");
  if (causal) {
    // 0 on and below the diagonal, a large negative number above it; an input like the
    // framework's registered buffer.
    auto mask = b.source("causal_mask", {{seq, seq}, b.type_of(x).dtype}, ir::TensorRole::input);
    scaled = b.op("add", {scaled, mask}, {}, "masked");
  }
  auto probs = b.op("softmax", {scaled}, {{"axis", std::int64_t{-1}}}, "probs");
  if (dropout_p > 0) probs = dropout(b, probs, dropout_p, "probs_dropout");
  auto ctx = b.op("batch_matmul", {probs, v}, {}, "context");
  auto merged = b.op("transpose", {ctx}, {{"perm", Ints{0, 2, 1, 3}}}, "context_transpose");
  auto flat = b.op("reshape", {merged}, {{"shape", Ints{batch, seq, hidden}}}, "context_merge");
  return linear(b, flat, hidden, "output");
}

}  // namespace cleave::models
