// The `expert` baseline: what an experienced engineer would write by hand for the model at hand
// (issue 4 item 6), chosen by what the graph contains:
//  - an unrolled RNN (ops scoped "...layer<k>.step<t>..."): layer-wise round-robin placement, as
//    MXNet's and TensorFlow's model-parallel RNN examples (Tofu's "placement" baseline, PAPERS.md
//    §1): every op of layer k whole on device k mod n; ops outside the layers on the device of
//    their first placed input (the embedding on device 0, the decoder with the last layer);
//    backward and optimizer ops with their forward op;
//  - anything else: tensor_parallel (baselines.cc): Megatron-LM with sequence parallelism on
//    transformers, Krizhevsky's one weird trick on CNNs (convolutions data parallel, fully
//    connected layers model parallel).
#include <map>
#include <regex>

#include "search/baselines/baselines.h"

namespace cleave::search {
namespace {

// "encoder.layer1.step3.gates" -> "encoder.layer1"; "" if the op is in no RNN layer.
std::string layer_of(std::string const& name) {
  static std::regex const pattern(R"(^(.*?\blayer\d+)\.step\d+\.)");
  std::smatch m;
  return std::regex_search(name, m, pattern) ? m[1].str() : std::string();
}

bool is_unrolled_rnn(ir::Graph const& g) {
  for (auto const& op : g.ops())
    if (!layer_of(op.name).empty()) return true;
  return false;
}

Expected<plan::Plan> layer_placement(SearchContext const& ctx) {
  auto const& g = ctx.graph;
  int n = static_cast<int>(ctx.cluster().num_devices());
  plan::Plan p = plan::single_device_plan(g, ctx.registry);
  std::map<std::string, int> layers;  // in order of first appearance
  std::vector<int> device(g.num_ops(), 0);
  for (ir::OpId id : g.topo_order()) {
    ir::Op const& op = g.op(id);
    int d = 0;
    if (op.forward.valid()) {
      d = device[op.forward.value()];
    } else if (auto layer = layer_of(op.name); !layer.empty()) {
      auto [it, added] = layers.emplace(layer, static_cast<int>(layers.size()));
      d = it->second % n;
    } else {
      for (ir::TensorId in : op.inputs)
        if (auto producer = g.producer(in); producer.valid()) {
          d = device[producer.value()];
          break;
        }
    }
    device[id.value()] = d;
    for (int& piece_device : p.ops[id.value()].devices)
      piece_device = d;
  }
  return p;
}

}  // namespace

Expected<plan::Plan> expert(SearchContext const& ctx) {
  if (is_unrolled_rnn(ctx.graph)) return layer_placement(ctx);
  return tensor_parallel(ctx);
}

}  // namespace cleave::search
