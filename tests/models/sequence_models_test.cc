// The sequence models (rnn, nmt, crn, gpt, bert, e3d): exact parameter counts against closed forms
// and the published GPT-2 / BERT counts, graph structure (weight sharing over time steps, tied
// embeddings, one op per framework op), errors that say what is accepted, and GPT-3 scale.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <gtest/gtest.h>

#include "models/model_zoo.h"
#include "models/zoo_test_util.h"

namespace cleave::models {
namespace {

using testing::parameters;

using I = std::int64_t;

I count_ops(ir::Graph const& g, std::string const& type) {
  I n = 0;
  for (auto const& op : g.ops())
    n += op.type == type;
  return n;
}

// Closed forms. An LSTM layer with input width H: W_ih and W_hh [4H, H] and one bias [4H].
I lstm_layer(I h) {
  return 8 * h * h + 4 * h;
}
// RNNLM: embedding [V, H], the layers, output linear [V, H] + [V].
I rnn_lm(I layers, I h, I v) {
  return 2 * v * h + v + layers * lstm_layer(h);
}
I rnn_classify(I layers, I h, I v, I classes) {
  return v * h + layers * lstm_layer(h) + h * classes + classes;
}
// Bidirectional: two LSTMs per layer, those above the first reading 2H wide; output from 2H.
I brnn_lm(I layers, I h, I v) {
  I first = 2 * lstm_layer(h), above = 2 * (4 * h * 2 * h + 4 * h * h + 4 * h);
  return v * h + first + (layers - 1) * above + (v * 2 * h + v);
}
// NMT: two embeddings, encoder and decoder stacks, attention combine [H, 2H] + [H], output layer.
I nmt(I layers, I h, I v) {
  return 2 * v * h + 2 * layers * lstm_layer(h) + (2 * h * h + h) + (h * v + v);
}
// A transformer block: q, k, v, o projections with biases, two layer norms, feed-forward H -> F
// -> H with biases.
I block(I h, I f) {
  return 4 * (h * h + h) + 4 * h + (h * f + f) + (f * h + h);
}
// GPT: token [V, H] and position [S, H] embeddings, the blocks, the final layer norm; the logits
// reuse the token embedding.
I gpt(I layers, I h, I s, I v, I ffn = 4) {
  return (v + s) * h + layers * block(h, ffn * h) + 2 * h;
}
// BERT: word, position and 2 token-type embeddings plus their layer norm, the blocks, and the
// masked-LM head (transform [H, H] + [H], layer norm, decoder bias [V]; decoder weight tied).
I bert_encoder(I layers, I h, I s, I v) {
  return (v + s + 2) * h + 2 * h + layers * block(h, 4 * h);
}
I bert_mlm_head(I h, I v) {
  return (h * h + h) + 2 * h + v;
}
I bert(I layers, I h, I s, I v) {
  return bert_encoder(layers, h, s, v) + bert_mlm_head(h, v);
}

class SequenceModels : public ::testing::Test {
 protected:
  ir::Graph build(std::string const& spec) {
    auto g = zoo_.build(spec, *registry_);
    EXPECT_TRUE(g.has_value()) << spec << ": " << (g ? "" : g.error().to_string());
    if (!g) throw std::runtime_error("build failed: " + spec);
    return std::move(*g);
  }
  I params(std::string const& spec) { return parameters(build(spec)); }
  std::string error_of(std::string const& spec) {
    auto g = zoo_.build(spec, *registry_);
    EXPECT_FALSE(g.has_value()) << spec << " should fail";
    return g ? std::string() : g.error().message();
  }
  I consumers(ir::Graph const& g, std::string const& tensor) {
    auto t = g.find_tensor(tensor);
    EXPECT_TRUE(t.has_value()) << "no tensor " << tensor;
    return t ? static_cast<I>(g.consumers(*t).size()) : -1;
  }

