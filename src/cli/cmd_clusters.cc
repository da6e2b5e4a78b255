// `cleave clusters` (the presets with keys, defaults and sources), `cleave clusters --show SPEC`
// (one cluster: devices, nodes, links, routes from device 0) and `--export SPEC -o FILE`
// (cleave.cluster/1, to edit and load back wherever a cluster is accepted).
#include <cstdio>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cluster/cluster_json.h"
#include "cluster/presets.h"
#include "cluster/quantity_text.h"
#include "support/format_bytes.h"

namespace cleave::cli {

namespace {

using cluster::Cluster;
using cluster::DeviceId;

constexpr ir::DType peak_dtypes[] = {ir::DType::fp32, ir::DType::fp16, ir::DType::bf16};

std::string count(std::size_t n, std::string noun) {
  if (n != 1) noun += noun.ends_with("ch") ? "es" : "s";
  return std::to_string(n) + " " + noun;
}

int list_presets(bool json) {
  auto registry = cluster::PresetRegistry::with_builtins();
  if (json) {
    auto list = nlohmann::json::array();
    for (auto const& name : registry.names()) {
      auto const* def = registry.find(name);
      auto keys = nlohmann::json::array();
      for (auto const& k : def->keys)
        keys.push_back({{"name", k.name}, {"default", k.fallback}, {"doc", k.doc}});
      list.push_back({{"name", name},
                      {"summary", def->summary},
                      {"keys", std::move(keys)},
                      {"sources", def->sources}});
    }
    std::printf(
        "%s\n",
        nlohmann::json{{"format", "cleave.clusters/1"}, {"clusters", list}}.dump(2).c_str());
    return 0;
  }
  for (auto const& name : registry.names()) {
    auto const* def = registry.find(name);
    std::printf("%-10s %s\n", name.c_str(), def->summary.c_str());
    for (auto const& k : def->keys)
      std::printf("%-10s   %s = %s  %s\n", "", k.name.c_str(), k.fallback.c_str(), k.doc.c_str());
    std::printf("%-10s   sources:\n", "");
    for (auto const& s : def->sources)
      std::printf("%-10s     - %s\n", "", s.c_str());
  }
  std::printf("\nUse NAME[:key=value,...], e.g. dgx-a100:memory=40GiB or h100-2x8:nodes=4, or a "
              "cleave.cluster/1 file (.json); `cleave clusters --show SPEC` prints one.\n");
  return 0;
}

std::string path_text(Cluster const& c, cluster::Route r, DeviceId from) {
  std::string out = c.device(from).name;
  for (cluster::Hop h : r.hops) {
    auto const& l = c.link(h.link);
    out += " > " + c.vertex_name(h.direction == cluster::Direction::a_to_b ? l.b : l.a);
  }
  return out;
}

std::string device_list(std::vector<DeviceId> const& ids) {
  if (ids.empty()) return "none";
  std::string out;
  // Runs of consecutive ids as "a-b".
  for (std::size_t i = 0; i < ids.size();) {
    std::size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1].value() == ids[j].value() + 1)
      ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(ids[i].value());
    if (j > i) out += "-" + std::to_string(ids[j].value());
    i = j + 1;
  }
  return out;
}

