// The expert baseline on the models it was written for: Megatron-LM's traffic per transformer
// layer by hand calculation (docs/cost_model.md), the one weird trick's split of VGG, and layer
// placement of an unrolled RNN.
#include <algorithm>
#include <gtest/gtest.h>
#include <map>
#include <regex>

#include "autodiff/precision.h"
#include "cluster/presets.h"
#include "lower/program.h"
#include "models/model_zoo.h"
#include "search/search.h"
#include "sim/predict.h"

namespace cleave::search {
namespace {

struct Case {
  std::unique_ptr<ops::OpRegistry> registry = ops::OpRegistry::with_builtins();
  ir::Graph graph;
  cluster::Cluster cluster;
  std::int64_t batch;
  Case(std::string const& model, std::string const& cluster_spec, std::int64_t batch,
       autodiff::Precision precision = autodiff::Precision::fp32)
      : graph(*autodiff::build_training_graph(
            *autodiff::apply_precision(*models::ModelZoo::with_builtins().build(model, *registry),
                                       *registry, precision),
            *registry)),
        cluster(*cluster::load_cluster(cluster_spec)), batch(batch) {}

  plan::Plan plan(std::string const& algo) {
    cost::CostModel cost(cluster);
    SearchContext ctx{graph, *registry, cost, "", "", batch, 0};
    auto p = make_plan(algo, ctx);
    EXPECT_TRUE(p.has_value()) << p.error().to_string();
    return *p;
  }
  lower::Program program(plan::Plan const& p) {
    auto prog = lower::lower(graph, p, *registry);
    EXPECT_TRUE(prog.has_value()) << prog.error().to_string();
    return std::move(*prog);
  }
  // The degrees of the op named `name`.
  std::vector<std::int64_t> degrees(plan::Plan const& p, std::string const& name) {
    for (auto const& op : graph.ops())
      if (op.name == name) return p.ops[op.id.value()].degrees;
    ADD_FAILURE() << "no op " << name;
    return {};
  }
};

// Megatron-LM with sequence parallelism, per transformer layer, N devices, an activation of
// A = batch x seq x hidden x 4 bytes: every all-gather or reduce-scatter of A moves (N-1) A over
// the cluster (each device receives (N-1)/N of A). Forward: all-gather before the attention's
// column-parallel projections and before the MLP's first linear, reduce-scatter after the
// attention output and the MLP's second linear (4). Backward: the mirror: all-gather of the
// gradient before each row-parallel linear (2), reduce-scatter of the input gradient after each
// column-parallel linear: one for the MLP, one for each of the query, key and value projections,
// which cleave's GPT keeps as three linears where Megatron fuses them (4). Besides, the six
// vectors of width hidden that are not split (two layer norms' gain and bias, the two
// row-parallel biases) are all-gathered for the batch-split ops that read them, and their
// gradients (partial sums over the batch) reduce-scattered: 12 x (N-1) x hidden x 4 bytes.
TEST(Expert, MegatronLayerTrafficMatchesTheHandCalculation) {
  std::int64_t const b = 8, s = 1024, h = 2048, n = 8;
  Case c("gpt:layers=24,hidden=2048,seq=1024,batch=8", "dgx-a100", b);
  auto program = c.program(c.plan("expert"));
  std::int64_t const activation = b * s * h * 4;
  std::int64_t const expected = 10 * (n - 1) * activation + 12 * (n - 1) * h * 4;
  // A middle layer's traffic: the transfers of tensors of layer h11 (h11.*).
  std::int64_t moved = 0;
  for (auto const& t : program.tasks)
    if (t.kind == lower::TaskKind::transfer && c.graph.tensor(t.tensor).name.rfind("h11.", 0) == 0)
      moved += t.bytes.value();
  EXPECT_EQ(moved, expected);
  EXPECT_TRUE(sim::predict(c.graph, program, cost::CostModel(c.cluster), b).fits);
}

TEST(Expert, MegatronSplitsHeadsAndMlpColumnThenRow) {
  Case c("gpt:layers=2,hidden=256,heads=8,seq=64,vocab=512,batch=4", "dgx-a100", 4);
  auto p = c.plan("expert");
  // linear's iteration space: the input's leading dims, then out features, then in features.
  EXPECT_EQ(c.degrees(p, "h0.attn.query.linear"), (std::vector<std::int64_t>{1, 1, 8, 1}));
  EXPECT_EQ(c.degrees(p, "h0.mlp.fc.linear"), (std::vector<std::int64_t>{1, 1, 8, 1}));
  EXPECT_EQ(c.degrees(p, "h0.attn.output.linear"), (std::vector<std::int64_t>{1, 1, 1, 8}));
  EXPECT_EQ(c.degrees(p, "h0.mlp.proj.linear"), (std::vector<std::int64_t>{1, 1, 1, 8}));
  // Attention runs head-parallel: scores [batch, heads, seq, seq] split on heads.
  EXPECT_EQ(c.degrees(p, "h0.attn.scores"), (std::vector<std::int64_t>{1, 8, 1, 1, 1}));
  // The residual stream and layer norms are batch split (sequence parallelism's role).
  EXPECT_EQ(c.degrees(p, "h0.ln_1.normalize")[0], 4);
  // Every piece lowers and the blocks' weights never move (only activations and the unsplit
  // vectors do); the tied embedding table, split by columns for the lookup and by rows for the
  // logits, does.
  auto program = c.program(p);
  for (auto const& t : program.tasks) {
    auto const& tensor = c.graph.tensor(t.tensor);
    if (t.kind == lower::TaskKind::transfer && tensor.role == ir::TensorRole::weight &&
        tensor.name.rfind("h0.", 0) == 0) {
      EXPECT_LE(t.bytes.value(), 256 * 4) << tensor.name;
    }
  }
}

// Under AMP a weight's half copy is what the linears read: its cast takes the reader's model split
// (as the weight does), so the blocks' half weights never move and the program has as many
// transfers as under fp32 (issue 21: before, each cast sharded its first dimension and every
// column- or row-parallel piece fetched its part from every device: 4.4 times the tasks of fp32
// for GPT-3 on 64 H100s).
TEST(Expert, AmpWeightCastsFollowTheirReadersModelSplit) {
  std::string const model = "gpt:layers=2,hidden=256,heads=8,seq=64,vocab=512,batch=8";
  Case amp(model, "dgx-a100", 8, autodiff::Precision::amp_bf16);
  Case fp32(model, "dgx-a100", 8);
  auto p = amp.plan("expert");
  // cast's iteration space is the tensor's: [out, in] for a linear's weight.
  EXPECT_EQ(amp.degrees(p, "h0.mlp.fc.weight.bf16"), (std::vector<std::int64_t>{8, 1}));
  EXPECT_EQ(amp.degrees(p, "h0.mlp.proj.weight.bf16"), (std::vector<std::int64_t>{1, 8}));
  // Per tensor (a half copy under its weight's name), the transfers of each program: the same
  // but for the causal mask, an input delivered to every device under fp32, whose cast (an
  // activation) is gathered.
  auto transfers = [](ir::Graph const& g, lower::Program const& prog) {
    std::map<std::string, int> count;
    for (auto const& t : prog.tasks) {
      std::string name = g.tensor(t.tensor).name;
      if (t.kind != lower::TaskKind::transfer || name.find("causal_mask") != std::string::npos)
        continue;
      for (std::string suffix : {".bf16", ".fp32"})
        if (name.ends_with(suffix)) name.resize(name.size() - suffix.size());
      ++count[name];
    }
    return count;
  };
  auto program = amp.program(p);
  auto reference = fp32.program(fp32.plan("expert"));
  EXPECT_EQ(transfers(amp.graph, program), transfers(fp32.graph, reference));
  // Every other task is a cast's piece or a transfer of the mask (6,928 tasks before, 6,080 now,
  // 5,360 under fp32).
  std::size_t extra = 0;
  for (auto const& t : program.tasks)
    extra += t.kind == lower::TaskKind::compute
                 ? amp.graph.op(t.op).type == "cast"
                 : amp.graph.tensor(t.tensor).name.find("causal_mask") != std::string::npos;
  EXPECT_EQ(program.tasks.size(), reference.tasks.size() + extra);
}

// Under AMP the causal mask's cast (an unbatched constant every attention piece reads whole) is
// split over no more devices than its readers have pieces: with fewer heads than devices its
// blocks lie where the head-parallel pieces are and are all-gathered among them, instead of
// each piece fetching every device's block point to point (issue 21: 9.4 M of the expert plan's
// tasks for GPT-3's 96 heads on 1,024 H100s).
TEST(Expert, CausalMaskCastSplitOverItsReadersPieces) {
  Case c("gpt:layers=2,hidden=256,heads=2,seq=64,vocab=512,batch=8", "dgx-a100", 8,
         autodiff::Precision::amp_bf16);
  auto p = c.plan("expert");
  EXPECT_EQ(c.degrees(p, "h0.attn.scores"), (std::vector<std::int64_t>{1, 2, 1, 1, 1}));
  EXPECT_EQ(c.degrees(p, "h0.attn.causal_mask.bf16"), (std::vector<std::int64_t>{2, 1}));
  auto program = c.program(p);
  int gathered = 0;
  for (auto const& t : program.tasks) {
    if (t.kind != lower::TaskKind::transfer ||
        c.graph.tensor(t.tensor).name.find("causal_mask") == std::string::npos)
      continue;
    EXPECT_NE(t.collective, lower::no_collective) << "a point-to-point fetch of the mask";
    ++gathered;
  }
  // Per layer, an all-gather between the two pieces' devices (before: each of the 2 pieces
  // fetched the 7 blocks it did not hold, 14 transfers).
  EXPECT_EQ(gathered, 2 * 2);
}

// Krizhevsky's one weird trick on VGG-16: convolutions split on the batch (data parallel), the
// classifier's linears on their features (model parallel), so the 120M classifier weights stay
// in place and the step moves far less than data parallelism's all-reduce.
TEST(Expert, OneWeirdTrickOnVgg) {
  Case c("vgg:depth=16,batch=16", "k80x8", 16);
  auto p = c.plan("expert");
  for (auto const& op : c.graph.ops()) {
    if (op.forward.valid()) continue;
    auto const& d = p.ops[op.id.value()].degrees;
    if (op.type == "conv2d") {
      EXPECT_EQ(d[0], 8) << op.name << ": convolutions split the batch";
    }
    if (op.type == "linear") {
      std::int64_t features = d[d.size() - 2] * d[d.size() - 1];
      EXPECT_EQ(d[0], 1) << op.name << ": linears keep the batch whole";
      EXPECT_EQ(features, 8) << op.name << ": linears split output or input features";
    }
  }
  auto cost = cost::CostModel(c.cluster);
  auto expert = sim::predict(c.graph, c.program(p), cost, 16);
  auto dp = sim::predict(c.graph, c.program(c.plan("data-parallel")), cost, 16);
  EXPECT_LT(expert.comm_bytes, dp.comm_bytes / 4);
}

// Layer placement: every op of LSTM layer k (forward, backward and its weights' updates) whole
// on device k mod N; only the hidden states between layers (and their gradients) move.
TEST(Expert, RnnLayersRoundRobin) {
  Case c("rnn:layers=3,hidden=64,steps=4,batch=8,vocab=100", "cpu:devices=2", 8);
  auto p = c.plan("expert");
  std::regex layer(R"(layer(\d+)\.step)");
  int checked = 0;
  for (auto const& op : c.graph.ops()) {
    auto const& config = p.ops[op.id.value()];
    for (auto degree : config.degrees)
      EXPECT_EQ(degree, 1) << op.name << ": placement does not split ops";
    ir::Op const& named = op.forward.valid() ? c.graph.op(op.forward) : op;
    std::smatch m;
    if (!std::regex_search(named.name, m, layer)) continue;
    EXPECT_EQ(config.devices[0], std::stoi(m[1].str()) % 2) << op.name;
    ++checked;
  }
  EXPECT_GT(checked, 100);
  auto program = c.program(p);
  for (auto const& t : program.tasks) {
    if (t.kind == lower::TaskKind::transfer) {
      EXPECT_NE(c.graph.tensor(t.tensor).role, ir::TensorRole::weight)
          << c.graph.tensor(t.tensor).name;
    }
  }
}

}  // namespace
}  // namespace cleave::search
