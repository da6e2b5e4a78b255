// e3d: Eidetic 3D LSTM (Wang et al., ICLR 2019), ParDNN's E3D and E3D-2 (PAPERS.md §3): a stack of
// recurrent cells whose gates are 3-D convolutions over a window of frames, with an "eidetic"
// memory (each step's cell attends over every earlier step's cell) and a spatiotemporal memory
// that flows up the stack and on to the next step's first layer. Frames are [N, C, D, H, W]: video
// frames cut into patches (64x64 Moving MNIST in 4x4 patches: 16 channels of 16x16), a window of
// two frames in depth.
//
// One cell, as the authors' reference model writes it (channels first here), every convolution
// 2x5x5 with "same" padding and a bias, except the last, 1x1x1:
//   i_x g_x r_x o_x i'_x g'_x f'_x = norm(conv(X));  i_h g_h r_h o_h = norm(conv(H))
//   i = sigmoid(i_x + i_h), r = sigmoid(r_x + r_h), g = tanh(g_x + g_h)
//   C' = norm(C + attention(r, C_history)) + i * g      (the eidetic memory)
//   i_m f_m g_m m_m = norm(conv(M))
//   M' = sigmoid(f'_x + f_m) * tanh(m_m) + sigmoid(i'_x + i_m) * tanh(g'_x + g_m)
//   o = tanh(o_x + o_h + conv(C') + conv(M'));  H' = tanh(conv1(concat(C', M'))) * sigmoid(o)
// Each step's top H is projected to the next frame (a 2x1x1 convolution of stride 2 in depth); the
// loss is the squared error over every predicted frame. Differences from the reference: each norm
// is our layer_norm over the whole sample (C*D*H*W values, with as many gains and shifts; the
// reference keeps them per channel: 32*C*D*H*W parameters a layer more, 1% of E3D), no forget bias
// constant, and no L1 term in the loss.
#include <string>
#include <vector>

#include "models/layers.h"
#include "models/model_zoo.h"
#include "support/assert.h"

