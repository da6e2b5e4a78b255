// `cleave ops` (the op types and their attributes) and `cleave check-graph` (load and verify a
// cleave.graph/1 file).
#include <cstdio>
#include <fmt/format.h>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "ir/graph_json.h"
#include "support/format_bytes.h"

namespace cleave::cli {

int report(Error const& error) {
  std::fprintf(stderr, "%s\n", error.to_string().c_str());
  return 1;
}

namespace {

std::string attr_value_text(ir::AttrValue const& v) {
  ir::Attrs a;
  a.set("x", v);
  return a.to_string().substr(2);  // drop "x="
}

std::string inputs_text(ops::OpSchema const& s) {
  if (s.max_inputs < 0) return std::to_string(s.min_inputs) + "+";
  return std::to_string(s.min_inputs);
}

}  // namespace

int run_ops(ops::OpRegistry const& registry, bool json) {
  if (json) {
    auto list = nlohmann::json::array();
    for (auto const& name : registry.names()) {
      auto const* s = registry.find(name);
      auto attrs = nlohmann::json::array();
      for (auto const& a : s->attrs)
        attrs.push_back({{"name", a.name},
                         {"default", a.fallback ? attr_value_text(*a.fallback) : "(required)"},
                         {"doc", a.doc}});
      list.push_back({{"name", name},
                      {"summary", s->summary},
                      {"inputs", inputs_text(*s)},
                      {"attrs", std::move(attrs)},
                      {"custom", s->attrs_are_params}});
    }
    std::printf("%s\n", nlohmann::json{{"format", "cleave.ops/1"}, {"ops", list}}.dump(2).c_str());
    return 0;
  }
  for (auto const& name : registry.names()) {
    auto const* s = registry.find(name);
    std::printf("%-16s %s inputs  %s\n", name.c_str(), inputs_text(*s).c_str(), s->summary.c_str());
    for (auto const& a : s->attrs)
      std::printf("%-16s   %s = %s  %s\n", "", a.name.c_str(),
                  a.fallback ? attr_value_text(*a.fallback).c_str() : "(required)", a.doc.c_str());
  }
  std::printf("\n`cleave op NAME` shows an op's TDL and how it splits.\n");
  return 0;
}

int run_check_graph(ops::OpRegistry const& registry, CheckGraphCommand const& cmd) {
  auto graph = ir::load_graph(cmd.path, registry);
  if (!graph) return report(graph.error());
  std::map<std::string, std::int64_t> by_type;
  std::map<std::string, std::int64_t> bytes_by_role;
  for (auto const& op : graph->ops())
    ++by_type[op.type];
  for (auto const& t : graph->tensors())
    bytes_by_role[std::string(ir::role_name(t.role))] +=
        ir::num_elements(t.type.shape) * ir::dtype_bytes(t.type.dtype);
  if (cmd.json) {
    nlohmann::json j{{"format", "cleave.graph-check/1"},
                     {"path", cmd.path},
                     {"ok", true},
                     {"ops", graph->num_ops()},
                     {"tensors", graph->num_tensors()},
                     {"ops_by_type", by_type},
                     {"tensor_bytes_by_role", bytes_by_role}};
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("%s: ok, %zu ops, %zu tensors\n", cmd.path.c_str(), graph->num_ops(),
              graph->num_tensors());
  std::printf("ops by type:\n");
  for (auto const& [type, n] : by_type)
    std::printf("  %-16s %lld\n", type.c_str(), static_cast<long long>(n));
  std::printf("tensor bytes by role:\n");
  for (auto const& [role, bytes] : bytes_by_role)
    std::printf("  %-16s %s\n", role.c_str(), format_bytes(Bytes(bytes)).c_str());
  return 0;
}

}  // namespace cleave::cli
