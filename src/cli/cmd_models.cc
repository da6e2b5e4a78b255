// `cleave models` (the zoo), `cleave inspect MODEL` (what a training step holds and computes) and
// `cleave export-graph MODEL -o FILE` (the training graph as cleave.graph/1).
#include <cstdio>
#include <nlohmann/json.hpp>

#include "api/model_input.h"
#include "cli/commands.h"
#include "ir/graph_json.h"
#include "report/model_summary.h"

namespace cleave::cli {

int run_models(bool json) {
  auto zoo = models::ModelZoo::with_builtins();
  if (json) {
    auto list = nlohmann::json::array();
    for (auto const& name : zoo.names()) {
      auto const* def = zoo.find(name);
      auto keys = nlohmann::json::array();
      for (auto const& k : def->keys)
        keys.push_back({{"name", k.name}, {"default", k.fallback}, {"doc", k.doc}});
      list.push_back({{"name", name}, {"summary", def->summary}, {"keys", std::move(keys)}});
    }
    std::printf("%s\n",
                nlohmann::json{{"format", "cleave.models/1"}, {"models", list}}.dump(2).c_str());
    return 0;
  }
  for (auto const& name : zoo.names()) {
    auto const* def = zoo.find(name);
    std::printf("%-10s %s\n", name.c_str(), def->summary.c_str());
    for (auto const& k : def->keys)
      std::printf("%-10s   %s = %s  %s\n", "", k.name.c_str(), k.fallback.c_str(), k.doc.c_str());
  }
  std::printf(
      "\nUse NAME[:key=value,...], e.g. resnet:depth=152,width=4 or gpt:layers=24,hidden=2048\n");
  return 0;
}

int run_inspect(ops::OpRegistry const& registry, InspectCommand const& cmd) {
  auto model = api::load_model(cmd.model, registry, cmd.training);
  if (!model) return report(model.error());
  std::optional<std::int64_t> forward_ops;
  if (model->forward) forward_ops = static_cast<std::int64_t>(model->forward->num_ops());
  auto summary = report::summarize(model->label, model->training, forward_ops, registry);
  if (!summary) return report(summary.error());
  std::string text = cmd.json ? report::to_json(*summary) : report::to_text(*summary);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

int run_export_graph(ops::OpRegistry const& registry, ExportGraphCommand const& cmd) {
  auto model = api::load_model(cmd.model, registry, cmd.training);
  if (!model) return report(model.error());
  ir::Graph const& g = cmd.forward_only && model->forward ? *model->forward : model->training;
  auto st = ir::save_graph(g, cmd.output);
  if (!st) return report(st.error());
  std::printf("wrote %s: %s graph of %s, %zu ops, %zu tensors\n", cmd.output.c_str(),
              &g == &model->training ? "training" : "forward", model->label.c_str(), g.num_ops(),
              g.num_tensors());
  return 0;
}

}  // namespace cleave::cli