namespace cleave::models {
namespace {

using Ints = std::vector<std::int64_t>;

std::string at(std::string const& what, std::int64_t index) {
  return what + std::to_string(index);
}

// A convolution's weight [out, in, kd, kh, kw] and bias [out, 1, 1, 1], shared by every step.
struct Conv3d {
  ir::TensorId weight, bias;
  Ints padding, stride;
};

Conv3d conv_weights(ops::OpBuilder& b, std::int64_t in, std::int64_t out, Ints const& kernel,
                    std::string const& name, ir::DType dtype) {
  auto s = b.scope(name);
  // TensorFlow's "same": the kernel's extent less one, the smaller half before.
  Ints pad(6);
  for (std::size_t i = 0; i < 3; ++i) {
    pad[i] = (kernel[i] - 1) / 2;
    pad[i + 3] = kernel[i] - 1 - pad[i];
  }
  return {b.weight("weight", {out, in, kernel[0], kernel[1], kernel[2]}, dtype),
          b.weight("bias", {out, 1, 1, 1}, dtype),
          pad,
          {1, 1, 1}};
}

ir::TensorId apply(ops::OpBuilder& b, Conv3d const& c, ir::TensorId x, std::string const& name) {
  auto s = b.scope(name);
  auto y = b.op("conv3d", {x, c.weight}, {{"padding", c.padding}, {"stride", c.stride}}, "conv");
  return b.op("add", {y, c.bias}, {}, "add_bias");
}

// Layer norm over a whole sample [N, ...], its gain and shift shared by every step.
struct Norm {
  ir::TensorId gamma, beta;
};

Norm norm_weights(ops::OpBuilder& b, std::int64_t size, std::string const& name, ir::DType dtype) {
  auto s = b.scope(name);
  return {b.weight("weight", {size}, dtype), b.weight("bias", {size}, dtype)};
}

ir::TensorId apply(ops::OpBuilder& b, Norm const& n, ir::TensorId x, std::string const& name) {
  auto s = b.scope(name);
  ir::Shape shape = b.shape_of(x);
  auto flat = flatten(b, x, "flatten");
  auto y = b.op("layer_norm", {flat, n.gamma, n.beta}, {}, "normalize");
  return b.op("reshape", {y}, {{"shape", Ints(shape.begin(), shape.end())}}, "unflatten");
}

struct CellWeights {
  Conv3d x, h, m, out_c, out_m, memory;
  Norm norm_x, norm_h, norm_m, norm_c;
};

CellWeights cell_weights(ops::OpBuilder& b, std::int64_t in, std::int64_t c, std::int64_t volume,
                         std::string const& name, ir::DType dtype) {
  auto s = b.scope(name);
  Ints const k = {2, 5, 5};
  return {conv_weights(b, in, 7 * c, k, "conv_x", dtype),
          conv_weights(b, c, 4 * c, k, "conv_h", dtype),
          conv_weights(b, c, 4 * c, k, "conv_m", dtype),
          conv_weights(b, c, c, k, "conv_out_c", dtype),
          conv_weights(b, c, c, k, "conv_out_m", dtype),
          conv_weights(b, 2 * c, c, {1, 1, 1}, "conv_memory", dtype),
          norm_weights(b, 7 * c * volume, "norm_x", dtype),
          norm_weights(b, 4 * c * volume, "norm_h", dtype),
          norm_weights(b, 4 * c * volume, "norm_m", dtype),
          norm_weights(b, c * volume, "norm_c", dtype)};
}

struct CellState {
  ir::TensorId h, c, history;  // history: every earlier step's C, joined in depth
};

// The eidetic memory's read: r [N, C, D, H, W] attends over history [N, C, D', H, W] (keys and
// values both), positions against positions, channels the features.
ir::TensorId recall(ops::OpBuilder& b, ir::TensorId r, ir::TensorId history, std::int64_t n,
                    std::int64_t c) {
  auto s = b.scope("recall");
  ir::Shape shape = b.shape_of(r);
  auto q = b.op("reshape", {r}, {{"shape", Ints{n, c, -1}}}, "query");
  auto kv = b.op("reshape", {history}, {{"shape", Ints{n, c, -1}}}, "memory");
  auto scores = b.op("einsum", {q, kv}, {{"equation", std::string("bcl,bcm->blm")}}, "scores");
  auto probs = b.op("softmax", {scores}, {{"axis", std::int64_t{-1}}}, "probs");
  auto read = b.op("einsum", {probs, kv}, {{"equation", std::string("blm,bcm->bcl")}}, "read");
  return b.op("reshape", {read}, {{"shape", Ints(shape.begin(), shape.end())}}, "unflatten");
}

// One step of one layer: updates `state` and the spatiotemporal memory `m`.
// `n` and `c`: the batch and the channels of the states.
void cell(ops::OpBuilder& b, ir::TensorId x, CellState& state, ir::TensorId& m,
          CellWeights const& w, std::int64_t n, std::int64_t c, std::string const& name) {
  auto s = b.scope(name);
  auto xs =
      b.split(apply(b, w.norm_x, apply(b, w.x, x, "conv_x"), "norm_x"), 1, Ints(7, c), "x_gate");
  auto hs = b.split(apply(b, w.norm_h, apply(b, w.h, state.h, "conv_h"), "norm_h"), 1, Ints(4, c),
                    "h_gate");
  auto gate = [&](char const* f, ir::TensorId a, ir::TensorId h, std::string const& n) {
    return b.op(f, {b.op("add", {a, h}, {}, n + "_sum")}, {}, n);
  };
  auto i = gate("sigmoid", xs[0], hs[0], "input");
  auto g = gate("tanh", xs[1], hs[1], "candidate");
  auto r = gate("sigmoid", xs[2], hs[2], "recall_gate");
  auto recalled = b.op("add", {state.c, recall(b, r, state.history, n, c)}, {}, "recalled");
  auto written = b.op("mul", {i, g}, {}, "write");
  auto new_c = b.op("add", {apply(b, w.norm_c, recalled, "norm_c"), written}, {}, "cell");

  auto ms =
      b.split(apply(b, w.norm_m, apply(b, w.m, m, "conv_m"), "norm_m"), 1, Ints(4, c), "m_gate");
  auto mi = gate("sigmoid", xs[4], ms[0], "memory_input");
  auto mg = gate("tanh", xs[5], ms[2], "memory_candidate");
  auto mf = gate("sigmoid", xs[6], ms[1], "memory_forget");
  auto kept = b.op("mul", {mf, b.op("tanh", {ms[3]}, {}, "memory_tanh")}, {}, "memory_keep");
  auto new_m = b.op("add", {kept, b.op("mul", {mi, mg}, {}, "memory_write")}, {}, "memory");

  auto o = b.op("add", {xs[3], hs[3]}, {}, "output_xh");
  o = b.op("add", {o, apply(b, w.out_c, new_c, "conv_out_c")}, {}, "output_c");
  o = b.op("add", {o, apply(b, w.out_m, new_m, "conv_out_m")}, {}, "output_m");
  o = b.op("tanh", {o}, {}, "output_gate");
  auto both = b.op("concat", {new_c, new_m}, {{"axis", std::int64_t{1}}}, "cell_memory");
  auto mem = b.op("tanh", {apply(b, w.memory, both, "conv_memory")}, {}, "memory_tanh_out");
  state.h = b.op("mul", {mem, b.op("sigmoid", {o}, {}, "output")}, {}, "hidden");
  state.history = b.op("concat", {state.history, new_c}, {{"axis", std::int64_t{2}}}, "history");
  state.c = new_c;
  m = new_m;
}

void build_e3d(ops::OpBuilder& b, ModelArgs const& a) {
  std::int64_t layers = a.integer("layers"), hidden = a.integer("hidden");
  std::int64_t steps = a.integer("steps"), batch = a.integer("batch");
  std::int64_t size = a.integer("size"), channels = a.integer("channels");
  std::int64_t window = a.integer("window");
  ir::DType dtype = a.dtype();
  std::int64_t volume = window * size * size;

  // Frames 0..steps-1+window; step t reads frames [t, t+window) and predicts frame t+window.
  auto frames = b.input("frames", {batch, channels, steps + window, size, size}, dtype);
  std::vector<CellWeights> w;
  std::vector<CellState> states;
  for (std::int64_t l = 0; l < layers; ++l) {
    w.push_back(cell_weights(b, l == 0 ? channels : hidden, hidden, volume, at("layer", l), dtype));
    auto s = b.scope(at("layer", l));
    auto zero = b.input("state0", {batch, hidden, window, size, size}, dtype);
    states.push_back({zero, b.input("cell0", {batch, hidden, window, size, size}, dtype), {}});
    states.back().history = states.back().c;
  }
  auto m = b.input("memory0", {batch, hidden, window, size, size}, dtype);
  Conv3d predict = conv_weights(b, hidden, channels, {window, 1, 1}, "predict", dtype);
  predict.padding = Ints(6, 0);
  predict.stride = {window, 1, 1};

  std::vector<ir::TensorId> predicted;
  for (std::int64_t t = 0; t < steps; ++t) {
    auto x = b.op("slice", {frames},
                  {{"starts", Ints{t}}, {"ends", Ints{t + window}}, {"axes", Ints{2}}},
                  at("window.step", t));
    for (std::int64_t l = 0; l < layers; ++l) {
      auto& st = states[static_cast<std::size_t>(l)];
      cell(b, x, st, m, w[static_cast<std::size_t>(l)], batch, hidden,
           at("layer", l) + "." + at("step", t));
      x = st.h;
    }
    predicted.push_back(apply(b, predict, x, at("predict.step", t)));
  }
  auto all = predicted.size() == 1
                 ? predicted[0]
                 : b.op("concat", predicted, {{"axis", std::int64_t{2}}}, "predicted");
  auto target =
      b.op("slice", {frames},
           {{"starts", Ints{window}}, {"ends", Ints{steps + window}}, {"axes", Ints{2}}}, "target");
  auto error = b.op("sub", {all, target}, {}, "error");
  b.op("einsum", {error, error}, {{"equation", std::string("ncdhw,ncdhw->")}}, "loss");
}

}  // namespace

void add_e3d(ModelZoo& zoo) {
  ModelDef def;
  def.name = "e3d";
  def.summary = "Eidetic 3D LSTM (ParDNN's E3D: hidden=640, E3D-2: hidden=1024): recurrent cells "
                "of 2x5x5 3-D convolutions over a window of video frames, attention over every "
                "earlier step's memory, squared error of each predicted frame";
  def.keys = {
      {"layers", KeyKind::integer, "3", "E3D-LSTM layers", 1, {}},
      {"hidden", KeyKind::integer, "64", "channels of every layer's states (reference: 64)", 1, {}},
      {"steps", KeyKind::integer, "19", "unrolled steps (reference: 20 frames, 19 steps)", 1, {}},
      {"batch", KeyKind::integer, "4", "videos per step (reference: 4)", 1, {}},
      {"size", KeyKind::integer, "16", "frame side in patches (64 pixels in 4x4 patches)", 1, {}},
      {"channels",
       KeyKind::integer,
       "16",
       "channels of a frame (a 4x4 patch of one grey channel)",
       1,
       {}},
      {"window", KeyKind::integer, "2", "frames a step reads (the depth of its volume)", 2, {}}};
  def.build = build_e3d;
  auto st = zoo.add(std::move(def));
  CLEAVE_ASSERT(st.is_ok(), "duplicate model");
}

}  // namespace cleave::models
