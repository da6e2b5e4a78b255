// The lowering's core guarantee, on training graphs of small models and random plans (random
// splits of splittable dimensions, random devices): the pieces of every op cover its iteration
// space exactly once, every task finds the data it reads on its device (delivered by transfers and
// reductions), and running the program with the reference interpreter computes exactly what the
// graph computes whole.
#include <gtest/gtest.h>
#include <random>

#include "autodiff/training_graph.h"
#include "cluster/presets.h"
#include "ir/graph_json.h"
#include "lower/reference_run.h"
#include "models/layers.h"
#include "models/model_zoo.h"
#include "ops/reference_executor.h"
#include "search/search.h"

namespace cleave::lower {
namespace {

using Sources = std::map<std::string, tdl::TensorData, std::less<>>;
using Rng = std::mt19937_64;

Sources random_sources(ir::Graph const& g, Rng& rng) {
  Sources s;
  for (auto const& t : g.tensors()) {
    if (g.producer(t.id).valid()) continue;
    std::vector<double> v(static_cast<std::size_t>(ir::num_elements(t.type.shape)));
    for (auto& x : v)
      x = ir::is_floating(t.type.dtype) ? std::uniform_real_distribution<double>(-1, 1)(rng)
                                        : static_cast<double>(rng() % 2);
    s.emplace(t.name, tdl::TensorData::whole(t.type.shape, std::move(v)));
  }
  return s;
}

plan::Plan random_plan(ir::Graph const& g, ops::OpRegistry const& r, int devices, Rng& rng) {
  plan::Plan p = plan::single_device_plan(g, r);
  p.num_devices = devices;
  p.provenance.algorithm = "random";
  for (auto const& op : g.ops()) {
    auto bound = *r.bind(g, op.id);
    auto& c = p.ops[op.id.value()];
    std::int64_t pieces = 1;
    for (std::size_t d = 0; d < bound->dims().size(); ++d) {
      auto const& dim = bound->dims()[d];
      if (!dim.splittable || rng() % 2) continue;
      std::int64_t k = 2 + static_cast<std::int64_t>(rng() % 2);
      if (k > dim.extent || pieces * k > 6) continue;
      c.degrees[d] = k;
      pieces *= k;
    }
    c.devices.resize(static_cast<std::size_t>(pieces));
    for (auto& dev : c.devices)
      dev = static_cast<int>(rng() % static_cast<unsigned>(devices));
  }
  return p;
}

ir::Graph tiny_cnn(ops::OpRegistry const& r) {
  ops::OpBuilder b(r);
  auto x = b.input("images", {4, 2, 5, 5});
  models::Conv c;
  c.out_channels = 4;
  c.kernel_h = c.kernel_w = 3;
  c.pad_h = c.pad_w = 1;
  c.stride_h = c.stride_w = 2;
  c.groups = 2;
  auto y = models::conv2d(b, x, c, "conv");
  y = models::batch_norm(b, y, "bn");
  y = b.op("relu", {y}, {}, "relu");
  y = models::max_pool(b, y, 2, 1, 0, "pool");
  y = models::flatten(b, y, "flat");
  models::classification_loss(b, models::linear(b, y, 3, "fc"));
  return *b.finish();
}

ir::Graph tiny_attention(ops::OpRegistry const& r) {
  ops::OpBuilder b(r);
  auto tokens = b.input("tokens", {2, 4}, ir::DType::int64);
  auto emb = b.weight("emb", {5, 4});
  auto x = b.op("embedding", {emb, tokens}, {}, "embed");
  auto a = models::self_attention(b, models::layer_norm(b, x, "ln"), 2, /*causal=*/true, "attn");
  x = b.op("add", {x, a}, {}, "res");
  auto flat = b.op("reshape", {x}, {{"shape", std::vector<std::int64_t>{8, 4}}}, "flat");
  models::classification_loss(b, models::linear(b, flat, 3, "head"));
  return *b.finish();
}

void check_program(ir::Graph const& g, Program const& program, ops::OpRegistry const& r) {
  // Pieces of each op: disjoint, covering the space.
  std::map<std::uint32_t, std::vector<tdl::Box>> pieces;
  for (auto const& t : program.tasks)
    if (t.kind == TaskKind::compute) pieces[t.op.value()].push_back(t.iteration);
  for (auto const& op : g.ops()) {
    auto bound = *r.bind(g, op.id);
    auto const& boxes = pieces[op.id.value()];
    std::int64_t total = 0;
    for (std::size_t a = 0; a < boxes.size(); ++a) {
      total += tdl::box_volume(boxes[a]);
      for (std::size_t b = a + 1; b < boxes.size(); ++b) {
        bool overlap = true;
        for (std::size_t d = 0; d < boxes[a].size(); ++d)
          overlap = overlap && std::max(boxes[a][d].lo, boxes[b][d].lo) <
                                   std::min(boxes[a][d].hi, boxes[b][d].hi);
        EXPECT_FALSE(overlap) << op.name;
      }
    }
    EXPECT_EQ(total, tdl::box_volume(tdl::full_box(*bound))) << op.name;
  }
  for (TaskId id = 0; id < program.tasks.size(); ++id)
    for (TaskId dep : program.tasks[id].deps)
      EXPECT_LT(dep, id);
}

class Lowering : public ::testing::TestWithParam<std::string> {};

TEST_P(Lowering, RandomPlansComputeWhatTheGraphComputes) {
  auto registry = ops::OpRegistry::with_builtins();
  ir::Graph forward = GetParam() == "cnn" ? tiny_cnn(*registry)
                      : GetParam() == "attention"
                          ? tiny_attention(*registry)
                          : *models::ModelZoo::with_builtins().build(
                                "mlp:layers=2,hidden=6,input=5,classes=3,batch=4", *registry);
  auto g = autodiff::build_training_graph(forward, *registry);
  ASSERT_TRUE(g.has_value()) << g.error().to_string();
  Rng rng(std::hash<std::string>{}(GetParam()));
  Sources sources = random_sources(*g, rng);
  auto whole = ops::evaluate_graph(*g, *registry, sources);
  ASSERT_TRUE(whole.has_value()) << whole.error().to_string();
  int transfers = 0, reduces = 0;
  for (int trial = 0; trial < 40; ++trial) {
    int devices = 1 + trial % 4;
    plan::Plan p = random_plan(*g, *registry, devices, rng);
    auto program = lower(*g, p, *registry);
    ASSERT_TRUE(program.has_value()) << program.error().to_string();
    check_program(*g, *program, *registry);
    for (auto const& t : program->tasks) {
      transfers += t.kind == TaskKind::transfer;
      reduces += t.kind == TaskKind::reduce;
    }
    auto run = run_reference(*g, *program, *registry, sources);
    ASSERT_TRUE(run.has_value()) << "trial " << trial << ": " << run.error().to_string();
    for (auto const& t : g->tensors()) {
      if (!g->producer(t.id).valid()) continue;
      auto const& want = (*whole)[t.id.value()].values;
      auto const& got = (*run)[t.id.value()].values;
      ASSERT_EQ(want.size(), got.size()) << t.name;
      for (std::size_t i = 0; i < want.size(); ++i)
        ASSERT_NEAR(got[i], want[i], 1e-9 * std::max(1.0, std::abs(want[i])))
            << t.name << "[" << i << "] trial " << trial << " devices " << devices;
    }
  }
  EXPECT_GT(transfers, 0);
  EXPECT_GT(reduces, 0);
}

TEST(Lowering, BaselinePlansComputeWhatTheGraphComputes) {
  auto registry = ops::OpRegistry::with_builtins();
  auto g = *autodiff::build_training_graph(tiny_attention(*registry), *registry);
  Rng rng(5);
  Sources sources = random_sources(g, rng);
  auto whole = ops::evaluate_graph(g, *registry, sources);
  ASSERT_TRUE(whole.has_value());
  auto cluster = *cluster::load_cluster("cpu:devices=3");
  for (char const* algo : {"single", "data-parallel", "expert"}) {
    search::SearchContext ctx{g, *registry, cluster, "cpu:devices=3", "", 2, 0};
    auto p = search::make_plan(algo, ctx);
    ASSERT_TRUE(p.has_value()) << p.error().to_string();
    auto program = lower(g, *p, *registry);
    ASSERT_TRUE(program.has_value()) << algo << ": " << program.error().to_string();
    auto run = run_reference(g, *program, *registry, sources);
    ASSERT_TRUE(run.has_value()) << algo << ": " << run.error().to_string();
    for (auto const& t : g.tensors()) {
      if (!g.producer(t.id).valid()) continue;
      auto const& want = (*whole)[t.id.value()].values;
      auto const& got = (*run)[t.id.value()].values;
      for (std::size_t i = 0; i < want.size(); ++i)
        ASSERT_NEAR(got[i], want[i], 1e-9 * std::max(1.0, std::abs(want[i])))
            << algo << " " << t.name;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, Lowering, ::testing::Values("mlp", "cnn", "attention"));

TEST(LoweringErrors, PlansThatDoNotFit) {
  auto registry = ops::OpRegistry::with_builtins();
  auto g = *autodiff::build_training_graph(
      *models::ModelZoo::with_builtins().build("mlp:layers=1,hidden=4,input=3,classes=2,batch=2",
                                               *registry),
      *registry);
  auto other = *models::ModelZoo::with_builtins().build(
      "mlp:layers=1,hidden=5,input=3,classes=2,batch=2", *registry);
  plan::Plan p = plan::single_device_plan(other, *registry);
  auto wrong_graph = lower(g, p, *registry);
  ASSERT_FALSE(wrong_graph.has_value());
  EXPECT_NE(wrong_graph.error().message().find("the plan was made for graph"), std::string::npos);

  plan::Plan ok = plan::single_device_plan(g, *registry);
  // A dimension that must not be split (e.g. softmax's axis inside the loss gradient).
  bool found = false;
  for (auto const& op : g.ops()) {
    auto bound = *registry->bind(g, op.id);
    for (std::size_t d = 0; d < bound->dims().size() && !found; ++d) {
      auto const& dim = bound->dims()[d];
      if (dim.splittable || dim.extent < 2) continue;
      auto bad = ok;
      bad.ops[op.id.value()].degrees[d] = 2;
      bad.ops[op.id.value()].devices = {0, 0};
      auto e = lower(g, bad, *registry);
      ASSERT_FALSE(e.has_value());
      EXPECT_NE(e.error().message().find("dimension '" + dim.name + "' cannot be split (" +
                                         dim.unsplittable_reason + ")"),
                std::string::npos)
          << e.error().message();
      found = true;
    }
  }
  EXPECT_TRUE(found);
  auto bad_degree = ok;
  bad_degree.ops[0].degrees[0] = 1000;
  auto e1 = lower(g, bad_degree, *registry);
  ASSERT_FALSE(e1.has_value());
  EXPECT_NE(e1.error().message().find("must be between 1 and its extent"), std::string::npos);
  auto bad_device = ok;
  bad_device.ops[0].devices[0] = 3;
  auto e2 = lower(g, bad_device, *registry);
  ASSERT_FALSE(e2.has_value());
  EXPECT_NE(e2.error().message().find("device 3 is not in 0..0"), std::string::npos);
  auto bad_count = ok;
  bad_count.ops[0].degrees.push_back(1);
  EXPECT_FALSE(lower(g, bad_count, *registry).has_value());
}

}  // namespace
}  // namespace cleave::lower
