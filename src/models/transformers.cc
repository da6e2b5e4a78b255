// gpt and bert: transformer language models written as the ops a framework records (attention is
// projections, batched matmuls, a scale, a mask and a softmax; layers.h's self_attention).
//  - gpt: GPT-2's decoder-only stack (pre-LN, causal, logits tied to the token embedding); at
//    layers=96,hidden=12288,heads=96,seq=2048 it is GPT-3 175B. ParDNN's TRN models (PAPERS.md §3)
//    are approximated with the ffn key (feed-forward width 2x the model width).
//  - bert: BERT's encoder-only stack (post-LN) with the masked-LM head, tied decoder, own bias.
// Dropout is left out (it adds no parameters; its masks would be extra inputs), as is BERT's
// pooler and next-sentence head; docs/zoo.md gives the parameter counts against the published ones.
#include <algorithm>
#include <charconv>
#include <string>
#include <vector>

#include "models/layers.h"
#include "models/model_zoo.h"
#include "support/assert.h"

namespace cleave::models {
namespace {

using Ints = std::vector<std::int64_t>;

// The divisors of n, ascending: the head counts a hidden size accepts.
std::vector<std::int64_t> divisors(std::int64_t n) {
  std::vector<std::int64_t> low, high;
  for (std::int64_t d = 1; d <= n / d; ++d) {
    if (n % d != 0) continue;
    low.push_back(d);
    if (d != n / d) high.push_back(n / d);
  }
  low.insert(low.end(), high.rbegin(), high.rend());
  return low;
}

// Heads split the hidden size evenly; anything else is reported with the values that would work.
bool check_heads(ops::OpBuilder& b, std::string const& model, std::int64_t hidden,
                 std::int64_t heads) {
  if (hidden % heads == 0) return true;
  // Listing the divisors costs sqrt(hidden) steps: list them for any realistic width.
  std::string accepted = "a divisor of hidden";
  if (hidden <= (std::int64_t{1} << 24)) {
    accepted.clear();
    for (auto d : divisors(hidden))
      accepted += (accepted.empty() ? "" : ", ") + std::to_string(d);
  }
  b.fail(
      Error(ErrorCode::invalid_argument, "model '" + model + "': heads=" + std::to_string(heads) +
                                             " does not divide hidden=" + std::to_string(hidden) +
                                             "; accepted heads for this hidden size: " + accepted));
  return false;
}

// Logits [B, S, V] against the token embedding [V, H] (tied weights), flattened to [B*S, V] for
// one cross-entropy over every position.
void tied_lm_loss(ops::OpBuilder& b, ir::TensorId x, ir::TensorId table, ir::TensorId bias,
                  std::int64_t tokens, std::int64_t vocab) {
  auto logits = b.op("linear", {x, table}, {}, "lm_logits");
  if (bias.valid()) logits = b.op("add", {logits, bias}, {}, "lm_logits_bias");
  auto flat = b.op("reshape", {logits}, {{"shape", Ints{tokens, vocab}}}, "lm_logits_flat");
  classification_loss(b, flat);
}

// The position-wise feed-forward block: linear to `inner`, gelu, linear back to H.
ir::TensorId feed_forward(ops::OpBuilder& b, ir::TensorId x, std::int64_t inner,
                          std::string const& gelu_form, std::string const& name) {
  auto s = b.scope(name);
  std::int64_t hidden = b.shape_of(x).empty() ? 1 : b.shape_of(x).back();
  auto h = linear(b, x, inner, "fc");
  h = b.op("gelu", {h}, {{"approximate", gelu_form}}, "gelu");
  return linear(b, h, hidden, "proj");
}

void build_gpt(ops::OpBuilder& b, ModelArgs const& a) {
  std::int64_t layers = a.integer("layers"), hidden = a.integer("hidden");
  std::int64_t heads = a.integer("heads"), seq = a.integer("seq");
  std::int64_t vocab = a.integer("vocab"), batch = a.integer("batch");
  ir::DType dtype = a.dtype();
  if (!check_heads(b, "gpt", hidden, heads)) return;

  // Token embedding plus a learned position embedding; the position table [seq, H] broadcasts
  // over the batch (the framework's gather of positions 0..seq-1 is the whole table).
  auto tokens = b.input("tokens", {batch, seq}, ir::DType::int64);
  auto wte = b.weight("wte.weight", {vocab, hidden}, dtype);
  auto wpe = b.weight("wpe.weight", {seq, hidden}, dtype);
  auto x = b.op("embedding", {wte, tokens}, {}, "wte.lookup");
  x = b.op("add", {x, wpe}, {}, "embed");
  // Pre-LN blocks (GPT-2): x + attn(ln(x)), then x + mlp(ln(x)); GPT-2's gelu is the tanh form.
  for (std::int64_t l = 0; l < layers; ++l) {
    auto s = b.scope("h" + std::to_string(l));
    auto attn = self_attention(b, layer_norm(b, x, "ln_1"), heads, /*causal=*/true, "attn");
    x = b.op("add", {x, attn}, {}, "attn_residual");
    auto mlp = feed_forward(b, layer_norm(b, x, "ln_2"), a.integer("ffn") * hidden, "tanh", "mlp");
    x = b.op("add", {x, mlp}, {}, "mlp_residual");
  }
  x = layer_norm(b, x, "ln_f");
  tied_lm_loss(b, x, wte, /*bias=*/{}, batch * seq, vocab);
}

void build_bert(ops::OpBuilder& b, ModelArgs const& a) {
  std::int64_t layers = a.integer("layers"), hidden = a.integer("hidden");
  std::int64_t heads = a.integer("heads"), seq = a.integer("seq");
  std::int64_t vocab = a.integer("vocab"), batch = a.integer("batch");
  ir::DType dtype = a.dtype();
  double p = a.real("dropout");
  if (!check_heads(b, "bert", hidden, heads)) return;
  if (!(p >= 0 && p < 1)) {
    b.fail(Error(ErrorCode::invalid_argument,
                 "model 'bert': dropout=" + std::to_string(p) + " must be in [0, 1)"));
    return;
  }
  // BERT's dropouts (hidden_dropout_prob, attention_probs_dropout_prob): none at p = 0.
  auto drop = [&](ir::TensorId t, std::string const& name) {
    return p > 0 ? dropout(b, t, p, name) : t;
  };

  // Word + position + segment (token type, 2 of them) embeddings, then a layer norm.
  auto tokens = b.input("tokens", {batch, seq}, ir::DType::int64);
  auto segments = b.input("segments", {batch, seq}, ir::DType::int64);
  ir::TensorId word, x;
  {
    auto s = b.scope("embeddings");
    word = b.weight("word.weight", {vocab, hidden}, dtype);
    auto position = b.weight("position.weight", {seq, hidden}, dtype);
    auto type = b.weight("token_type.weight", {2, hidden}, dtype);
    x = b.op("embedding", {word, tokens}, {}, "word.lookup");
    x = b.op("add", {x, position}, {}, "add_position");
    auto seg = b.op("embedding", {type, segments}, {}, "token_type.lookup");
    x = b.op("add", {x, seg}, {}, "add_token_type");
    x = drop(layer_norm(b, x, "ln"), "dropout");
  }
  // Post-LN blocks (BERT): ln(x + dropout(attn(x))), then ln(x + dropout(mlp(x))); no padding
  // mask (full sequences), erf gelu.
  for (std::int64_t l = 0; l < layers; ++l) {
    auto s = b.scope("layer" + std::to_string(l));
    auto attn = drop(self_attention(b, x, heads, /*causal=*/false, "attn", p), "attn_dropout");
    x = layer_norm(b, b.op("add", {x, attn}, {}, "attn_residual"), "attn_ln");
    auto mlp = drop(feed_forward(b, x, 4 * hidden, "none", "mlp"), "mlp_dropout");
    x = layer_norm(b, b.op("add", {x, mlp}, {}, "mlp_residual"), "mlp_ln");
  }
  // Masked-LM head: transform (linear, gelu, layer norm), then the decoder tied to the word
  // embedding with its own bias [vocab]. The loss covers every position (the real objective
  // covers the ~15% masked ones; the graph's shapes are the same either way up to the loss).
  ir::TensorId bias;
  {
    auto s = b.scope("mlm");
    x = linear(b, x, hidden, "transform");
    x = b.op("gelu", {x}, {{"approximate", std::string("none")}}, "gelu");
    x = layer_norm(b, x, "ln");
    bias = b.weight("bias", {vocab}, dtype);
  }
  tied_lm_loss(b, x, word, bias, batch * seq, vocab);
}

// The default number of heads: head size 64, as in GPT-2, GPT-3 small to XL and BERT, rounded
// down to a divisor of hidden (so that every hidden size has a working default).
std::string default_heads(NamedSpec const& spec, std::string text) {
  for (auto const& [key, value] : spec.args)
    if (key == "hidden") text = value;
  std::int64_t hidden = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), hidden);
  if (ec != std::errc() || end != text.data() + text.size() || hidden < 1) return "1";
  std::int64_t heads = std::max<std::int64_t>(1, hidden / 64);
  while (hidden % heads != 0)
    --heads;
  return std::to_string(heads);
}

