// The GPU compute model (cost/gpu_compute.h): tiles and waves, TF32, operand alignment, the fused
// parts of batch norm and of element-wise chains (which no profile entry prices), and that CPU
// cores keep the plain roofline.
#include <algorithm>
#include <gtest/gtest.h>

#include "autodiff/training_graph.h"
#include "cluster/presets.h"
#include "cost/cost_model.h"
#include "cost/gpu_compute.h"
#include "models/model_zoo.h"
#include "tdl/piece.h"

namespace cleave::cost {
namespace {

TEST(GpuCompute, WavesOfTilesQuantiseTheEfficiency) {
  std::int64_t const tile = 128 * 128;
  EXPECT_DOUBLE_EQ(wave_efficiency(108 * tile, 4096, 108), 1.0);            // one full wave
  EXPECT_NEAR(wave_efficiency(109 * tile, 4096, 108), 109.0 / 216, 1e-12);  // a 1-tile wave
  EXPECT_NEAR(wave_efficiency(27 * tile, 128, 108), 0.25, 1e-12);  // a short reduction: no split
  // A weight gradient: 4 tiles summed over a long reduction are split among the SMs (split-K).
  EXPECT_NEAR(wave_efficiency(4 * tile, 1e6, 108), 108.0 / 108, 1e-12);
  EXPECT_DOUBLE_EQ(wave_efficiency(0, 1e6, 108), 1.0);  // output unknown
}

TEST(GpuCompute, ParametersPerKindWithSources) {
  for (auto kind : {"K80-GK210-12GB", "P100-SXM2-16GB", "V100-SXM2-16GB", "V100-SXM3-32GB",
                    "A100-SXM4-80GB", "A100-SXM4-40GB", "H100-SXM5-80GB"}) {
    auto const* g = gpu_compute(kind);
    ASSERT_NE(g, nullptr) << kind;
    EXPECT_GT(g->sms, 0);
    EXPECT_FALSE(g->source.empty());
    for (double e : {g->gemm_efficiency, g->conv_efficiency, g->memory_efficiency})
      EXPECT_TRUE(e > 0 && e <= 1) << kind;
  }
  EXPECT_EQ(gpu_compute("cpu-core"), nullptr);
  EXPECT_GT(gpu_compute("A100-SXM4-80GB")->tf32_peak, 0);
  EXPECT_EQ(gpu_compute("V100-SXM2-16GB")->tf32_peak, 0);
}

// A large fp32 matmul on an A100 runs at the TF32 rate, not the 19.5 TFLOP/s fp32 one. Its
// output is four full waves of tiles (13824 x 512 = 432 tiles on 108 SMs).
TEST(GpuCompute, Fp32MatmulsUseTf32WhereTheGpuHasIt) {
  auto cluster = cluster::load_cluster("dgx-a100");
  ASSERT_TRUE(cluster.has_value());
  CostModel model(*cluster);
  std::int64_t const m = 13824, n = 512, k = 8192;
  tdl::Box box{{0, m}, {0, n}, {0, k}};
  double flops = 2.0 * m * n * k;
  ComputeRequest r{"matmul",
                   nullptr,
                   ir::DType::fp32,
                   box,
                   Flops(2 * m * n * k),
                   Bytes(4 * (m * k + k * n + m * n)),
                   cluster::DeviceId(0)};
  r.output_elements = m * n;
  auto const* a100 = gpu_compute("A100-SXM4-80GB");
  double tf32 = flops / (a100->tf32_peak * a100->gemm_efficiency) + a100->launch_s;
  EXPECT_NEAR(model.compute(r).time.value(), tf32, 1e-12);
  r.dtype = ir::DType::bf16;  // half: the dense tensor-core peak
  double bf16 = flops / (312e12 * a100->gemm_efficiency) + a100->launch_s;
  EXPECT_NEAR(model.compute(r).time.value(), bf16, 1e-12);
  // One tile more than four waves costs a fifth wave.
  r.output_elements = m * n + 1;
  EXPECT_NEAR(model.compute(r).time.value() - a100->launch_s,
              (bf16 - a100->launch_s) * 5 * 108 / 433.0, 1e-12);
}

TEST(GpuCompute, CpuCoresKeepThePlainRoofline) {
  auto cluster = cluster::load_cluster("cpu:devices=1");
  ASSERT_TRUE(cluster.has_value());
  CostModel model(*cluster);
  auto const& dev = cluster->devices()[0];
  tdl::Box box{{0, 64}};
  ComputeRequest r{"matmul",
                   nullptr,
                   ir::DType::fp32,
                   box,
                   Flops(1'000'000'000),
                   Bytes(1000),
                   cluster::DeviceId(0)};
  r.output_elements = 64;
  CostOptions o;
  double expect = 1e9 / (dev.peak_for(ir::DType::fp32)->value() * o.efficiency.at("matmul"));
  expect = std::max(expect, 1000 / (dev.memory_bandwidth.value() * o.memory_efficiency));
  EXPECT_NEAR(model.compute(r).time.value(), expect + o.launch.value(), 1e-15);
}

// cuDNN's batch norm: of the eleven ops cleave writes, four run as kernels; the accumulation of
// the input gradient's three parts is fused too. A relu between two element-wise ops moves less.
TEST(GpuCompute, FusedPartsOfBatchNormAndElementWiseChains) {
  auto registry = ops::OpRegistry::with_builtins();
  auto fwd = models::ModelZoo::with_builtins().build("resnet:depth=18,batch=2,image=32", *registry);
  ASSERT_TRUE(fwd.has_value());
  auto g = autodiff::build_training_graph(*fwd, *registry);
  ASSERT_TRUE(g.has_value());
  int fused = 0, kept = 0;
  for (auto const& op : g->ops()) {
    if (!op.type.starts_with("bn_")) continue;
    (fused_on_gpu(*g, op.id) ? fused : kept)++;
  }
  EXPECT_GT(fused, 0);
  EXPECT_EQ(kept % 4, 0);  // bn_mean, bn_apply, bn_apply_grad_gamma, bn_apply_grad_input per norm
  int accumulations = 0;
  for (auto const& op : g->ops())
    if (op.type == "add" && fused_on_gpu(*g, op.id)) ++accumulations;
  EXPECT_GT(accumulations, 0);
  // A residual add read only by a relu: the add's write and the relu's read stay in registers.
  bool seen = false;
  for (auto const& op : g->ops()) {
    if (op.type != "relu") continue;
    auto p = g->producer(op.inputs[0]);
    if (!p.valid() || g->op(p).type != "add" || g->consumers(op.inputs[0]).size() != 1) continue;
    EXPECT_FALSE(element_wise_fusion(*g, p).launches);
    EXPECT_LT(element_wise_fusion(*g, op.id).bytes_fraction, 1.0);
    seen = true;
  }
  EXPECT_TRUE(seen);
  EXPECT_DOUBLE_EQ(element_wise_fusion(*g, g->producer(*g->find_tensor("loss"))).bytes_fraction,
                   1.0);  // not element-wise
}

// The logits of a language model whose vocabulary is not a multiple of 8 (GPT-2's 50257, BERT's
// 30522) have rows of an odd number of 16-byte vectors' worth of elements: tensor-core GEMMs run
// cuBLAS's narrow-load kernels, CUDA cores' do not care.
TEST(GpuCompute, UnalignedRowsCostTensorCoreGemmsTheirLoadWidth) {
  auto registry = ops::OpRegistry::with_builtins();
  auto logits = [&](std::int64_t vocab, char const* dtype) {
    auto g = models::ModelZoo::with_builtins().build(
        "gpt:layers=1,hidden=64,heads=2,seq=8,batch=2,vocab=" + std::to_string(vocab) +
            ",dtype=" + dtype,
        *registry);
    EXPECT_TRUE(g.has_value());
    for (auto const& op : g->ops())
      if (op.type == "linear" && g->tensor(op.outputs[0]).type.shape.back() == vocab)
        return std::pair{std::move(*g), op.id};
    ADD_FAILURE() << "no logits";
    return std::pair{std::move(*g), ir::OpId{}};
  };
  auto [bf16, bf16_op] = logits(50257, "bf16");
  EXPECT_DOUBLE_EQ(alignment_efficiency(bf16, bf16_op), 2.0 / 16);  // align1: 2-byte loads
  auto [fp32, fp32_op] = logits(50257, "fp32");
  EXPECT_DOUBLE_EQ(alignment_efficiency(fp32, fp32_op), 4.0 / 16);
  auto [bert, bert_op] = logits(30522, "bf16");
  EXPECT_DOUBLE_EQ(alignment_efficiency(bert, bert_op), 4.0 / 16);
  auto [padded, padded_op] = logits(50304, "bf16");  // nanoGPT's padding to a multiple of 64
  EXPECT_DOUBLE_EQ(alignment_efficiency(padded, padded_op), 1.0);

  // Priced: a compute-bound piece of the bf16 logits takes 8x its aligned time on an H100; an
  // fp32 one on a V100's CUDA cores takes its aligned time.
  auto time = [&](char const* cluster_spec, ir::Graph const& g, ir::OpId op, ir::DType dtype,
                  bool with_graph) {
    auto cluster = cluster::load_cluster(cluster_spec);
    EXPECT_TRUE(cluster.has_value());
    CostModel model(*cluster);
    tdl::Box box{{0, 4096}};
    ComputeRequest r{"linear",
                     nullptr,
                     dtype,
                     box,
                     Flops(std::int64_t{1} << 40),
                     Bytes(1024),
                     cluster::DeviceId(0)};
    if (with_graph) {
      r.graph = &g;
      r.op = op;
    }
    return model.compute(r).time.value() - gpu_compute(cluster->devices()[0].kind)->launch_s;
  };
  EXPECT_NEAR(time("h100-2x8:nodes=1", bf16, bf16_op, ir::DType::bf16, true),
              8 * time("h100-2x8:nodes=1", bf16, bf16_op, ir::DType::bf16, false), 1e-9);
  EXPECT_NEAR(time("v100x1", fp32, fp32_op, ir::DType::fp32, true),
              time("v100x1", fp32, fp32_op, ir::DType::fp32, false), 1e-12);
}

// A profile times each piece as a kernel of its own (bench/gpu_pieces_torch.py); an op that the
// GPU model runs inside another's kernel launches none, so its entry must not price it.
TEST(GpuCompute, AFusedOpIgnoresItsProfileEntry) {
  auto registry = ops::OpRegistry::with_builtins();
  auto fwd = models::ModelZoo::with_builtins().build("resnet:depth=18,batch=2,image=32", *registry);
  ASSERT_TRUE(fwd.has_value());
  auto g = autodiff::build_training_graph(*fwd, *registry);
  ASSERT_TRUE(g.has_value());
  auto cluster = cluster::load_cluster("dgx-a100");
  ASSERT_TRUE(cluster.has_value());
  auto const& kind = cluster->devices()[0].kind;
  // A fused bn_var and a kept bn_mean, each with an entry of one second.
  for (std::string type : {"bn_var", "bn_mean"}) {
    auto const* op = &*std::find_if(g->ops().begin(), g->ops().end(),
                                    [&](ir::Op const& o) { return o.type == type; });
    auto bound = registry->bind(*g, op->id);
    ASSERT_TRUE(bound.has_value());
    auto box = tdl::full_box(**bound);
    std::vector<std::int64_t> extents;
    for (auto const& i : box)
      extents.push_back(i.size());
    auto dtype = g->tensor(op->outputs[0]).type.dtype;
    ProfileTable t;
    ASSERT_TRUE(
        t.add({{type, op->attrs.to_string(), extents, dtype, kind}, {Seconds(1), 1}}).is_ok());
    CostModel profiled(*cluster, {}, t);
    ComputeRequest r{type,        &op->attrs,           dtype, box,   Flops(1000),
                     Bytes(1000), cluster::DeviceId(0), &*g,   op->id};
    bool fused = fused_on_gpu(*g, op->id);
    EXPECT_EQ(fused, type == "bn_var");
    EXPECT_EQ(profiled.compute(r).measured, !fused) << type;
    EXPECT_EQ(profiled.compute(r).time, fused ? Seconds(0) : Seconds(1)) << type;
    // Priced alone (as a timing script runs it, --list-pieces), a fused op is a kernel too.
    ComputeRequest alone = r;
    alone.alone = true;
    EXPECT_GT(CostModel(*cluster).compute(alone).time.value(), 0) << type;
  }
}

}  // namespace
}  // namespace cleave::cost
