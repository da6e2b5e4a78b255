#include "search/tofu/coarsen.h"

#include <numeric>
#include <regex>
#include <unordered_map>

namespace cleave::search::tofu {
namespace {

// index == slot (coefficient 1, no constant); -1 if it is a constant; -2 otherwise.
int plain_slot(tdl::BoundIndex const& index) {
  if (index.kind != tdl::BoundIndex::Kind::linear || !index.children.empty()) return -2;
  if (index.var_terms.empty()) return -1;
  if (index.var_terms.size() != 1 || index.constant != 0 || index.var_terms[0].second != 1)
    return -2;
  return index.var_terms[0].first;
}

bool same_space(tdl::BoundOp const& a, tdl::BoundOp const& b) {
  if (a.dims().size() != b.dims().size()) return false;
  for (std::size_t d = 0; d < a.dims().size(); ++d) {
    auto const &x = a.dims()[d], &y = b.dims()[d];
    if (x.extent != y.extent || x.splittable != y.splittable || x.kind != y.kind) return false;
  }
  return true;
}

// Reads input i with the identity map (every output dimension in order, nothing broadcast).
bool reads_whole(tdl::BoundOp const& op, std::size_t i) {
  for (auto const* access : op.accesses()[i]) {
    if (access->size() != static_cast<std::size_t>(op.num_parallel())) return false;
    for (std::size_t k = 0; k < access->size(); ++k)
      if (plain_slot((*access)[k]) != static_cast<int>(k)) return false;
  }
  return !op.accesses()[i].empty();
}

struct UnionFind {
  std::vector<int> parent;
  explicit UnionFind(std::size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int find(int x) {
    while (parent[static_cast<std::size_t>(x)] != x)
      x = parent[static_cast<std::size_t>(x)] =
          parent[static_cast<std::size_t>(parent[static_cast<std::size_t>(x)])];
    return x;
  }
  void unite(int a, int b) {
    a = find(a);
    b = find(b);
    if (a != b) parent[static_cast<std::size_t>(std::max(a, b))] = std::min(a, b);
  }
};

}  // namespace

bool is_elementwise(tdl::BoundOp const& op) {
  if (op.opaque() || op.reducer() != tdl::Reducer::none) return false;
  if (op.num_parallel() != static_cast<int>(op.dims().size())) return false;
  auto const& out = op.output_indices();
  for (std::size_t k = 0; k < out.size(); ++k)
    if (plain_slot(out[k]) != static_cast<int>(k)) return false;
  for (auto const& reads : op.accesses())
    for (auto const* access : reads)
      for (auto const& index : *access)
        if (plain_slot(index) == -2) return false;
  return true;
}

Coarsening coarsen(CommModel const& model, CoarsenOptions const& options) {
  auto const& g = model.graph();
  UnionFind uf(g.num_ops());
  if (options.tie_elementwise) {
    for (auto const& op : g.ops()) {
      auto const& b = model.bound(op.id);
      if (!is_elementwise(b)) continue;
      for (std::size_t i = 0; i < op.inputs.size(); ++i) {
        ir::OpId p = g.producer(op.inputs[i]);
        if (!p.valid() || !reads_whole(b, i)) continue;
        auto const& pb = model.bound(p);
        if (!is_elementwise(pb) || !same_space(b, pb)) continue;
        uf.unite(static_cast<int>(op.id.value()), static_cast<int>(p.value()));
        break;
      }
    }
  }
  if (options.tie_time_steps) {
    static std::regex const step(R"(step\d+)");
    std::unordered_map<std::string, int> first;
    for (auto const& op : g.ops()) {
      if (op.name.find("step") == std::string::npos) continue;
      std::string key = op.type + "|" + std::regex_replace(op.name, step, "step#");
      auto [it, added] = first.emplace(key, static_cast<int>(op.id.value()));
      if (!added && same_space(model.bound(op.id),
                               model.bound(ir::OpId(static_cast<std::uint32_t>(it->second)))))
        uf.unite(static_cast<int>(op.id.value()), it->second);
    }
  }
  Coarsening c;
  c.node_of_op.assign(g.num_ops(), -1);
  std::vector<int> node_of_root(g.num_ops(), -1);
  for (std::size_t op = 0; op < g.num_ops(); ++op) {
    int root = uf.find(static_cast<int>(op));
    int& n = node_of_root[static_cast<std::size_t>(root)];
    if (n < 0) n = c.num_nodes++;
    c.node_of_op[op] = n;
  }
  return c;
}

}  // namespace cleave::search::tofu
