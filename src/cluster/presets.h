// Cluster presets from the papers (PAPERS.md), named NAME[:key=value,...] wherever a cluster is
// accepted, like the model zoo. Every key has a documented default, and every constant a preset
// uses is recorded with its source in the preset and in the clusters it builds (docs/clusters.md).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cluster/cluster_builder.h"
#include "support/named_spec.h"

namespace cleave::cluster {

enum class KeyKind { integer, size, bandwidth, duration, flops_rate };

struct PresetKey {
  std::string name;
  KeyKind kind = KeyKind::integer;
  std::string fallback;  // the documented default, as text ("80GiB", "300GB/s", "8")
  std::string doc;
  std::int64_t min = 1;  // integer keys: the accepted range
  std::int64_t max = 1;
};

// Validated values of a preset's keys (defaults filled in).
class PresetArgs {
 public:
  std::int64_t integer(std::string_view key) const;
  Bytes bytes(std::string_view key) const;
  BytesPerSecond bandwidth(std::string_view key) const;
  Seconds seconds(std::string_view key) const;
  FlopsPerSecond flops_rate(std::string_view key) const;
  // "dgx-a100:memory=80GiB,nvswitch=300GB/s,...": the full spec, every key spelled out.
  std::string const& canonical() const { return canonical_; }
  // "memory=40GiB" for each key given a value other than its default.
  std::vector<std::string> const& overrides() const { return overrides_; }

 private:
  friend class PresetRegistry;
  std::map<std::string, std::string, std::less<>> values_;
  std::string canonical_;
  std::vector<std::string> overrides_;
};

struct PresetDef {
  std::string name;
  std::string summary;
  std::vector<PresetKey> keys;
  // Where each constant comes from: "value: source", one line each.
  std::vector<std::string> sources;
  // Adds nodes, devices, switches and links to a builder already named and given the sources.
  std::function<void(ClusterBuilder& b, PresetArgs const& args)> build;
};

// "NAME[:key=value,...]".
using ClusterSpec = NamedSpec;
Expected<ClusterSpec> parse_cluster_spec(std::string_view text);

class PresetRegistry {
 public:
  // Every built-in preset (explicit registration, STYLE.md #7).
  static PresetRegistry with_builtins();

  Status add(PresetDef def);
  PresetDef const* find(std::string_view name) const;
  std::vector<std::string> names() const;  // in registration order

  // Keys checked (unknown keys, malformed or out-of-range values: errors that list what is
  // accepted) and defaults filled in.
  Expected<PresetArgs> resolve(ClusterSpec const& spec) const;
  // The verified cluster of "NAME[:key=value,...]".
  Expected<Cluster> build(std::string_view spec) const;

 private:
  std::vector<PresetDef> defs_;
};

// Registration of the built-in presets (preset_defs.cc).
void add_builtin_presets(PresetRegistry& registry);

// What every command that takes a cluster accepts: a preset spec, or a path ending in ".json"
// (a cleave.cluster/1 file, e.g. one written by `cleave clusters --export`).
Expected<Cluster> load_cluster(std::string const& spec);

}  // namespace cleave::cluster
