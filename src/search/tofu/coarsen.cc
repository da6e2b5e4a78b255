#include "search/tofu/coarsen.h"

#include <algorithm>
#include <numeric>
#include <regex>
#include <unordered_map>

#include "support/assert.h"

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

// The half copy `op` makes of a weight under AMP: a forward cast of a weight, elementwise.
bool is_weight_cast(CommModel const& model, ir::Op const& op) {
  auto const& g = model.graph();
  return op.type == "cast" && !op.forward.valid() && op.inputs.size() == 1 &&
         g.tensor(op.inputs[0]).role == ir::TensorRole::weight &&
         is_elementwise(model.bound(op.id));
}

// Per dimension of the tensor leader reads as input `pos`, the leader dimension that indexes it
// as is in every access (-1: none, or the dimension already taken by an earlier one).
std::vector<int> indexing_dims(tdl::BoundOp const& leader, std::size_t pos, std::size_t rank) {
  std::vector<int> out(rank, -1);
  std::vector<bool> taken(leader.dims().size(), false);
  for (std::size_t j = 0; j < rank; ++j) {
    int d = -2;
    for (auto const* access : leader.accesses()[pos]) {
      int s = access->size() == rank ? plain_slot((*access)[j]) : -2;
      d = d == -2 || d == s ? s : -1;
    }
    if (d >= 0 && !taken[static_cast<std::size_t>(d)]) {
      out[j] = d;
      taken[static_cast<std::size_t>(d)] = true;
    }
  }
  return out;
}

// Ties each weight's half-copy cast to its first reader (a follower of it), and the ops that
// hold the weight (its update and the ops tied to it: the gradient's cast back, the optimizer's
// state) to the cast, whose iteration space they share, as copies of its configuration: the cast
// then reads the fp32 weight where it is (else every layer's cast fetches its weight at the
// start of the step, ahead of the activations the first layers wait for).
void tie_weight_casts(CommModel const& model, UnionFind& uf, std::vector<int>& leader_of_op) {
  auto const& g = model.graph();
  // The groups tied so far, by their roots before this tie.
  std::vector<int> root(g.num_ops());
  std::vector<std::vector<int>> groups(g.num_ops());
  for (std::size_t op = 0; op < g.num_ops(); ++op) {
    root[op] = uf.find(static_cast<int>(op));
    groups[static_cast<std::size_t>(root[op])].push_back(static_cast<int>(op));
  }
  for (auto const& op : g.ops()) {
    auto id = static_cast<int>(op.id.value());
    // A cast already tied to ops of its own space keeps that tie.
    if (!is_weight_cast(model, op) ||
        groups[static_cast<std::size_t>(root[op.id.value()])].size() > 1)
      continue;
    auto readers = g.consumers(op.outputs[0]);
    if (readers.empty()) continue;
    auto first = static_cast<int>(std::min_element(readers.begin(), readers.end())->value());
    leader_of_op[op.id.value()] = first;
    uf.unite(id, first);
    auto holder = model.holder(op.inputs[0]);
    if (!holder) continue;
    auto const& held = groups[static_cast<std::size_t>(root[holder->value()])];
    bool copies = std::all_of(held.begin(), held.end(), [&](int o) {
      return leader_of_op[static_cast<std::size_t>(o)] < 0 &&
             same_space(model.bound(ir::OpId(static_cast<std::uint32_t>(o))), model.bound(op.id));
    });
    if (!copies || uf.find(held.front()) == uf.find(id)) continue;
    for (int o : held)
      leader_of_op[static_cast<std::size_t>(o)] = id;
    uf.unite(id, held.front());
  }
}

}  // namespace

std::vector<std::int64_t> coordinates(std::int64_t p, std::vector<std::int64_t> const& degrees) {
  std::vector<std::int64_t> out(degrees.size());
  for (std::size_t d = degrees.size(); d-- > 0;) {
    out[d] = p % degrees[d];
    p /= degrees[d];
  }
  return out;
}

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
  c.leader_of_op.assign(g.num_ops(), -1);
  if (options.tie_weight_casts) tie_weight_casts(model, uf, c.leader_of_op);
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

