#include "models/model_zoo.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>

#include "support/assert.h"

namespace cleave::models {

std::int64_t ModelArgs::integer(std::string_view key) const {
  auto it = values_.find(key);
  CLEAVE_ASSERT(it != values_.end(), "model reads a key it did not declare");
  return std::strtoll(it->second.c_str(), nullptr, 10);
}

double ModelArgs::real(std::string_view key) const {
  auto it = values_.find(key);
  CLEAVE_ASSERT(it != values_.end(), "model reads a key it did not declare");
  return std::strtod(it->second.c_str(), nullptr);
}

std::string const& ModelArgs::text(std::string_view key) const {
  auto it = values_.find(key);
  CLEAVE_ASSERT(it != values_.end(), "model reads a key it did not declare");
  return it->second;
}

ir::DType ModelArgs::dtype() const {
  return *ir::parse_dtype(text("dtype"));
}

Expected<ModelSpec> parse_model_spec(std::string_view text) {
  return parse_named_spec(text, "model");
}

namespace {

ModelKey dtype_key() {
  return {"dtype", KeyKind::choice,         "fp32", "element type of weights and activations",
          1,       {"fp32", "fp16", "bf16"}};
}

// Every model trains under a precision (autodiff/precision.h); load_model applies it.
ModelKey precision_key() {
  return {"precision",
          KeyKind::choice,
          "fp32",
          "training precision: fp32, tf32 (fp32 tensors, TF32 matmuls where the GPU has them), "
          "amp-fp16 or amp-bf16 (PyTorch's autocast: half matmuls and convolutions, fp32 master "
          "weights; amp-fp16 with loss scaling); amp needs dtype=fp32",
          1,
          {"fp32", "tf32", "amp-fp16", "amp-bf16"}};
}

// The canonical spec leaves out the default precision, so that fp32 specs (and the plans that
// record them) read as they did before the key existed.
constexpr std::string_view default_precision_suffix = ",precision=fp32";

std::string accepted(ModelDef const& def) {
  std::string out;
  for (auto const& k : def.keys) {
    out += "\n  " + k.name + " (default " + k.fallback + "): " + k.doc;
    if (k.kind == KeyKind::integer) out += "; an integer >= " + std::to_string(k.min);
    if (k.kind == KeyKind::choice) {
      out += "; one of";
      for (auto const& c : k.choices)
        out += " " + c;
    }
  }
  return out;
}

Status check_value(ModelDef const& def, ModelKey const& key, std::string const& value) {
  std::string what = "model '" + def.name + "': " + key.name + "=" + value;
  if (key.kind == KeyKind::integer) {
    std::int64_t v = 0;
    auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (ec != std::errc() || ptr != value.data() + value.size())
      return Error(ErrorCode::invalid_argument,
                   what + " is not an integer; accepted keys:" + accepted(def));
    if (v < key.min)
      return Error(ErrorCode::invalid_argument,
                   what + " is below the smallest accepted value " + std::to_string(key.min));
  } else if (key.kind == KeyKind::real) {
    char* end = nullptr;
    std::strtod(value.c_str(), &end);
    if (value.empty() || end != value.c_str() + value.size())
      return Error(ErrorCode::invalid_argument, what + " is not a number");
  } else if (std::find(key.choices.begin(), key.choices.end(), value) == key.choices.end()) {
    return Error(ErrorCode::invalid_argument,
                 what + " is not accepted; accepted keys:" + accepted(def));
  }
  return Status::ok();
}

}  // namespace

ModelZoo ModelZoo::with_builtins() {
  ModelZoo zoo;
  add_mlp(zoo);
  add_cnns(zoo);
  add_resnet(zoo);
  add_inception(zoo);
  add_nasnet(zoo);
  add_rnns(zoo);
  add_transformers(zoo);
  add_e3d(zoo);
  return zoo;
}

Status ModelZoo::add(ModelDef def) {
  if (defs_.count(def.name))
    return Error(ErrorCode::invalid_argument, "model '" + def.name + "' is already registered");
  def.keys.push_back(dtype_key());
  def.keys.push_back(precision_key());
  std::string name = def.name;
  defs_.emplace(std::move(name), std::move(def));
  return Status::ok();
}

ModelDef const* ModelZoo::find(std::string_view name) const {
  auto it = defs_.find(name);
  return it == defs_.end() ? nullptr : &it->second;
}

std::vector<std::string> ModelZoo::names() const {
  std::vector<std::string> out;
  for (auto const& [name, def] : defs_)
    out.push_back(name);
  return out;
}

Expected<ModelArgs> ModelZoo::resolve(ModelSpec const& spec) const {
  ModelDef const* def = find(spec.name);
  if (!def) {
    std::string known;
    for (auto const& n : names())
      known += (known.empty() ? "" : ", ") + n;
    return Error(ErrorCode::not_found, "unknown model '" + spec.name + "'; the zoo has " + known +
                                           " (`cleave models` lists their keys), or give a "
                                           "graph file (.json)");
  }
  std::vector<SpecKeyDefault> keys;
  for (auto const& k : def->keys) {
    auto derived = def->derived_defaults.find(k.name);
    keys.push_back(
        {k.name, derived == def->derived_defaults.end() ? k.fallback : derived->second(spec)});
  }
  CLEAVE_TRY(ResolvedSpec r, resolve_named_spec(
                                 "model", spec, keys,
                                 [&](std::size_t k, std::string const& value) {
                                   return check_value(*def, def->keys[k], value);
                                 },
                                 accepted(*def)));
  ModelArgs args;
  args.values_ = std::move(r.values);
  args.canonical_ = std::move(r.canonical);
  if (args.canonical_.ends_with(default_precision_suffix))
    args.canonical_.resize(args.canonical_.size() - default_precision_suffix.size());
  if (args.text("precision").starts_with("amp") && args.dtype() != ir::DType::fp32)
    return Error(ErrorCode::invalid_argument,
                 "model '" + def->name + "': precision=" + args.text("precision") +
                     " keeps fp32 master weights and casts to half itself: use dtype=fp32");
  return args;
}

Expected<ir::Graph> ModelZoo::build(std::string_view text, ops::OpRegistry const& registry) const {
  CLEAVE_TRY(ModelSpec spec, parse_model_spec(text));
  CLEAVE_TRY(ModelArgs args, resolve(spec));
  ops::OpBuilder b(registry);
  find(spec.name)->build(b, args);
  auto graph = b.finish();
  if (!graph) return std::move(graph).error().with_context("in model " + args.canonical());
  return graph;
}

}  // namespace cleave::models
