// rnn, nmt and crn: LSTM models unrolled over time steps, as a framework's static graph holds them (a
// cell is two matmuls and element-wise ops, layers.h). Every layer's weights are created once and
// used by every time step, so the graph shows the weight sharing that Tofu coarsens away
// (PAPERS.md §1: "merge unrolled RNN time steps").
//  - rnn: Tofu's stacked LSTM (§1: 6/8/10 layers, hidden 4K/6K/8K, 20 steps, batch 512),
//    FlexFlow's RNNLM and RNNTC (§2: 2 layers hidden 2048, and 4 layers hidden 1024, 40 steps)
//    and, with directions=2, SwapAdvisor's BRNN (§4: 4 layers, hidden 8K, batch 128).
//  - nmt: FlexFlow's NMT (§2: 2+2 LSTM layers, hidden 1024, attention).
//  - crn: ParDNN's Char-CRN (§3: 8 and 32 LSTM layers over a character-aware word encoder).
#include <algorithm>
#include <array>
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

// A dense layer whose weight [out, in] and bias [out] every time step shares (layers.h's linear()
// makes new weights on each call).
struct SharedLinear {
  ir::TensorId weight, bias;
};

SharedLinear shared_linear(ops::OpBuilder& b, std::int64_t in, std::int64_t out,
                           std::string const& name, ir::DType dtype) {
  auto s = b.scope(name);
  return {b.weight("weight", {out, in}, dtype), b.weight("bias", {out}, dtype)};
}

ir::TensorId apply(ops::OpBuilder& b, SharedLinear const& l, ir::TensorId x,
                   std::string const& name) {
  auto s = b.scope(name);
  auto y = b.op("linear", {x, l.weight}, {}, "linear");
  return b.op("add", {y, l.bias}, {}, "add_bias");
}

// One token-id input [batch] per step, each looked up in the shared table [vocab, hidden].
std::vector<ir::TensorId> embed_steps(ops::OpBuilder& b, ir::TensorId table, std::int64_t steps,
                                      std::int64_t batch, std::string const& name) {
  auto s = b.scope(name);
  std::vector<ir::TensorId> out;
  for (std::int64_t t = 0; t < steps; ++t) {
    auto ids = b.input(at("tokens", t), {batch}, ir::DType::int64);
    out.push_back(b.op("embedding", {table, ids}, {}, at("lookup", t)));
  }
  return out;
}

// The first layer reads `input` features, every other layer the `hidden` of the one below.
std::vector<LstmWeights> stack_weights(ops::OpBuilder& b, std::int64_t layers, std::int64_t input,
                                       std::int64_t hidden, std::string const& name,
                                       ir::DType dtype) {
  auto s = b.scope(name);
  std::vector<LstmWeights> w;
  for (std::int64_t l = 0; l < layers; ++l)
    w.push_back(lstm_weights(b, l == 0 ? input : hidden, hidden, at("layer", l), dtype));
  return w;
}

// Initial h and c of every layer: zero tensors fed as inputs.
std::vector<LstmState> zero_states(ops::OpBuilder& b, std::int64_t layers, std::int64_t batch,
                                   std::int64_t hidden, std::string const& name, ir::DType dtype) {
  auto s = b.scope(name);
  std::vector<LstmState> states;
  for (std::int64_t l = 0; l < layers; ++l) {
    auto ls = b.scope(at("layer", l));
    states.push_back(
        {b.input("h0", {batch, hidden}, dtype), b.input("c0", {batch, hidden}, dtype)});
  }
  return states;
}

// One time step through the stack: updates `states` and returns the top layer's output.
ir::TensorId stack_step(ops::OpBuilder& b, ir::TensorId x, std::vector<LstmState>& states,
                        std::vector<LstmWeights> const& w, std::string const& name,
                        std::int64_t t) {
  auto s = b.scope(name);
  for (std::size_t l = 0; l < w.size(); ++l) {
    states[l] = lstm_cell(b, x, states[l], w[l],
                          at("layer", static_cast<std::int64_t>(l)) + "." + at("step", t));
    x = states[l].h;
  }
  return x;
}

