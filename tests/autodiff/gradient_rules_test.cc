// Every gradient rule, on random small instances of its forward op (the property tests'
// generators): the op's float inputs become weights, a loss is attached, and the gradients of the
// training graph are compared with central finite differences of the forward loss (reference
// interpreter, fp64).
#include <cmath>
#include <gtest/gtest.h>

#include "autodiff/training_graph.h"
#include "ops/generators.h"
#include "ops/reference_executor.h"

namespace cleave::autodiff {
namespace {

using Sources = std::map<std::string, tdl::TensorData, std::less<>>;
using ops::testing::Case;

// Inputs that carry no gradient: dropout's mask, integer inputs.
bool is_weight(std::string const& type, std::size_t i, ir::TensorType const& t) {
  return ir::is_floating(t.dtype) && !(type == "dropout" && i == 1);
}

// op(inputs) -> reshape [1, n] -> cross_entropy against class 0: a scalar loss that depends on
// every output element.
Expected<ir::Graph> graph_for(ops::OpRegistry const& r, std::string const& type, Case const& c) {
  ops::OpBuilder b(r);
  std::vector<ir::TensorId> ins;
  for (std::size_t i = 0; i < c.inputs.size(); ++i)
    ins.push_back(
        b.source("in" + std::to_string(i), c.inputs[i],
                 is_weight(type, i, c.inputs[i]) ? ir::TensorRole::weight : ir::TensorRole::input));
  auto y = b.op(type, ins, c.attrs, "op");
  std::int64_t n = ir::num_elements(b.shape_of(y));
  auto row = b.op("reshape", {y}, {{"shape", std::vector<std::int64_t>{1, n}}}, "row");
  if (b.type_of(y).dtype != ir::DType::fp32)
    row = b.op("cast", {row}, {{"dtype", std::string("fp32")}}, "to_fp32");
  auto labels = b.input("labels", {1}, ir::DType::int64);
  b.op("cross_entropy", {row, labels}, {}, "loss");
  return b.finish();
}

Sources values_for(ir::Graph const& g, Case const& c, ops::testing::Rng& rng) {
  Sources s;
  for (auto const& t : g.tensors()) {
    if (g.producer(t.id).valid()) continue;
    std::vector<double> v(static_cast<std::size_t>(ir::num_elements(t.type.shape)));
    ops::testing::Fill fill;
    if (t.name.rfind("in", 0) == 0) {
      std::size_t i = std::stoul(t.name.substr(2));
      if (i < c.fills.size()) fill = c.fills[i];
    }
    if (t.name == "labels" || t.role == ir::TensorRole::optimizer_state) fill = {0, 0, 1};
    for (auto& x : v)
      x = fill.int_hi > 0 ? static_cast<double>(ops::testing::pick(rng, 0, fill.int_hi - 1))
                          : std::uniform_real_distribution<double>(fill.lo, fill.hi)(rng);
    s.emplace(t.name, tdl::TensorData::whole(t.type.shape, std::move(v)));
  }
  return s;
}

double loss(ir::Graph const& g, ops::OpRegistry const& r, Sources const& s) {
  auto v = ops::evaluate_graph(g, r, s);
  EXPECT_TRUE(v.has_value()) << v.error().to_string();
  return v ? (*v)[g.find_tensor("loss")->value()].values[0] : 0.0;
}

TEST(GradientRules, EveryRuleMatchesFiniteDifferences) {
  auto registry = ops::OpRegistry::with_builtins();
  auto rules = GradientRules::with_builtins();
  ops::testing::Generators gens;
  ops::testing::add_forward_generators(gens);
  int checked_ops = 0;
  for (auto const& [type, gen] : gens) {
    if (!rules.find(type)) continue;
    SCOPED_TRACE(type);
    ++checked_ops;
    for (int trial = 0; trial < 4; ++trial) {
      ops::testing::Rng rng(std::hash<std::string>{}(type) + static_cast<std::uint64_t>(trial));
      Case c = gen(rng);
      // fp16 outputs (cast) would round the loss: keep the test in fp32/fp64.
      if (type == "cast") c.attrs.set("dtype", std::string("fp32"));
      auto fwd = graph_for(*registry, type, c);
      ASSERT_TRUE(fwd.has_value()) << fwd.error().to_string();
      auto train = build_training_graph(*fwd, *registry);
      ASSERT_TRUE(train.has_value()) << train.error().to_string();
      Sources s = values_for(*train, c, rng);
      auto values = ops::evaluate_graph(*train, *registry, s);
      ASSERT_TRUE(values.has_value()) << values.error().to_string();
      for (auto const& t : fwd->tensors()) {
        if (t.role != ir::TensorRole::weight) continue;
        auto upd = train->find_op(t.name + ".momentum.updated");
        ASSERT_TRUE(upd.has_value()) << t.name;
        auto const& grad = (*values)[train->op(*upd).inputs[1].value()].values;
        for (std::size_t i = 0; i < grad.size(); ++i) {
          double const h = 1e-6;
          Sources plus = s, minus = s;
          plus.at(t.name).values[i] += h;
          minus.at(t.name).values[i] -= h;
          double fd = (loss(*fwd, *registry, plus) - loss(*fwd, *registry, minus)) / (2 * h);
          ASSERT_NEAR(grad[i], fd, 2e-6 + 1e-4 * std::abs(fd))
              << t.name << "[" << i << "] trial " << trial << " attrs " << c.attrs.to_string();
        }
      }
    }
  }
  EXPECT_GE(checked_ops, 25);
}

}  // namespace
}  // namespace cleave::autodiff
