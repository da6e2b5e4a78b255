#include "api/model_input.h"

#include <algorithm>

#include "import/onnx_import.h"
#include "ir/graph_json.h"

namespace cleave::api {

namespace {

bool is_training_graph(ir::Graph const& g) {
  for (auto const& op : g.ops())
    if (op.forward.valid()) return true;
  return false;
}

std::int64_t first_input_batch(ir::Graph const& g) {
  for (auto const& t : g.tensors())
    if (t.role == ir::TensorRole::input && !t.type.shape.empty()) return t.type.shape[0];
  return 1;
}

bool ends_with(std::string const& s, std::string const& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

Expected<autodiff::TrainingOptions> training_options(TrainingFlags const& flags) {
  autodiff::TrainingOptions o;
  if (flags.optimizer == "adam") {
    o.optimizer = autodiff::Optimizer::adam;
    o.learning_rate = 0.001;
  } else if (flags.optimizer != "sgd") {
    return Error(ErrorCode::invalid_argument,
                 "--optimizer " + flags.optimizer + ": use sgd (with momentum) or adam");
  }
  if (flags.learning_rate) o.learning_rate = *flags.learning_rate;
  o.loss = flags.loss;
  return o;
}

Expected<importer::ImportResult>
import_onnx(std::string const& path, ops::OpRegistry const& registry, TrainingFlags const& flags) {
  importer::ImportOptions options;
  options.allow_opaque = flags.allow_opaque;
  if (flags.loss != TrainingFlags{}.loss) options.loss = flags.loss;
  WorkProgressLine line(flags.progress, "importing " + path);
  options.progress = line.callback();
  return importer::import_onnx_file(path, registry, options);
}

Expected<ModelInput> load_model(std::string const& spec, ops::OpRegistry const& registry,
                                TrainingFlags const& flags) {
  CLEAVE_TRY(autodiff::TrainingOptions options, training_options(flags));
  if (ends_with(spec, ".json")) {
    auto read = [&]() {
      WorkProgressLine line(flags.progress, "reading " + spec);
      return ir::load_graph(spec, registry, line.callback());
    };
    CLEAVE_TRY(ir::Graph g, read());
    std::int64_t batch = first_input_batch(g);
    if (is_training_graph(g)) return ModelInput{spec, std::nullopt, std::move(g), batch};
    auto training = autodiff::build_training_graph(g, registry, options);
    if (!training) return std::move(training).error().with_context("in graph file '" + spec + "'");
    return ModelInput{spec, std::move(g), std::move(*training), batch};
  }
  if (ends_with(spec, ".onnx")) {
    CLEAVE_TRY(importer::ImportResult imported, import_onnx(spec, registry, flags));
    options.loss = imported.loss;
    auto training = autodiff::build_training_graph(imported.forward, registry, options);
    if (!training) return std::move(training).error().with_context("in ONNX model '" + spec + "'");
    return ModelInput{spec, std::move(imported.forward), std::move(*training), imported.batch};
  }
  auto zoo = models::ModelZoo::with_builtins();
  CLEAVE_TRY(models::ModelSpec parsed, models::parse_model_spec(spec));
  CLEAVE_TRY(models::ModelArgs args, zoo.resolve(parsed));
  CLEAVE_TRY(ir::Graph forward, zoo.build(spec, registry));
  auto training = autodiff::build_training_graph(forward, registry, options);
  if (!training) return std::move(training).error().with_context("in model " + args.canonical());
  auto const* def = zoo.find(parsed.name);
  bool has_batch = std::any_of(def->keys.begin(), def->keys.end(),
                               [](auto const& k) { return k.name == "batch"; });
  std::int64_t batch = has_batch ? args.integer("batch") : first_input_batch(forward);
  return ModelInput{args.canonical(), std::move(forward), std::move(*training), batch};
}

}  // namespace cleave::api