// The steps' logits [batch, classes] joined along the batch axis, so that one cross-entropy over
// [steps * batch, classes] is the mean loss over every step.
void sequence_loss(ops::OpBuilder& b, std::vector<ir::TensorId> const& logits) {
  auto all = logits.size() == 1
                 ? logits[0]
                 : b.op("concat", logits, {{"axis", std::int64_t{0}}}, "logits_all_steps");
  classification_loss(b, all);
}

// A bidirectional stack (SwapAdvisor's BRNN): each layer runs one LSTM over the steps forward and
// another backward, and the next layer (and the output) reads both hidden states of a step,
// concatenated [batch, 2 * hidden]. Layer by layer, as each direction needs every step's input.
std::vector<ir::TensorId> bidirectional_stack(ops::OpBuilder& b, std::vector<ir::TensorId> x,
                                              std::int64_t layers, std::int64_t hidden,
                                              std::int64_t batch, ir::DType dtype) {
  auto s = b.scope("lstm");
  for (std::int64_t l = 0; l < layers; ++l) {
    std::int64_t in = l == 0 ? hidden : 2 * hidden;
    std::array<std::vector<ir::TensorId>, 2> h;
    for (std::size_t d = 0; d < 2; ++d) {
      std::string name = at("layer", l) + (d == 0 ? ".forward" : ".backward");
      auto w = lstm_weights(b, in, hidden, name, dtype);
      LstmState state;
      {
        auto zero = b.scope(name);
        state = {b.input("h0", {batch, hidden}, dtype), b.input("c0", {batch, hidden}, dtype)};
      }
      h[d].resize(x.size());
      for (std::size_t k = 0; k < x.size(); ++k) {
        std::size_t t = d == 0 ? k : x.size() - 1 - k;
        state = lstm_cell(b, x[t], state, w, name + "." + at("step", static_cast<std::int64_t>(t)));
        h[d][t] = state.h;
      }
    }
    for (std::size_t t = 0; t < x.size(); ++t)
      x[t] = b.op("concat", {h[0][t], h[1][t]}, {{"axis", std::int64_t{1}}},
                  at("layer", l) + "." + at("both.step", static_cast<std::int64_t>(t)));
  }
  return x;
}

void build_rnn(ops::OpBuilder& b, ModelArgs const& a) {
  std::int64_t layers = a.integer("layers"), hidden = a.integer("hidden");
  std::int64_t steps = a.integer("steps"), batch = a.integer("batch");
  std::int64_t vocab = a.integer("vocab");
  bool lm = a.text("task") == "lm";
  ir::DType dtype = a.dtype();

  auto table = b.weight("embedding.weight", {vocab, hidden}, dtype);
  auto inputs = embed_steps(b, table, steps, batch, "embedding");
  if (a.text("directions") == "2") {
    auto top = bidirectional_stack(b, inputs, layers, hidden, batch, dtype);
    if (!lm) {
      classification_loss(b, linear(b, top.back(), a.integer("classes"), "classifier"));
      return;
    }
    auto decoder = shared_linear(b, 2 * hidden, vocab, "decoder", dtype);
    std::vector<ir::TensorId> logits;
    for (std::int64_t t = 0; t < steps; ++t)
      logits.push_back(apply(b, decoder, top[static_cast<std::size_t>(t)], at("decoder.step", t)));
    sequence_loss(b, logits);
    return;
  }
  auto w = stack_weights(b, layers, hidden, hidden, "lstm", dtype);
  auto states = zero_states(b, layers, batch, hidden, "lstm", dtype);
  if (lm) {
    // RNNLM: predict the next token at every step with one shared output layer.
    auto decoder = shared_linear(b, hidden, vocab, "decoder", dtype);
    std::vector<ir::TensorId> logits;
    for (std::int64_t t = 0; t < steps; ++t) {
      auto top = stack_step(b, inputs[static_cast<std::size_t>(t)], states, w, "lstm", t);
      logits.push_back(apply(b, decoder, top, at("decoder.step", t)));
    }
    sequence_loss(b, logits);
    return;
  }
  // RNNTC: classify the sequence from the last step's top hidden state.
  ir::TensorId top;
  for (std::int64_t t = 0; t < steps; ++t)
    top = stack_step(b, inputs[static_cast<std::size_t>(t)], states, w, "lstm", t);
  classification_loss(b, linear(b, top, a.integer("classes"), "classifier"));
}

