// Small training-graph generators and random plans shared by the lowering and simulator tests.
#pragma once

#include <map>
#include <optional>
#include <random>
#include <string>

#include "ir/graph.h"
#include "models/layers.h"
#include "ops/op_builder.h"
#include "plan/plan.h"
#include "tdl/interpreter.h"

namespace cleave::lower::testing {

using Sources = std::map<std::string, tdl::TensorData, std::less<>>;
using Rng = std::mt19937_64;

inline Sources random_sources(ir::Graph const& g, Rng& rng) {
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

// A random configuration of one op: each splittable dimension split 2 or 3 ways or not at all
// (at most 6 pieces), each piece on a random device.
inline plan::OpConfig random_config(ir::Graph const& g, ops::OpRegistry const& r, ir::OpId op,
                                    int devices, Rng& rng) {
  auto bound = *r.bind(g, op);
  plan::OpConfig c;
  c.degrees.assign(bound->dims().size(), 1);
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
  return c;
}

inline plan::Plan random_plan(ir::Graph const& g, ops::OpRegistry const& r, int devices, Rng& rng) {
  plan::Plan p = plan::single_device_plan(g, r);
  p.num_devices = devices;
  p.provenance.algorithm = "random";
  for (auto const& op : g.ops())
    p.ops[op.id.value()] = random_config(g, r, op.id, devices, rng);
  return p;
}

inline ir::Graph tiny_cnn(ops::OpRegistry const& r) {
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

inline ir::Graph tiny_attention(ops::OpRegistry const& r) {
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

// A single-device plan of a training graph (every op whole on device 0) ordered as the graph's
// topological listing, swapping each forward activation that backward ops read out after its last
// forward reader and in before its first backward reader, where at least `gap` pieces lie between
// the two (SwapAdvisor's saved activations).
inline plan::Plan with_swapped_activations(ir::Graph const& g, plan::Plan p, std::size_t gap) {
  std::vector<std::size_t> position(g.num_ops());
  p.order = {{}};
  for (ir::OpId op : g.topo_order()) {
    position[op.value()] = p.order[0].size();
    p.order[0].push_back({op.value(), 0});
  }
  for (auto const& t : g.tensors()) {
    ir::OpId producer = g.producer(t.id);
    if (!producer.valid() || g.op(producer).forward.valid()) continue;
    std::optional<ir::OpId> last_forward = producer, first_backward;
    for (ir::OpId c : g.consumers(t.id)) {
      bool backward = g.op(c).forward.valid();
      auto& pick = backward ? first_backward : last_forward;
      if (!pick || (backward ? position[c.value()] < position[pick->value()]
                             : position[c.value()] > position[pick->value()]))
        pick = c;
    }
    if (!first_backward ||
        position[first_backward->value()] < position[last_forward->value()] + gap + 1)
      continue;
    p.swaps.push_back({t.id, tdl::whole_box(t.type.shape), 0,
                       plan::PieceRef{last_forward->value(), 0},
                       plan::PieceRef{first_backward->value(), 0}, std::nullopt, std::nullopt});
  }
  return p;
}

}  // namespace cleave::lower::testing
