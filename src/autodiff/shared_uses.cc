#include "autodiff/shared_uses.h"

#include <algorithm>
#include <map>

namespace cleave::autodiff {
namespace {

// The slot of `index` when it is the plain variable, else -1.
int plain_slot(tdl::BoundIndex const& index) {
  bool plain = index.kind == tdl::BoundIndex::Kind::linear && index.constant == 0 &&
               index.children.empty() && index.var_terms.size() == 1 &&
               index.var_terms[0].second == 1;
  return plain ? index.var_terms[0].first : -1;
}

// Whether an access reads slot s only as the plain leading index of a stacked input, including
// the accesses inside a gather's index (an embedding's ids).
struct StackReads {
  int s = -1;
  std::vector<bool> stacked;  // per input

  bool access(std::vector<tdl::BoundIndex> const& indices, bool stacked_input) const {
    for (std::size_t k = 0; k < indices.size(); ++k) {
      bool ok = stacked_input && k == 0 ? plain_slot(indices[k]) == s : index(indices[k]);
      if (!ok) return false;
    }
    return true;
  }
  bool index(tdl::BoundIndex const& ix) const {
    if (ix.kind == tdl::BoundIndex::Kind::gather)
      return access(ix.children, stacked[static_cast<std::size_t>(ix.input)]);
    if (std::any_of(ix.var_terms.begin(), ix.var_terms.end(),
                    [&](auto const& term) { return term.first == s; }))
      return false;
    return std::all_of(ix.children.begin(), ix.children.end(),
                       [&](tdl::BoundIndex const& c) { return index(c); });
  }
  bool expr(tdl::BoundExpr const& e) const {
    if (e.kind == tdl::BoundExpr::Kind::var && e.slot == s) return false;
    if (e.kind == tdl::BoundExpr::Kind::access &&
        !access(e.indices, stacked[static_cast<std::size_t>(e.input)]))
      return false;
    return std::all_of(e.args.begin(), e.args.end(),
                       [&](tdl::BoundExpr const& a) { return expr(a); });
  }
};

// Whether `op` applied to its inputs stacked `n` deep (the inputs at `positions` excepted) is the
// same statement over one more parallel dimension that indexes only the stacks' and the output's
// new leading axis, so that its output is the stack of the outputs.
bool uniform_over_stacks(ir::Graph const& g, ops::OpRegistry const& registry, ir::Op const& op,
                         std::vector<std::size_t> const& positions, std::int64_t n) {
  if (op.outputs.size() != 1) return false;
  auto stacked = [&](std::size_t i) {
    return std::find(positions.begin(), positions.end(), i) == positions.end();
  };
  std::vector<ir::TensorType> types;
  for (std::size_t i = 0; i < op.inputs.size(); ++i) {
    ir::TensorType t = g.tensor(op.inputs[i]).type;
    if (stacked(i)) t.shape.insert(t.shape.begin(), n);
    types.push_back(std::move(t));
  }
  auto single = registry.bind(g, op.id);
  auto batched = registry.bind(op.type, op.attrs, types);
  if (!single || !batched) return false;
  tdl::BoundOp const& b = **batched;
  ir::Shape out = g.tensor(op.outputs[0]).type.shape;
  out.insert(out.begin(), n);
  if (b.output_type().shape != out || b.dims().size() != (*single)->dims().size() + 1 ||
      b.reducer() != (*single)->reducer())
    return false;
  StackReads reads{plain_slot(b.output_indices()[0]), {}};
  for (std::size_t i = 0; i < op.inputs.size(); ++i)
    reads.stacked.push_back(stacked(i));
  if (reads.s < 0 || reads.s >= b.num_parallel() || !reads.expr(b.body())) return false;
  for (std::size_t k = 1; k < b.output_indices().size(); ++k)
    if (!reads.index(b.output_indices()[k])) return false;
  return true;
}

}  // namespace

std::vector<SharedUse> shared_uses(ir::Graph const& forward, ops::OpRegistry const& registry,
                                   std::vector<bool> const& shared) {
  // Uses keyed by everything a batched use must agree on: type, attributes, types, and which
  // shared tensor sits at which input.
  std::map<std::string, SharedUse> by_key;
  std::vector<std::string> keys;
  for (ir::OpId id : forward.topo_order()) {
    ir::Op const& op = forward.op(id);
    SharedUse use{{id}, {}};
    std::string key = op.type + "|" + op.attrs.to_string();
    for (std::size_t i = 0; i < op.inputs.size(); ++i) {
      key += "|" + ir::type_to_string(forward.tensor(op.inputs[i]).type);
      if (!shared[op.inputs[i].value()]) continue;
      use.positions.push_back(i);
      key += "=" + std::to_string(op.inputs[i].value());
    }
    if (use.positions.empty()) continue;
    auto [it, fresh] = by_key.try_emplace(key, std::move(use));
    if (fresh)
      keys.push_back(key);
    else
      it->second.ops.push_back(id);
  }
  std::vector<SharedUse> out;
  for (auto const& key : keys) {
    SharedUse& use = by_key[key];
    auto n = static_cast<std::int64_t>(use.ops.size());
    if (n >= 2 && uniform_over_stacks(forward, registry, forward.op(use.ops[0]), use.positions, n))
      out.push_back(std::move(use));
  }
  return out;
}

}  // namespace cleave::autodiff
