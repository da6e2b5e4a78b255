#include "cluster/cluster_json.h"

#include <map>
#include <optional>

#include "ir/text_format.h"
#include "support/file_io.h"
#include "support/hash.h"
#include "support/json_read.h"

namespace cleave::cluster {
namespace {

using ir::detail::append_double;
using ir::detail::append_int;
using ir::detail::append_quoted;
using json_read::json;

// ---- Writing. One node, device, switch or link per line keeps diffs of cluster files readable.

void append_key(std::string& out, std::string_view key) {
  append_quoted(out, key);
  out += ':';
}

template <typename T, typename F>
void append_list(std::string& out, std::string_view key, std::vector<T> const& items, F append) {
  out += ",\n";
  append_key(out, key);
  out += '[';
  for (std::size_t i = 0; i < items.size(); ++i) {
    out += i == 0 ? "\n" : ",\n";
    append(items[i]);
  }
  out += items.empty() ? "]" : "\n]";
}

std::string to_json(Cluster const& c, bool with_meta) {
  std::string out = "{";
  append_key(out, "format");
  append_quoted(out, cluster_format);
  if (with_meta) {
    out += ",\n";
    append_key(out, "name");
    append_quoted(out, c.name());
    append_list(out, "sources", c.sources(), [&](std::string const& s) { append_quoted(out, s); });
  }
  append_list(out, "nodes", c.nodes(), [&](Node const& n) {
    out += "{\"name\":";
    append_quoted(out, n.name);
    out += ",\"host_memory_bytes\":";
    append_int(out, n.host_memory.value());
    out += '}';
  });
  append_list(out, "devices", c.devices(), [&](Device const& d) {
    out += "{\"name\":";
    append_quoted(out, d.name);
    out += ",\"kind\":";
    append_quoted(out, d.kind);
    out += ",\"node\":";
    append_quoted(out, c.node(d.node).name);
    out += ",\"memory_bytes\":";
    append_int(out, d.memory.value());
    out += ",\"memory_bandwidth_bytes_per_s\":";
    append_double(out, d.memory_bandwidth.value());
    out += ",\"peak_flops_per_s\":{";
    bool first = true;
    for (auto const& [dtype, rate] : d.peak) {
      if (!first) out += ',';
      first = false;
      append_key(out, ir::dtype_name(dtype));
      append_double(out, rate.value());
    }
    out += "}}";
  });
  append_list(out, "switches", c.switches(), [&](Switch const& s) {
    out += "{\"name\":";
    append_quoted(out, s.name);
    out += ",\"kind\":";
    append_quoted(out, switch_kind_name(s.kind));
    if (s.node.valid()) {
      out += ",\"node\":";
      append_quoted(out, c.node(s.node).name);
    }
    out += '}';
  });
  append_list(out, "links", c.links(), [&](Link const& l) {
    out += "{\"kind\":";
    append_quoted(out, link_kind_name(l.kind));
    out += ",\"a\":";
    append_quoted(out, c.vertex_name(l.a));
    out += ",\"b\":";
    append_quoted(out, c.vertex_name(l.b));
    out += ",\"bandwidth_bytes_per_s\":";
    append_double(out, l.bandwidth.value());
    out += ",\"latency_s\":";
    append_double(out, l.latency.value());
    out += '}';
  });
  out += "}\n";
  return out;
}

// ---- Reading: a DOM is fine, cluster files are small. Every accessor names where it is.

using json_read::check_keys;
using json_read::content_error;
using json_read::get_array;
using json_read::get_number;
using json_read::get_string;
using json_read::type_name;

Expected<std::int64_t> get_bytes(json const& obj, std::string_view key, std::string const& where) {
  return json_read::get_integer(obj.at(key), where + ", key '" + std::string(key) + "'",
                                "an integer number of bytes");
}

std::string item_where(std::string_view what, std::size_t i, json const& item) {
  std::string out = std::string(what) + " " + std::to_string(i);
  if (item.is_object() && item.contains("name") && item["name"].is_string())
    out += " ('" + item["name"].get<std::string>() + "')";
  return out;
}

Expected<ClusterParts> parts_from_json(json const& root) {
  if (!root.is_object() || !root.contains("format"))
    return Error(ErrorCode::parse_error, "not a cleave cluster: no \"format\": \"" +
                                             std::string(cluster_format) +
                                             "\"; the file may be from another tool");
  if (!root["format"].is_string() || root["format"] != cluster_format)
    return Error(ErrorCode::unsupported, "the file's format is " + root["format"].dump() +
                                             " but cleave reads \"" + std::string(cluster_format) +
                                             "\"; the file may be from another tool or a newer "
                                             "cleave");
  CLEAVE_CHECK_OK(check_keys(
      root, "top level", {"format", "name", "sources", "nodes", "devices", "switches", "links"}));
  ClusterParts parts;
  CLEAVE_TRY(parts.name, get_string(root, "name", "top level"));
  CLEAVE_TRY(json const* sources, get_array(root, "sources"));
  for (std::size_t i = 0; i < sources->size(); ++i) {
    if (!(*sources)[i].is_string())
      return content_error("source " + std::to_string(i), "expected a string");
    parts.sources.push_back((*sources)[i].get<std::string>());
  }

  std::map<std::string, NodeId, std::less<>> node_ids;
  CLEAVE_TRY(json const* nodes, get_array(root, "nodes"));
  for (std::size_t i = 0; i < nodes->size(); ++i) {
    json const& n = (*nodes)[i];
    std::string where = item_where("node", i, n);
    CLEAVE_CHECK_OK(check_keys(n, where, {"name", "host_memory_bytes"}));
    Node node;
    CLEAVE_TRY(node.name, get_string(n, "name", where));
    CLEAVE_TRY(std::int64_t host, get_bytes(n, "host_memory_bytes", where));
    node.host_memory = Bytes(host);
    node_ids.emplace(node.name, NodeId(static_cast<NodeId::value_type>(i)));
    parts.nodes.push_back(std::move(node));
  }
  auto node_ref = [&](json const& obj, std::string const& where) -> Expected<NodeId> {
    CLEAVE_TRY(std::string name, get_string(obj, "node", where));
    auto it = node_ids.find(name);
    if (it == node_ids.end())
      return content_error(where + ", key 'node'", "no node is named '" + name + "'");
    return it->second;
  };

  CLEAVE_TRY(json const* devices, get_array(root, "devices"));
  for (std::size_t i = 0; i < devices->size(); ++i) {
    json const& d = (*devices)[i];
    std::string where = item_where("device", i, d);
    CLEAVE_CHECK_OK(check_keys(d, where,
                               {"name", "kind", "node", "memory_bytes",
                                "memory_bandwidth_bytes_per_s", "peak_flops_per_s"}));
    Device dev;
    CLEAVE_TRY(dev.name, get_string(d, "name", where));
    CLEAVE_TRY(dev.kind, get_string(d, "kind", where));
    CLEAVE_TRY(dev.node, node_ref(d, where));
    CLEAVE_TRY(std::int64_t memory, get_bytes(d, "memory_bytes", where));
    dev.memory = Bytes(memory);
    CLEAVE_TRY(double bw, get_number(d, "memory_bandwidth_bytes_per_s", where));
    dev.memory_bandwidth = BytesPerSecond(bw);
    json const& peak = d["peak_flops_per_s"];
    std::string peak_where = where + ", key 'peak_flops_per_s'";
    if (!peak.is_object())
      return content_error(peak_where,
                           "expected an object of dtype: FLOP/s, found " + type_name(peak));
    for (auto const& [name, rate] : peak.items()) {
      auto dtype = ir::parse_dtype(name);
      if (!dtype || !ir::is_floating(*dtype))
        return content_error(peak_where, "unknown dtype '" + name +
                                             "'; expected fp32, fp16 or "
                                             "bf16");
      if (!rate.is_number())
        return content_error(peak_where + ", '" + name + "'",
                             "expected a number, found " + type_name(rate));
      dev.peak[*dtype] = FlopsPerSecond(rate.get<double>());
    }
    parts.devices.push_back(std::move(dev));
  }

  CLEAVE_TRY(json const* switches, get_array(root, "switches"));
  for (std::size_t i = 0; i < switches->size(); ++i) {
    json const& s = (*switches)[i];
    std::string where = item_where("switch", i, s);
    CLEAVE_CHECK_OK(check_keys(s, where, {"name", "kind"}, {"node"}));
    Switch sw;
    CLEAVE_TRY(sw.name, get_string(s, "name", where));
    CLEAVE_TRY(std::string kind, get_string(s, "kind", where));
    auto k = parse_switch_kind(kind);
    if (!k)
      return content_error(where + ", key 'kind'",
                           "unknown switch kind '" + kind +
                               "'; expected nvswitch, pcie_switch, nic or network_switch");
    sw.kind = *k;
    if (s.contains("node")) {
      CLEAVE_TRY(sw.node, node_ref(s, where));
    }
    parts.switches.push_back(std::move(sw));
  }

  // Link endpoints by name: devices, hosts ("<node>/host") and switches, numbered as vertices.
  std::map<std::string, VertexId, std::less<>> vertex_ids;
  std::uint32_t next = 0;
  for (auto const& d : parts.devices)
    vertex_ids.emplace(d.name, VertexId(next++));
  for (auto const& n : parts.nodes)
    vertex_ids.emplace(n.name + "/host", VertexId(next++));
  for (auto const& s : parts.switches)
    vertex_ids.emplace(s.name, VertexId(next++));
  CLEAVE_TRY(json const* links, get_array(root, "links"));
  for (std::size_t i = 0; i < links->size(); ++i) {
    json const& l = (*links)[i];
    std::string where = "link " + std::to_string(i);
    CLEAVE_CHECK_OK(check_keys(l, where, {"kind", "a", "b", "bandwidth_bytes_per_s", "latency_s"}));
    Link link;
    CLEAVE_TRY(std::string kind, get_string(l, "kind", where));
    auto k = parse_link_kind(kind);
    if (!k)
      return content_error(where + ", key 'kind'",
                           "unknown link kind '" + kind +
                               "'; expected nvlink, pcie, nvswitch, infiniband, ethernet or host");
    link.kind = *k;
    for (auto [key, end] : {std::pair{"a", &link.a}, {"b", &link.b}}) {
      CLEAVE_TRY(std::string name, get_string(l, key, where));
      auto it = vertex_ids.find(name);
      if (it == vertex_ids.end())
        return content_error(where + ", key '" + key + "'",
                             "no device, switch or host is named '" + name +
                                 "' (a node's host is '<node>/host')");
      *end = it->second;
    }
    CLEAVE_TRY(double bw, get_number(l, "bandwidth_bytes_per_s", where));
    CLEAVE_TRY(double latency, get_number(l, "latency_s", where));
    link.bandwidth = BytesPerSecond(bw);
    link.latency = Seconds(latency);
    parts.links.push_back(link);
  }
  return parts;
}

}  // namespace

std::string cluster_to_json(Cluster const& cluster) {
  return to_json(cluster, /*with_meta=*/true);
}

Expected<Cluster> cluster_from_json(std::string_view text) {
  json root;
  try {
    root = json::parse(text.begin(), text.end());
  } catch (json::parse_error const& e) {
    return json_read::malformed_json(e, e.byte);
  }
  CLEAVE_TRY(ClusterParts parts, parts_from_json(root));
  return Cluster::create(std::move(parts));
}

Status save_cluster(Cluster const& cluster, std::string const& path) {
  return write_file_atomic(path, cluster_to_json(cluster));
}

Expected<Cluster> load_cluster_file(std::string const& path) {
  std::string context = "in cluster file '" + path + "'";
  auto text = read_file(path);
  if (!text) return std::move(text.error()).with_context(context);
  auto cluster = cluster_from_json(*text);
  if (!cluster) return std::move(cluster.error()).with_context(context);
  return cluster;
}

std::uint64_t fingerprint(Cluster const& cluster) {
  return fnv1a(to_json(cluster, /*with_meta=*/false));
}

std::string fingerprint_hex(Cluster const& cluster) {
  return fnv1a_hex(to_json(cluster, /*with_meta=*/false));
}

}  // namespace cleave::cluster