  std::unique_ptr<ops::OpRegistry> registry_ = ops::OpRegistry::with_builtins();
  ModelZoo zoo_ = ModelZoo::with_builtins();
};

TEST_F(SequenceModels, Gpt2ParameterCountsArePublishedOnes) {
  EXPECT_EQ(params("gpt"), 124'439'808);  // GPT-2 small (defaults)
  EXPECT_EQ(params("gpt:layers=24,hidden=1024,heads=16"), 354'823'168);
  EXPECT_EQ(params("gpt:layers=36,hidden=1280,heads=20"), 774'030'080);
  EXPECT_EQ(params("gpt:layers=48,hidden=1600,heads=25"), 1'557'611'200);
  EXPECT_EQ(params("gpt:layers=3,hidden=64,heads=4,seq=32,vocab=100,batch=2"), gpt(3, 64, 32, 100));
  EXPECT_EQ(params("gpt:layers=2,hidden=64,heads=4,seq=16,vocab=50,ffn=2,batch=1"),
            gpt(2, 64, 16, 50, 2));
}

TEST_F(SequenceModels, BertParameterCountsMatchTheClosedForm) {
  // Ours: BertModel without the pooler, plus the masked-LM head (= HF BertForMaskedLM).
  EXPECT_EQ(params("bert"), bert(12, 768, 512, 30522));
  EXPECT_EQ(params("bert"), 109'514'298);
  EXPECT_EQ(params("bert:layers=24,hidden=1024,heads=16"), 335'174'458);
  EXPECT_EQ(params("bert:layers=2,hidden=32,heads=2,seq=8,vocab=40,batch=2"), bert(2, 32, 8, 40));
  // HF BertModel (with the pooler [H, H] + [H], without the head): the published counts.
  EXPECT_EQ(bert_encoder(12, 768, 512, 30522) + (768 * 768 + 768), 109'482'240);
  EXPECT_EQ(bert_encoder(24, 1024, 512, 30522) + (1024 * 1024 + 1024), 335'141'888);
}

TEST_F(SequenceModels, RnnAndNmtParameterCountsMatchTheClosedForm) {
  EXPECT_EQ(params("rnn"), rnn_lm(2, 1024, 10000));
  EXPECT_EQ(params("rnn:layers=3,hidden=16,steps=4,vocab=30,batch=2"), rnn_lm(3, 16, 30));
  EXPECT_EQ(params("rnn:task=classify,layers=4,hidden=16,steps=3,vocab=30,classes=5,batch=2"),
            rnn_classify(4, 16, 30, 5));
  EXPECT_EQ(params("nmt"), nmt(2, 1024, 32000));
  EXPECT_EQ(params("nmt:layers=1,hidden=8,steps=3,vocab=20,batch=2"), nmt(1, 8, 20));
  // Tofu's RNN-10 at hidden 8K (20 steps, batch 512): the layers dominate.
  EXPECT_EQ(params("rnn:layers=10,hidden=8192,steps=20,batch=512,vocab=2"), rnn_lm(10, 8192, 2));
  EXPECT_EQ(params("rnn:layers=3,hidden=16,steps=4,vocab=30,batch=2,directions=2"),
            brnn_lm(3, 16, 30));
}

// The bidirectional stack: each layer's two LSTMs share their weights over the steps, and the
// backward one starts from the last step (its first cell reads the last step's input).
TEST_F(SequenceModels, BidirectionalRnnRunsEachLayerBothWays) {
  auto g = build("rnn:layers=2,hidden=8,steps=5,vocab=11,batch=2,directions=2");
  for (char const* w : {"lstm.layer0.forward.weight_ih", "lstm.layer0.backward.weight_ih",
                        "lstm.layer1.backward.weight_hh", "decoder.weight"})
    EXPECT_EQ(consumers(g, w), 5) << w;
  EXPECT_EQ(count_ops(g, "linear"), 2 * 2 * 2 * 5 + 5);
  EXPECT_EQ(count_ops(g, "concat"), 2 * 5 + 1);  // both directions per step, then the logits
}

// Char-CRN: a character table [C, 15]; filters of widths 1-7 (min(200, 50 w) each, 1100 in all)
// with biases; two highway layers (gate and transform, 1100 x 1100 + 1100 each); LSTM layers
// (the first reads the 1100 features); the word softmax.
I crn(I layers, I h, I chars, I v) {
  I p = chars * 15;
  for (I w = 1; w <= 7; ++w)
    p += std::min<I>(200, 50 * w) * (w * 15 + 1);
  p += 4 * (1100 * 1100 + 1100);
  p += 4 * h * (1100 + h + 1) + (layers - 1) * 4 * h * (2 * h + 1);
  return p + h * v + v;
}

TEST_F(SequenceModels, CharCrnParameterCountsMatchTheClosedFormAndParDnn) {
  EXPECT_EQ(params("crn"), crn(2, 650, 51, 10000));
  EXPECT_EQ(params("crn:layers=3,hidden=16,steps=2,batch=2,chars=9,char_vocab=20,vocab=30"),
            crn(3, 16, 20, 30));
  // ParDNN's Char-CRN (0.23B) and Char-CRN-2 (1.09B), docs/zoo.md.
  EXPECT_NEAR(static_cast<double>(params("crn:layers=8,hidden=1792")), 0.23e9, 0.01e9);
  EXPECT_NEAR(static_cast<double>(params("crn:layers=32,hidden=2048")), 1.09e9, 0.01e9);
  // Every step's encoder shares the filters: one conv weight of width 3, 4 steps reading it.
  auto g = build("crn:layers=1,hidden=8,steps=4,batch=2,chars=7,char_vocab=20,vocab=30");
  auto filter = g.find_tensor("chars.conv3.weight");
  ASSERT_TRUE(filter.has_value());
  EXPECT_EQ(g.consumers(*filter).size(), 4u);
}

// E3D-LSTM: per layer (input width `in`, hidden c, kernel 2x5x5 = 50 taps, a frame volume of
// `volume` positions): convolutions of X to 7c, of H and M to 4c each, of C' and M' to c each,
// with biases, the 1x1x1 one of [C', M'] to c, and four whole-sample norms (7c, 4c, 4c and c
// channels' gains and shifts); the prediction, c to the frame's channels over 2 frames in depth.
I e3d_layer(I in, I c, I volume) {
  return 50 * 7 * c * in + 7 * c + 2 * (50 * 4 * c * c + 4 * c) + 2 * (50 * c * c + c) +
         (2 * c * c + c) + 2 * 16 * c * volume;
}
I e3d(I layers, I c, I channels, I size) {
  I volume = 2 * size * size;
  return e3d_layer(channels, c, volume) + (layers - 1) * e3d_layer(c, c, volume) +
         (2 * c * channels + channels);
}

TEST_F(SequenceModels, E3dParameterCountsMatchTheClosedFormAndParDnn) {
  EXPECT_EQ(params("e3d"), e3d(3, 64, 16, 16));
  EXPECT_EQ(params("e3d:layers=2,hidden=8,steps=3,batch=2,size=6,channels=4"), e3d(2, 8, 4, 6));
  // ParDNN's E3D (0.95B) and E3D-2 (2.4B), docs/zoo.md: 938,673,936 and 2,369,312,784.
  EXPECT_EQ(params("e3d:hidden=640"), 938'673'936);
  EXPECT_NEAR(static_cast<double>(params("e3d:hidden=640")), 0.95e9, 0.015e9);
  EXPECT_NEAR(static_cast<double>(params("e3d:hidden=1024")), 2.4e9, 0.04e9);
  // Every step shares a layer's weights: conv_x's weight read by each of 3 steps; one conv3d per
  // gate group and output per layer and step, and the prediction per step.
  auto g = build("e3d:layers=2,hidden=8,steps=3,batch=2,size=6");
  auto w = g.find_tensor("layer1.conv_x.weight");
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(g.consumers(*w).size(), 3u);
  EXPECT_EQ(count_ops(g, "conv3d"), 2 * 3 * 6 + 3);
  // The eidetic memory grows: step 2 attends over three steps' cells (3 x 2 frames in depth).
  auto history = g.find_tensor("layer0.step2.history");
  ASSERT_TRUE(history.has_value());
  EXPECT_EQ(g.tensor(*history).type.shape, (ir::Shape{2, 8, 8, 6, 6}));
}

TEST_F(SequenceModels, TinyInstancesEndInAScalarLoss) {
  for (char const* spec :
       {"rnn:layers=2,hidden=8,steps=3,vocab=11,batch=2",
        "rnn:task=classify,layers=2,hidden=8,steps=3,vocab=11,batch=2",
        "rnn:layers=1,hidden=4,steps=1,vocab=2,batch=1",
        "rnn:layers=2,hidden=8,steps=3,vocab=11,batch=2,directions=2",
        "rnn:task=classify,layers=2,hidden=4,steps=2,vocab=5,batch=2,directions=2",
        "nmt:layers=2,hidden=8,steps=3,vocab=11,batch=2",
        "nmt:layers=1,hidden=4,steps=1,vocab=2,batch=1",
        "crn:layers=2,hidden=8,steps=3,batch=2,chars=8,vocab=11",
        "e3d:layers=2,hidden=4,steps=1,batch=1,size=3",
        "gpt:layers=2,hidden=16,heads=2,seq=4,vocab=11,batch=2",
        "bert:layers=2,hidden=16,heads=2,seq=4,vocab=11,batch=2,dtype=bf16"}) {
    auto g = build(spec);
    auto loss = g.find_tensor("loss");
    ASSERT_TRUE(loss.has_value()) << spec;
    EXPECT_TRUE(g.tensor(*loss).type.shape.empty()) << spec;
    EXPECT_EQ(g.consumers(*loss).size(), 0u) << spec;
  }
}

TEST_F(SequenceModels, RnnSharesWeightsOverTimeSteps) {
  auto g = build("rnn:layers=2,hidden=8,steps=5,vocab=11,batch=2");
  for (char const* w : {"lstm.layer0.weight_ih", "lstm.layer0.weight_hh", "lstm.layer0.bias",
                        "lstm.layer1.weight_ih", "embedding.weight", "decoder.weight"})
    EXPECT_EQ(consumers(g, w), 5) << w;
  // Fine-grained: two matmuls per cell, one output linear per step, one concat of the logits.
  EXPECT_EQ(count_ops(g, "linear"), 2 * 2 * 5 + 5);
  EXPECT_EQ(count_ops(g, "sigmoid"), 3 * 2 * 5);
  EXPECT_EQ(count_ops(g, "concat"), 1);
  auto labels = g.find_tensor("labels");
  ASSERT_TRUE(labels.has_value());
  EXPECT_EQ(g.tensor(*labels).type.shape, (ir::Shape{5 * 2}));

  auto c = build("rnn:task=classify,layers=2,hidden=8,steps=5,vocab=11,classes=3,batch=2");
  EXPECT_EQ(consumers(c, "lstm.layer1.weight_hh"), 5);
  EXPECT_EQ(count_ops(c, "linear"), 2 * 2 * 5 + 1);
}

TEST_F(SequenceModels, NmtAttendsOverTheEncoderAtEveryDecoderStep) {
  auto g = build("nmt:layers=2,hidden=8,steps=4,vocab=11,batch=2");
  EXPECT_EQ(count_ops(g, "softmax"), 4);
  EXPECT_EQ(count_ops(g, "batch_matmul"), 2 * 4);
  EXPECT_EQ(consumers(g, "encoder.memory"), 2 * 4);
  EXPECT_EQ(consumers(g, "attention.combine.weight"), 4);
  EXPECT_EQ(consumers(g, "decoder.layer1.weight_ih"), 4);
  EXPECT_EQ(consumers(g, "encoder.layer0.weight_hh"), 4);
  // The decoder starts from the encoder's final states: no zero state inputs of its own.
  EXPECT_FALSE(g.find_tensor("decoder.layer0.h0").has_value());
}

TEST_F(SequenceModels, TransformersTieTheLogitsToTheTokenEmbedding) {
  auto g = build("gpt:layers=2,hidden=16,heads=2,seq=4,vocab=11,batch=2");
  EXPECT_EQ(consumers(g, "wte.weight"), 2);  // lookup and logits
  EXPECT_EQ(count_ops(g, "softmax"), 2);
  EXPECT_TRUE(g.find_tensor("h1.attn.causal_mask").has_value());
  auto labels = g.find_tensor("labels");
  ASSERT_TRUE(labels.has_value());
  EXPECT_EQ(g.tensor(*labels).type.shape, (ir::Shape{2 * 4}));

  auto bert_g = build("bert:layers=2,hidden=16,heads=2,seq=4,vocab=11,batch=2");
  EXPECT_EQ(consumers(bert_g, "embeddings.word.weight"), 2);
  EXPECT_FALSE(bert_g.find_tensor("layer0.attn.causal_mask").has_value());
  EXPECT_EQ(count_ops(bert_g, "layer_norm"), 1 + 2 * 2 + 1);
}

// BERT's pre-training dropouts (embeddings, attention probabilities, attention and feed-forward
// outputs), each a dropout op with its mask input; none at the default 0.
TEST_F(SequenceModels, BertDropoutWhereBertHasIt) {
  auto plain = build("bert:layers=2,hidden=16,heads=2,seq=4,vocab=11,batch=2");
  EXPECT_EQ(count_ops(plain, "dropout"), 0);
  auto g = build("bert:layers=2,hidden=16,heads=2,seq=4,vocab=11,batch=2,dropout=0.1");
  EXPECT_EQ(count_ops(g, "dropout"), 1 + 3 * 2);
  auto mask = g.find_tensor("layer1.attn.probs_dropout.mask");
  ASSERT_TRUE(mask.has_value());
  EXPECT_EQ(g.tensor(*mask).type.shape, (ir::Shape{2, 2, 4, 4}));  // [batch, heads, seq, seq]
  EXPECT_EQ(parameters(g), parameters(plain));
}

TEST_F(SequenceModels, BadValuesSayWhatIsAccepted) {
  struct Bad {
    char const* spec;
    char const* message;
  } cases[] = {
      {"gpt:heads=5", "heads=5 does not divide hidden=768; accepted heads for this hidden size: "
                      "1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 768"},
      {"bert:hidden=100,heads=3", "heads=3 does not divide hidden=100; accepted heads for this "
                                  "hidden size: 1, 2, 4, 5, 10, 20, 25, 50, 100"},
      {"gpt:hidden=8,heads=16", "heads=16 does not divide hidden=8"},
      {"rnn:task=translate", "task=translate is not accepted"},
      {"rnn:task=translate", "one of lm classify"},
      {"rnn:hidden=-1", "hidden=-1 is below the smallest accepted value 1"},
      {"nmt:steps=0", "steps=0 is below the smallest accepted value 1"},
      {"gpt:layers=-2", "layers=-2 is below the smallest accepted value 1"},
      {"bert:vocab=1", "vocab=1 is below the smallest accepted value 2"},
      {"bert:dropout=1", "dropout=1.000000 must be in [0, 1)"},
      {"bert:dropout=x", "dropout=x is not a number"},
      {"rnn:classes=1", "classes=1 is below the smallest accepted value 2"},
      {"nmt:heads=4", "model 'nmt' has no key 'heads'; accepted keys:"},
      {"crn:chars=5", "chars=5 is below the smallest accepted value 7"},
  };
  for (auto const& c : cases) {
    std::string message = error_of(c.spec);
    EXPECT_NE(message.find(c.message), std::string::npos) << c.spec << "\n" << message;
  }
}

TEST_F(SequenceModels, Gpt3ScaleBuildsInSeconds) {
  auto start = std::chrono::steady_clock::now();
  auto g = build("gpt:layers=96,hidden=12288,heads=96,seq=2048");
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  I n = parameters(g);
  EXPECT_EQ(n, gpt(96, 12288, 2048, 50257));
  EXPECT_EQ(n, 174'604'259'328);
  EXPECT_GT(n, 170'000'000'000);
  EXPECT_LT(n, 180'000'000'000);
  EXPECT_LT(seconds, 10.0);
  std::printf("gpt-3 175B: %zu forward ops, %lld parameters, built in %.2f s\n", g.num_ops(),
              static_cast<long long>(n), seconds);
}

// The defaults' counts as docs/zoo.md ("Op and parameter counts at defaults") gives them: the op
// counts guard the structure; the parameter counts are the published ones where docs/zoo.md cites
// one: GPT-2 small's 124,439,808 exactly, BERT-base's "110M" of the paper within its rounding
// (ours is the HF BertModel plus the MLM head's bias, minus the pooler).
TEST_F(SequenceModels, DefaultsOpAndParameterCounts) {
  struct Counts {
    char const* spec;
    std::size_t forward_ops;
    I parameters;
  };
  for (auto const& e :
       {Counts{"rnn", 742, 37'275'408}, Counts{"rnn:task=classify", 703, 27'027'458},
        Counts{"nmt", 3'244, 134'004'992}, Counts{"gpt", 366, 124'439'808},
        Counts{"bert", 361, 109'514'298}}) {
    auto g = build(e.spec);
    EXPECT_EQ(g.num_ops(), e.forward_ops) << e.spec;
    EXPECT_EQ(parameters(g), e.parameters) << e.spec;
  }
  I const bert = params("bert");
  EXPECT_GE(bert, 105'000'000);  // BERT-base: "110M", rounded to 10M
  EXPECT_LT(bert, 115'000'000);
}

}  // namespace
}  // namespace cleave::models
