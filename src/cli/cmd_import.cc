// `cleave import MODEL.onnx -o GRAPH.json`: the ONNX model as a cleave graph, with what the import
// did (folded shape computations, fused patterns, opaque ops, parameters counted by use).
#include <cstdio>

#include "cli/commands.h"
#include "ir/graph_json.h"

namespace cleave::cli {

int run_import(ops::OpRegistry const& registry, ImportCommand const& cmd) {
  auto imported = api::import_onnx(cmd.model, registry, cmd.training);
  if (!imported) return report(imported.error());
  auto const& s = imported->stats;
  ir::Graph const* out = &imported->forward;
  std::optional<ir::Graph> training;
  if (cmd.training_graph) {
    auto options = api::training_options(cmd.training);
    if (!options) return report(options.error());
    options->loss = imported->loss;
    auto g = autodiff::build_training_graph(imported->forward, registry, *options);
    if (!g) return report(g.error().with_context("in ONNX model '" + cmd.model + "'"));
    training = std::move(*g);
    out = &*training;
  }
  auto st = ir::save_graph(*out, cmd.output);
  if (!st) return report(st.error());
  std::printf("imported %s (opset %lld, %s): %lld ONNX nodes, %lld initializers\n",
              cmd.model.c_str(), static_cast<long long>(s.opset), s.producer.c_str(),
              static_cast<long long>(s.onnx_nodes), static_cast<long long>(s.initializers));
  std::printf("  folded %lld constant nodes, fused %lld patterns, %lld opaque ops\n",
              static_cast<long long>(s.folded), static_cast<long long>(s.fused),
              static_cast<long long>(s.opaque));
  std::printf("  %lld weights, %lld parameters (counted by use); loss '%s'\n",
              static_cast<long long>(s.weights), static_cast<long long>(s.parameters),
              imported->loss.c_str());
  std::printf("wrote %s: %s graph, %zu ops, %zu tensors\n", cmd.output.c_str(),
              cmd.training_graph ? "training" : "forward", out->num_ops(), out->num_tensors());
  return 0;
}

}  // namespace cleave::cli
