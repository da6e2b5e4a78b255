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

// The forward graph under `precision` and its training graph (loss scaled for amp-fp16).
Expected<ir::Graph> train(ir::Graph& forward, ops::OpRegistry const& registry,
                          autodiff::TrainingOptions options, autodiff::Precision precision) {
  CLEAVE_TRY(forward, autodiff::apply_precision(forward, registry, precision));
  options.loss_scale = autodiff::loss_scale(precision);
  return autodiff::build_training_graph(forward, registry, options);
}

// A zoo spec with --precision: the flag as the spec's key, an error where the spec gives another.
Expected<std::string> zoo_spec_with(std::string const& spec, models::ModelSpec const& parsed,
                                    std::string const& precision) {
  if (precision.empty()) return spec;
  auto it = std::find_if(parsed.args.begin(), parsed.args.end(),
                         [](auto const& kv) { return kv.first == "precision"; });
  if (it == parsed.args.end())
    return spec + (spec.find(':') == std::string::npos ? ":" : ",") + "precision=" + precision;
  if (it->second != precision)
    return Error(ErrorCode::invalid_argument, "--precision " + precision +
                                                  " and the model's precision=" + it->second +
                                                  " disagree: give one");
  return spec;
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
  auto flag_precision =
      autodiff::parse_precision(flags.precision.empty() ? "fp32" : flags.precision);
  if (!flag_precision) return std::move(flag_precision).error().with_context("--precision");
  if (ends_with(spec, ".json")) {
    auto read = [&]() {
      WorkProgressLine line(flags.progress, "reading " + spec);
      return ir::load_graph(spec, registry, line.callback());
    };
    CLEAVE_TRY(ir::Graph g, read());
    std::int64_t batch = first_input_batch(g);
    if (is_training_graph(g)) {
      if (*flag_precision != autodiff::Precision::fp32)
        return Error(ErrorCode::invalid_argument,
                     "--precision applies to forward graphs; '" + spec +
                         "' is a training graph already (its dtypes are its precision)");
      return ModelInput{spec, std::nullopt, std::move(g), batch};
    }
    auto training = train(g, registry, options, *flag_precision);
    if (!training) return std::move(training).error().with_context("in graph file '" + spec + "'");
    return ModelInput{spec, std::move(g), std::move(*training), batch, *flag_precision};
  }
  if (ends_with(spec, ".onnx")) {
    CLEAVE_TRY(importer::ImportResult imported, import_onnx(spec, registry, flags));
    options.loss = imported.loss;
    auto training = train(imported.forward, registry, options, *flag_precision);
    if (!training) return std::move(training).error().with_context("in ONNX model '" + spec + "'");
    return ModelInput{spec, std::move(imported.forward), std::move(*training), imported.batch,
                      *flag_precision};
  }
  auto zoo = models::ModelZoo::with_builtins();
  CLEAVE_TRY(models::ModelSpec given, models::parse_model_spec(spec));
  CLEAVE_TRY(std::string text, zoo_spec_with(spec, given, flags.precision));
  CLEAVE_TRY(models::ModelSpec parsed, models::parse_model_spec(text));
  CLEAVE_TRY(models::ModelArgs args, zoo.resolve(parsed));
  CLEAVE_TRY(ir::Graph forward, zoo.build(text, registry));
  auto precision = *autodiff::parse_precision(args.precision());
  auto training = train(forward, registry, options, precision);
  if (!training) return std::move(training).error().with_context("in model " + args.canonical());
  auto const* def = zoo.find(parsed.name);
  bool has_batch = std::any_of(def->keys.begin(), def->keys.end(),
                               [](auto const& k) { return k.name == "batch"; });
  std::int64_t batch = has_batch ? args.integer("batch") : first_input_batch(forward);
  return ModelInput{args.canonical(), std::move(forward), std::move(*training), batch, precision};
}

std::string default_precision(std::string const& spec, TrainingFlags const& flags,
                              cluster::Cluster const& cluster) {
  if (!flags.precision.empty() || ends_with(spec, ".json") || ends_with(spec, ".onnx")) return {};
  auto parsed = models::parse_model_spec(spec);
  if (!parsed || (parsed->name != "gpt" && parsed->name != "bert")) return {};
  for (auto const& [key, value] : parsed->args)
    if (key == "precision" || key == "dtype") return {};
  bool amp_gpus =
      std::all_of(cluster.devices().begin(), cluster.devices().end(), [](auto const& d) {
        return d.kind.starts_with("A100") || d.kind.starts_with("H100");
      });
  return amp_gpus ? "amp-bf16" : std::string();
}

}  // namespace cleave::api