plan::OpConfig follow_config(CommModel const& model, ir::OpId follower, ir::OpId leader,
                             plan::OpConfig const& leader_config) {
  auto const& g = model.graph();
  auto const& fb = model.bound(follower);
  auto const& ops = g.op(leader).inputs;
  auto pos = static_cast<std::size_t>(std::find(ops.begin(), ops.end(), g.op(follower).outputs[0]) -
                                      ops.begin());
  CLEAVE_ASSERT(pos < ops.size(), "a follower's leader reads its output");
  auto const& dims = fb.dims();
  auto map = indexing_dims(model.bound(leader), pos, dims.size());
  auto const& ld = leader_config.degrees;
  plan::OpConfig out;
  out.degrees.assign(dims.size(), 1);
  std::vector<bool> mapped(ld.size(), false);
  for (std::size_t j = 0; j < dims.size(); ++j) {
    if (map[j] >= 0 && !dims[j].splittable) map[j] = -1;
    if (map[j] < 0) continue;
    out.degrees[j] = ld[static_cast<std::size_t>(map[j])];
    mapped[static_cast<std::size_t>(map[j])] = true;
  }
  // The leader pieces that read one region: `replicas` of them, numbered row-major over the
  // unmapped cuts; they split the region along `spread`, preferably a dimension the leader
  // indexes (the blocks then refine the leader's cuts, which the weight's gradient arrives
  // along; GPT-3 on 64 H100s, casts and updates set after the DP: 11.27 s a step, against
  // 12.09 s along the largest dimension).
  std::int64_t replicas = 1;
  for (std::size_t d = 0; d < ld.size(); ++d)
    if (!mapped[d]) replicas *= ld[d];
  auto const rank = [&](std::size_t j) {
    return std::make_pair(map[j] >= 0, dims[j].extent / out.degrees[j]);
  };
  int spread = -1;
  for (std::size_t j = 0; j < dims.size() && replicas > 1; ++j)
    if (dims[j].splittable && out.degrees[j] * replicas <= dims[j].extent &&
        (spread < 0 || rank(j) > rank(static_cast<std::size_t>(spread))))
      spread = static_cast<int>(j);
  if (spread >= 0) out.degrees[static_cast<std::size_t>(spread)] *= replicas;
  std::int64_t pieces = 1;
  for (auto d : out.degrees)
    pieces *= d;
  out.devices.assign(static_cast<std::size_t>(pieces), -1);
  for (std::size_t p = 0; p < leader_config.devices.size(); ++p) {
    auto at = coordinates(static_cast<std::int64_t>(p), ld);
    std::int64_t replica = 0;
    for (std::size_t d = 0; d < ld.size(); ++d)
      if (!mapped[d]) replica = replica * ld[d] + at[d];
    if (spread < 0 && replica > 0) continue;  // the first replica's device holds the region
    std::int64_t index = 0;
    for (std::size_t j = 0; j < dims.size(); ++j) {
      std::int64_t x = map[j] >= 0 ? at[static_cast<std::size_t>(map[j])] : 0;
      if (static_cast<int>(j) == spread) x = x * replicas + replica;
      index = index * out.degrees[j] + x;
    }
    out.devices[static_cast<std::size_t>(index)] = leader_config.devices[p];
  }
  return out;
}

void project_followers(CommModel const& model, Coarsening const& coarsening, Candidates& c) {
  auto const& leader_of = coarsening.leader_of_op;
  auto leader = [&](std::size_t op) { return static_cast<std::size_t>(leader_of[op]); };
  // Casts first (their leaders follow none), then the copies of casts.
  for (bool copies : {false, true})
    for (std::size_t op = 0; op < leader_of.size(); ++op) {
      if (leader_of[op] < 0 || (leader_of[leader(op)] >= 0) != copies) continue;
      auto& configs = c.configs[op];
      if (copies) {
        configs = c.configs[leader(op)];
        continue;
      }
      configs.clear();
      for (auto const& lc : c.configs[leader(op)])
        configs.push_back(follow_config(model, ir::OpId(static_cast<std::uint32_t>(op)),
                                        ir::OpId(static_cast<std::uint32_t>(leader(op))), lc));
    }
}

}  // namespace cleave::search::tofu