void show_text(Cluster const& c) {
  std::string out =
      fmt::format("cluster      {}\nfingerprint  {}\nsize         {}, {}, {}, {}\n", c.name(),
                  cluster::fingerprint_hex(c), count(c.num_devices(), "device"),
                  count(c.nodes().size(), "node"), count(c.switches().size(), "switch"),
                  count(c.links().size(), "link"));
  out += "\ndevices\n";
  out += fmt::format("  {:>4}  {:<12} {:<16} {:<8} {:>9} {:>14} {:>14} {:>14} {:>11}\n", "id",
                     "name", "kind", "node", "memory", "fp32", "fp16", "bf16", "memory bw");
  for (std::uint32_t i = 0; i < c.num_devices(); ++i) {
    auto const& d = c.device(DeviceId(i));
    std::string peaks;
    for (ir::DType dt : peak_dtypes) {
      auto p = d.peak_for(dt);
      peaks += fmt::format(" {:>14}", p ? cluster::format_flops_rate(*p) : "-");
    }
    out += fmt::format("  {:>4}  {:<12} {:<16} {:<8} {:>9}{} {:>11}\n", i, d.name, d.kind,
                       c.node(d.node).name, format_bytes(d.memory), peaks,
                       cluster::format_bandwidth(d.memory_bandwidth));
  }
  out += "\nnodes\n";
  for (std::uint32_t n = 0; n < c.nodes().size(); ++n) {
    auto const& node = c.node(cluster::NodeId(n));
    out +=
        fmt::format("  {:<8} host memory {:>9}   devices {}\n", node.name,
                    format_bytes(node.host_memory), device_list(c.devices_of(cluster::NodeId(n))));
  }
  if (!c.switches().empty()) {
    out += "\nswitches\n";
    for (auto const& s : c.switches())
      out += fmt::format("  {:<14} {:<15} {}\n", s.name, cluster::switch_kind_name(s.kind),
                         s.node.valid() ? "in " + c.node(s.node).name : "between nodes");
  }
  out += "\nlinks (full duplex; bandwidth per direction)\n";
  out += fmt::format("  {:>4}  {:<10} {:<14}    {:<14} {:>11} {:>9}\n", "id", "kind", "a", "b",
                     "bandwidth", "latency");
  for (std::uint32_t i = 0; i < c.links().size(); ++i) {
    auto const& l = c.link(cluster::LinkId(i));
    out += fmt::format("  {:>4}  {:<10} {:<14} -- {:<14} {:>11} {:>9}\n", i,
                       cluster::link_kind_name(l.kind), c.vertex_name(l.a), c.vertex_name(l.b),
                       cluster::format_bandwidth(l.bandwidth), cluster::format_seconds(l.latency));
  }
  auto const& first = c.device(DeviceId(0)).name;
  out += fmt::format("\nroutes from device 0 ({}): fewest hops, then highest bottleneck\n", first);
  out += fmt::format("  {:<12} {:>4} {:>11} {:>9}  {}\n", "to", "hops", "bottleneck", "latency",
                     "path");
  auto row = [&](std::string const& to, cluster::Route r) {
    out += fmt::format("  {:<12} {:>4} {:>11} {:>9}  {}\n", to, r.hops.size(),
                       cluster::format_bandwidth(r.bottleneck), cluster::format_seconds(r.latency),
                       path_text(c, r, DeviceId(0)));
  };
  row("host", c.host_route(DeviceId(0)));
  for (std::uint32_t i = 1; i < c.num_devices(); ++i)
    row(c.device(DeviceId(i)).name, c.route(DeviceId(0), DeviceId(i)));
  out += "\nsources\n";
  for (auto const& s : c.sources())
    out += "  - " + s + "\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
}

void show_json(Cluster const& c) {
  auto routes = nlohmann::json::array();
  auto route_json = [&](std::string const& to, cluster::Route r) {
    auto path = nlohmann::json::array();
    for (cluster::Hop h : r.hops)
      path.push_back(h.link.value());
    routes.push_back({{"to", to},
                      {"hops", r.hops.size()},
                      {"bottleneck_bytes_per_s", r.bottleneck.value()},
                      {"latency_s", r.latency.value()},
                      {"links", std::move(path)},
                      {"path", path_text(c, r, DeviceId(0))}});
  };
  route_json("host", c.host_route(DeviceId(0)));
  for (std::uint32_t i = 1; i < c.num_devices(); ++i)
    route_json(c.device(DeviceId(i)).name, c.route(DeviceId(0), DeviceId(i)));
  nlohmann::json out = {{"format", "cleave.cluster-summary/1"},
                        {"fingerprint", cluster::fingerprint_hex(c)},
                        {"cluster", nlohmann::json::parse(cluster::cluster_to_json(c))},
                        {"routes_from_device_0", std::move(routes)}};
  std::printf("%s\n", out.dump(2).c_str());
}

}  // namespace

int run_clusters(ClustersCommand const& cmd) {
  if (!cmd.export_spec.empty()) {
    auto c = cluster::load_cluster(cmd.export_spec);
    if (!c) return report(c.error());
    auto st = cluster::save_cluster(*c, cmd.output);
    if (!st) return report(st.error());
    std::printf("wrote %s: cluster %s, %s, fingerprint %s\n", cmd.output.c_str(), c->name().c_str(),
                count(c->num_devices(), "device").c_str(), cluster::fingerprint_hex(*c).c_str());
    return 0;
  }
  if (cmd.show.empty()) return list_presets(cmd.json);
  auto c = cluster::load_cluster(cmd.show);
  if (!c) return report(c.error());
  if (cmd.json) {
    show_json(*c);
  } else {
    show_text(*c);
  }
  return 0;
}

}  // namespace cleave::cli