ModelKey const heads_key{"heads",
                         KeyKind::integer,
                         "hidden/64",
                         "attention heads; must divide hidden; default: head size 64, rounded "
                         "down to a divisor of hidden",
                         1,
                         {}};

}  // namespace

void add_transformers(ModelZoo& zoo) {
  ModelDef gpt;
  gpt.name = "gpt";
  gpt.summary = "GPT-2-style decoder-only transformer (pre-LN, causal attention, logits tied to "
                "the token embedding); GPT-2 small by default, GPT-3 175B at "
                "layers=96,hidden=12288,heads=96,seq=2048";
  gpt.keys = {
      {"layers", KeyKind::integer, "12", "transformer blocks", 1, {}},
      {"hidden", KeyKind::integer, "768", "model width", 1, {}},
      heads_key,
      {"seq", KeyKind::integer, "1024", "sequence length (also the position table's rows)", 1, {}},
      {"vocab", KeyKind::integer, "50257", "vocabulary size", 2, {}},
      {"batch", KeyKind::integer, "8", "sequences per step", 1, {}},
      {"ffn",
       KeyKind::integer,
       "4",
       "feed-forward width as a multiple of hidden (GPT-2: 4)",
       1,
       {}}};
  gpt.derived_defaults["heads"] = [](NamedSpec const& s) { return default_heads(s, "768"); };
  gpt.build = build_gpt;
  auto st = zoo.add(std::move(gpt));
  CLEAVE_ASSERT(st.is_ok(), "duplicate model");

  ModelDef bert;
  bert.name = "bert";
  bert.summary = "BERT encoder-only transformer (post-LN) with the masked-LM head tied to the "
                 "word embedding; BERT-base by default, BERT-large at layers=24,hidden=1024,"
                 "heads=16";
  bert.keys = {
      {"layers", KeyKind::integer, "12", "transformer blocks", 1, {}},
      {"hidden", KeyKind::integer, "768", "model width (feed-forward: 4x)", 1, {}},
      heads_key,
      {"seq", KeyKind::integer, "512", "sequence length (also the position table's rows)", 1, {}},
      {"vocab", KeyKind::integer, "30522", "vocabulary size", 2, {}},
      {"batch", KeyKind::integer, "8", "sequences per step", 1, {}},
      {"dropout",
       KeyKind::real,
       "0",
       "dropout probability where BERT has dropout (embeddings, attention probabilities, "
       "attention and feed-forward outputs; BERT's pre-training: 0.1); 0: no dropout ops",
       1,
       {}}};
  bert.derived_defaults["heads"] = [](NamedSpec const& s) { return default_heads(s, "768"); };
  bert.build = build_bert;
  st = zoo.add(std::move(bert));
  CLEAVE_ASSERT(st.is_ok(), "duplicate model");
}

}  // namespace cleave::models
