#include "cluster/presets.h"

#include <algorithm>
#include <charconv>

#include "cluster/cluster_json.h"
#include "cluster/quantity_text.h"
#include "support/assert.h"

namespace cleave::cluster {

namespace {

std::string const& value_of(std::map<std::string, std::string, std::less<>> const& values,
                            std::string_view key) {
  auto it = values.find(key);
  CLEAVE_ASSERT(it != values.end(), "preset reads a key it did not declare");
  return it->second;
}

template <typename T> T parsed(Expected<T> value) {
  CLEAVE_ASSERT(value.has_value(), "preset key value was validated by resolve()");
  return *value;
}

std::string accepted(PresetDef const& def) {
  std::string out;
  for (auto const& k : def.keys) {
    out += "\n  " + k.name + " (default " + k.fallback + "): " + k.doc;
    if (k.kind == KeyKind::integer)
      out += "; an integer from " + std::to_string(k.min) + " to " + std::to_string(k.max);
  }
  return out.empty() ? " none" : out;
}

Status check_value(PresetDef const& def, PresetKey const& key, std::string const& value) {
  std::string what = "cluster '" + def.name + "': " + key.name + "=" + value;
  auto bad = [&](std::string const& why) {
    return Error(ErrorCode::invalid_argument,
                 what + " " + why + "; accepted keys:" + accepted(def));
  };
  switch (key.kind) {
  case KeyKind::integer: {
    std::int64_t v = 0;
    auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (ec != std::errc() || ptr != value.data() + value.size()) return bad("is not an integer");
    if (v < key.min || v > key.max)
      return bad("is outside " + std::to_string(key.min) + ".." + std::to_string(key.max));
    return Status::ok();
  }
  case KeyKind::size: {
    auto v = parse_bytes(value);
    if (!v) return bad("is malformed: " + v.error().message());
    if (v->value() <= 0) return bad("must be more than 0 bytes");
    return Status::ok();
  }
  case KeyKind::bandwidth: {
    auto v = parse_bandwidth(value);
    if (!v) return bad("is malformed: " + v.error().message());
    if (!(v->value() > 0)) return bad("must be more than 0 B/s");
    return Status::ok();
  }
  case KeyKind::flops_rate: {
    auto v = parse_flops_rate(value);
    if (!v) return bad("is malformed: " + v.error().message());
    if (!(v->value() > 0)) return bad("must be more than 0 FLOP/s");
    return Status::ok();
  }
  case KeyKind::duration: {
    auto v = parse_seconds(value);
    if (!v) return bad("is malformed: " + v.error().message());
    if (v->value() < 0) return bad("must not be negative");
    return Status::ok();
  }
  }
  return Status::ok();
}

}  // namespace

std::int64_t PresetArgs::integer(std::string_view key) const {
  return std::strtoll(value_of(values_, key).c_str(), nullptr, 10);
}
Bytes PresetArgs::bytes(std::string_view key) const {
  return parsed(parse_bytes(value_of(values_, key)));
}
BytesPerSecond PresetArgs::bandwidth(std::string_view key) const {
  return parsed(parse_bandwidth(value_of(values_, key)));
}
Seconds PresetArgs::seconds(std::string_view key) const {
  return parsed(parse_seconds(value_of(values_, key)));
}
FlopsPerSecond PresetArgs::flops_rate(std::string_view key) const {
  return parsed(parse_flops_rate(value_of(values_, key)));
}

Expected<ClusterSpec> parse_cluster_spec(std::string_view text) {
  return parse_named_spec(text, "cluster");
}

PresetRegistry PresetRegistry::with_builtins() {
  PresetRegistry registry;
  add_builtin_presets(registry);
  return registry;
}

Status PresetRegistry::add(PresetDef def) {
  if (find(def.name))
    return Error(ErrorCode::invalid_argument,
                 "cluster preset '" + def.name + "' is already registered");
  defs_.push_back(std::move(def));
  return Status::ok();
}

PresetDef const* PresetRegistry::find(std::string_view name) const {
  for (auto const& def : defs_)
    if (def.name == name) return &def;
  return nullptr;
}

std::vector<std::string> PresetRegistry::names() const {
  std::vector<std::string> out;
  for (auto const& def : defs_)
    out.push_back(def.name);
  return out;
}

Expected<PresetArgs> PresetRegistry::resolve(ClusterSpec const& spec) const {
  PresetDef const* def = find(spec.name);
  if (!def) {
    std::string known;
    for (auto const& n : names())
      known += (known.empty() ? "" : ", ") + n;
    return Error(ErrorCode::not_found, "unknown cluster '" + spec.name + "'; the presets are " +
                                           known +
                                           " (`cleave clusters` lists their keys), or give a "
                                           "cluster file (.json)");
  }
  std::vector<SpecKeyDefault> keys;
  for (auto const& k : def->keys)
    keys.push_back({k.name, k.fallback});
  CLEAVE_TRY(ResolvedSpec r, resolve_named_spec(
                                 "cluster", spec, keys,
                                 [&](std::size_t k, std::string const& value) {
                                   return check_value(*def, def->keys[k], value);
                                 },
                                 accepted(*def)));
  PresetArgs args;
  args.values_ = std::move(r.values);
  args.canonical_ = std::move(r.canonical);
  args.overrides_ = std::move(r.overrides);
  return args;
}

Expected<Cluster> PresetRegistry::build(std::string_view text) const {
  CLEAVE_TRY(ClusterSpec spec, parse_cluster_spec(text));
  CLEAVE_TRY(PresetArgs args, resolve(spec));
  PresetDef const& def = *find(spec.name);
  ClusterBuilder b(args.canonical());
  for (auto const& line : def.sources)
    b.add_source(line);
  for (auto const& o : args.overrides())
    b.add_source(o + ": given in the cluster spec, replacing the default above");
  def.build(b, args);
  auto cluster = b.build();
  if (!cluster) return std::move(cluster).error().with_context("in cluster " + args.canonical());
  return cluster;
}

Expected<Cluster> load_cluster(std::string const& spec) {
  if (spec.size() > 5 && spec.ends_with(".json")) return load_cluster_file(spec);
  return PresetRegistry::with_builtins().build(spec);
}

}  // namespace cleave::cluster