// Kim et al.'s character-aware word encoder (Char-CRN's front end), its weights shared by every
// step: a character table [char_vocab, 15]; per filter width w = 1..7, min(200, 50 w) filters
// [f, 1, w, 15] with a bias; two highway layers over the 1100 pooled features.
struct CharEncoder {
  ir::TensorId table;
  std::vector<ir::TensorId> filters, biases;
  std::vector<SharedLinear> gates, transforms;  // per highway layer
};
constexpr std::int64_t char_width = 15, max_filter_width = 7, char_features = 1100;

CharEncoder char_encoder(ops::OpBuilder& b, std::int64_t char_vocab, ir::DType dtype) {
  auto s = b.scope("chars");
  CharEncoder e{b.weight("embedding.weight", {char_vocab, char_width}, dtype), {}, {}, {}, {}};
  for (std::int64_t w = 1; w <= max_filter_width; ++w) {
    std::int64_t f = std::min<std::int64_t>(200, 50 * w);
    e.filters.push_back(b.weight(at("conv", w) + ".weight", {f, 1, w, char_width}, dtype));
    e.biases.push_back(b.weight(at("conv", w) + ".bias", {f, 1, 1}, dtype));
  }
  for (std::int64_t l = 0; l < 2; ++l) {
    e.gates.push_back(
        shared_linear(b, char_features, char_features, at("highway", l) + ".gate", dtype));
    e.transforms.push_back(
        shared_linear(b, char_features, char_features, at("highway", l) + ".transform", dtype));
  }
  return e;
}

// One step's words [batch] of `chars` characters each -> [batch, 1100]: each filter width's
// narrow convolution over the characters (the kernel spans the embedding), tanh, max over
// positions; joined; then y + t (relu(W_h y + b_h) - y) with the gate t = sigmoid(W_t y + b_t).
ir::TensorId encode_words(ops::OpBuilder& b, CharEncoder const& e, std::int64_t batch,
                          std::int64_t chars, std::int64_t t) {
  auto s = b.scope(at("chars.step", t));
  auto ids = b.input("ids", {batch, chars}, ir::DType::int64);
  auto x = b.op("embedding", {e.table, ids}, {}, "lookup");
  x = b.op("reshape", {x}, {{"shape", Ints{batch, 1, chars, char_width}}}, "image");
  std::vector<ir::TensorId> pooled;
  for (std::size_t i = 0; i < e.filters.size(); ++i) {
    auto c = b.scope(at("conv", static_cast<std::int64_t>(i) + 1));
    auto y = b.op("conv2d", {x, e.filters[i]}, {}, "conv");
    y = b.op("tanh", {b.op("add", {y, e.biases[i]}, {}, "add_bias")}, {}, "tanh");
    pooled.push_back(b.op("global_max_pool", {y}, {}, "max"));
  }
  auto y = b.op("reshape", {b.op("concat", pooled, {{"axis", std::int64_t{1}}}, "features")},
                {{"shape", Ints{batch, char_features}}}, "flat");
  for (std::size_t l = 0; l < e.gates.size(); ++l) {
    auto hs = b.scope(at("highway", static_cast<std::int64_t>(l)));
    auto gate = b.op("sigmoid", {apply(b, e.gates[l], y, "gate")}, {}, "sigmoid");
    auto h = b.op("relu", {apply(b, e.transforms[l], y, "transform")}, {}, "relu");
    auto carry = b.op("mul", {gate, b.op("sub", {h, y}, {}, "sub")}, {}, "mul");
    y = b.op("add", {y, carry}, {}, "add");
  }
  return y;
}

