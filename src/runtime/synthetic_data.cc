#include "runtime/synthetic_data.h"

#include <cmath>
#include <random>
#include <string_view>

#include "support/hash.h"

namespace cleave::runtime {
namespace {

// Uniform in [0, 1) from 53 bits, independent of the standard library's distributions.
double unit(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * (1.0 / 9007199254740992.0);
}

std::int64_t integer_range(ir::Graph const& g, ir::TensorId t) {
  std::int64_t range = 0;
  for (ir::OpId c : g.consumers(t)) {
    ir::Op const& op = g.op(c);
    std::int64_t r = 0;
    for (ir::TensorId in : op.inputs) {
      auto const& type = g.tensor(in).type;
      if (!ir::is_floating(type.dtype) || type.shape.empty()) continue;
      // An embedding's table is its first input: the rows are the ids; else the classes are
      // the last dimension (cross-entropy's logits).
      r = op.type == "embedding" ? type.shape.front() : type.shape.back();
      break;
    }
    if (r > 0) range = range == 0 ? r : std::min(range, r);
  }
  return range > 0 ? range : 2;
}

}  // namespace

std::vector<StateUpdate> state_updates(ir::Graph const& graph) {
  std::vector<StateUpdate> out;
  for (auto const& t : graph.tensors()) {
    if (graph.producer(t.id).valid()) continue;
    for (ir::OpId c : graph.consumers(t.id)) {
      ir::Op const& op = graph.op(c);
      auto role = graph.tensor(op.outputs[0]).role;
      bool update = op.forward.valid() && !op.inputs.empty() && op.inputs[0] == t.id &&
                    (role == ir::TensorRole::weight || role == ir::TensorRole::optimizer_state);
      if (update) {
        out.push_back({t.id, c, op.outputs[0]});
        break;
      }
    }
  }
  return out;
}

Values synthetic_sources(ir::Graph const& graph, std::uint64_t seed) {
  Values values;
  for (auto const& t : graph.tensors()) {
    if (graph.producer(t.id).valid()) continue;
    std::mt19937_64 rng(fnv1a(t.name, fnv1a_graph_basis) ^ (seed * 0x9e3779b97f4a7c15ull));
    auto n = static_cast<std::size_t>(ir::num_elements(t.type.shape));
    std::vector<float> v(n, 0.0f);
    if (t.role == ir::TensorRole::optimizer_state) {
      // zeros
    } else if (!ir::is_floating(t.type.dtype)) {
      auto range = static_cast<double>(integer_range(graph, t.id));
      for (auto& x : v)
        x = static_cast<float>(std::floor(unit(rng) * range));
    } else if (t.role == ir::TensorRole::weight) {
      if (t.type.shape.size() <= 1) {
        for (auto& x : v)
          x = static_cast<float>(1.0 + 0.1 * (2 * unit(rng) - 1));
      } else {
        double fan_in = static_cast<double>(n) / static_cast<double>(t.type.shape.front());
        double scale = 1.0 / std::sqrt(std::max(1.0, fan_in));
        for (auto& x : v)
          x = static_cast<float>(scale * (2 * unit(rng) - 1));
      }
    } else {
      for (auto& x : v)
        x = static_cast<float>(2 * unit(rng) - 1);
    }
    values.emplace(t.name, std::move(v));
  }
  return values;
}

}  // namespace cleave::runtime
