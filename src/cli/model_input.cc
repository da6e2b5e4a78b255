#include "cli/model_input.h"

#include "ir/graph_json.h"

namespace cleave::cli {

namespace {

bool is_training_graph(ir::Graph const& g) {
  for (auto const& op : g.ops())
    if (op.forward.valid()) return true;
  return false;
}

bool ends_with(std::string const& s, std::string const& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

Expected<ModelInput> load_model(std::string const& spec, ops::OpRegistry const& registry,
                                autodiff::TrainingOptions const& options) {
  if (ends_with(spec, ".json")) {
    CLEAVE_TRY(ir::Graph g, ir::load_graph(spec, registry));
    if (is_training_graph(g)) return ModelInput{spec, std::nullopt, std::move(g)};
    auto training = autodiff::build_training_graph(g, registry, options);
    if (!training) return std::move(training).error().with_context("in graph file '" + spec + "'");
    return ModelInput{spec, std::move(g), std::move(*training)};
  }
  auto zoo = models::ModelZoo::with_builtins();
  CLEAVE_TRY(models::ModelSpec parsed, models::parse_model_spec(spec));
  CLEAVE_TRY(models::ModelArgs args, zoo.resolve(parsed));
  CLEAVE_TRY(ir::Graph forward, zoo.build(spec, registry));
  auto training = autodiff::build_training_graph(forward, registry, options);
  if (!training) return std::move(training).error().with_context("in model " + args.canonical());
  return ModelInput{args.canonical(), std::move(forward), std::move(*training)};
}

}  // namespace cleave::cli