// Char-CRN: the character-aware encoder of every step's words, a stacked LSTM over the steps and
// a word softmax at every step, as rnn's language model.
void build_crn(ops::OpBuilder& b, ModelArgs const& a) {
  std::int64_t layers = a.integer("layers"), hidden = a.integer("hidden");
  std::int64_t steps = a.integer("steps"), batch = a.integer("batch");
  std::int64_t chars = a.integer("chars");
  ir::DType dtype = a.dtype();

  auto encoder = char_encoder(b, a.integer("char_vocab"), dtype);
  auto w = stack_weights(b, layers, char_features, hidden, "lstm", dtype);
  auto states = zero_states(b, layers, batch, hidden, "lstm", dtype);
  auto decoder = shared_linear(b, hidden, a.integer("vocab"), "decoder", dtype);
  std::vector<ir::TensorId> logits;
  for (std::int64_t t = 0; t < steps; ++t) {
    auto top = stack_step(b, encode_words(b, encoder, batch, chars, t), states, w, "lstm", t);
    logits.push_back(apply(b, decoder, top, at("decoder.step", t)));
  }
  sequence_loss(b, logits);
}

// Luong's dot attention for one decoder step: scores = h . memory_s over the source steps s,
// softmax, context = the weighted sum of memory, then tanh(W_c [h; context] + b_c).
ir::TensorId attend(ops::OpBuilder& b, ir::TensorId h, ir::TensorId memory,
                    SharedLinear const& combine, std::string const& name) {
  auto s = b.scope(name);
  std::int64_t batch = b.shape_of(memory).size() == 3 ? b.shape_of(memory)[0] : 1;
  std::int64_t hidden = b.shape_of(memory).size() == 3 ? b.shape_of(memory)[2] : 1;
  auto q = b.op("reshape", {h}, {{"shape", Ints{batch, 1, hidden}}}, "query");
  auto scores =
      b.op("batch_matmul", {q, memory}, {{"transpose_b", std::int64_t{1}}}, "scores");  // [B,1,S]
  auto probs = b.op("softmax", {scores}, {{"axis", std::int64_t{-1}}}, "probs");
  auto ctx = b.op("batch_matmul", {probs, memory}, {}, "context");  // [B,1,H]
  auto flat = b.op("reshape", {ctx}, {{"shape", Ints{batch, hidden}}}, "context_flat");
  auto joined = b.op("concat", {h, flat}, {{"axis", std::int64_t{1}}}, "state_context");
  return b.op("tanh", {apply(b, combine, joined, "combine")}, {}, "attentional");
}

void build_nmt(ops::OpBuilder& b, ModelArgs const& a) {
  std::int64_t layers = a.integer("layers"), hidden = a.integer("hidden");
  std::int64_t steps = a.integer("steps"), batch = a.integer("batch");
  std::int64_t vocab = a.integer("vocab");
  ir::DType dtype = a.dtype();

  // Encoder over the source sentence; its top outputs are the attention memory [B, S, H].
  auto src_table = b.weight("encoder.embedding.weight", {vocab, hidden}, dtype);
  auto src = embed_steps(b, src_table, steps, batch, "encoder.embedding");
  auto enc_w = stack_weights(b, layers, hidden, hidden, "encoder", dtype);
  auto states = zero_states(b, layers, batch, hidden, "encoder", dtype);
  std::vector<ir::TensorId> outputs;
  for (std::int64_t t = 0; t < steps; ++t)
    outputs.push_back(stack_step(b, src[static_cast<std::size_t>(t)], states, enc_w, "encoder", t));
  auto joined = outputs.size() == 1
                    ? outputs[0]
                    : b.op("concat", outputs, {{"axis", std::int64_t{1}}}, "encoder.outputs");
  auto memory =
      b.op("reshape", {joined}, {{"shape", Ints{batch, steps, hidden}}}, "encoder.memory");

  // Decoder, started from the encoder's final states and fed the target tokens (teacher forcing).
  auto tgt_table = b.weight("decoder.embedding.weight", {vocab, hidden}, dtype);
  auto tgt = embed_steps(b, tgt_table, steps, batch, "decoder.embedding");
  auto dec_w = stack_weights(b, layers, hidden, hidden, "decoder", dtype);
  auto combine = shared_linear(b, 2 * hidden, hidden, "attention.combine", dtype);
  auto project = shared_linear(b, hidden, vocab, "decoder.output", dtype);
  std::vector<ir::TensorId> logits;
  for (std::int64_t t = 0; t < steps; ++t) {
    auto top = stack_step(b, tgt[static_cast<std::size_t>(t)], states, dec_w, "decoder", t);
    auto attentional = attend(b, top, memory, combine, at("attention.step", t));
    logits.push_back(apply(b, project, attentional, at("decoder.output.step", t)));
  }
  sequence_loss(b, logits);
}

}  // namespace

void add_rnns(ModelZoo& zoo) {
  ModelDef rnn;
  rnn.name = "rnn";
  rnn.summary = "stacked LSTM unrolled over time (Tofu's RNN-L-H; FlexFlow's RNNLM and RNNTC): "
                "embedding, LSTM layers sharing weights over steps, then a language-model "
                "softmax at every step or a classifier on the last";
  rnn.keys = {
      {"layers", KeyKind::integer, "2", "LSTM layers", 1, {}},
      {"hidden", KeyKind::integer, "1024", "hidden size (also the embedding width)", 1, {}},
      {"steps", KeyKind::integer, "20", "unrolled time steps (Tofu: 20, FlexFlow: 40)", 1, {}},
      {"batch", KeyKind::integer, "64", "sequences per step", 1, {}},
      {"vocab", KeyKind::integer, "10000", "vocabulary size (embedding rows, lm outputs)", 2, {}},
      {"task",
       KeyKind::choice,
       "lm",
       "lm: next-token loss at every step; classify: one label per sequence",
       1,
       {"lm", "classify"}},
      {"classes", KeyKind::integer, "2", "classes of task=classify (unused by lm)", 2, {}},
      {"directions",
       KeyKind::choice,
       "1",
       "1: each layer over the steps forward; 2: bidirectional (SwapAdvisor's BRNN), each layer "
       "forward and backward, the next reading both outputs concatenated",
       1,
       {"1", "2"}}};
  rnn.build = build_rnn;
  auto st = zoo.add(std::move(rnn));
  CLEAVE_ASSERT(st.is_ok(), "duplicate model");

  ModelDef nmt;
  nmt.name = "nmt";
  nmt.summary = "FlexFlow's NMT: LSTM encoder and decoder with dot-product attention over the "
                "encoder's outputs at every decoder step, and a vocabulary softmax per step";
  nmt.keys = {
      {"layers", KeyKind::integer, "2", "LSTM layers in each of encoder and decoder", 1, {}},
      {"hidden", KeyKind::integer, "1024", "hidden size (also the embedding width)", 1, {}},
      {"steps", KeyKind::integer, "40", "source and target length (FlexFlow unrolled 40)", 1, {}},
      {"batch", KeyKind::integer, "64", "sentence pairs per step", 1, {}},
      {"vocab", KeyKind::integer, "32000", "source and target vocabulary size", 2, {}}};
  nmt.build = build_nmt;
  st = zoo.add(std::move(nmt));
  CLEAVE_ASSERT(st.is_ok(), "duplicate model");

  ModelDef crn;
  crn.name = "crn";
  crn.summary = "Char-CRN (ParDNN's, after Kim et al.'s character-aware language model): each "
                "word's characters through convolutions of widths 1-7, max over positions and "
                "two highway layers, then a stacked LSTM and a word softmax at every step";
  crn.keys = {{"layers", KeyKind::integer, "2", "LSTM layers", 1, {}},
              {"hidden",
               KeyKind::integer,
               "650",
               "LSTM hidden size (Kim et al.'s large model: 650)",
               1,
               {}},
              {"steps", KeyKind::integer, "35", "unrolled time steps (Kim et al.: 35)", 1, {}},
              {"batch", KeyKind::integer, "20", "sequences per step (Kim et al.: 20)", 1, {}},
              {"chars",
               KeyKind::integer,
               "21",
               "characters per word, padded (the widest filter: 7)",
               7,
               {}},
              {"char_vocab", KeyKind::integer, "51", "characters (embedding rows)", 2, {}},
              {"vocab", KeyKind::integer, "10000", "words (softmax outputs)", 2, {}}};
  crn.build = build_crn;
  st = zoo.add(std::move(crn));
  CLEAVE_ASSERT(st.is_ok(), "duplicate model");
}

}  // namespace cleave::models
