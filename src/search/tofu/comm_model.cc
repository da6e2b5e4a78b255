#include "search/tofu/comm_model.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "lower/program.h"
#include "support/assert.h"

namespace cleave::search::tofu {
namespace {

// One reader's pieces under one configuration.
struct ReaderView {
  std::vector<tdl::PieceInfo> const* pieces;
  std::vector<int> const* devices;
  std::vector<std::size_t> const* positions;
  bool late = false;  // the reader's fetches belong to the tensor's late part
};

// What one reader's pieces read of the tensor (the lowering's deliver() fetches each region's
// parts held elsewhere).
void add_reads(ReaderView const& r, std::vector<Read>& out) {
  for (std::size_t k = 0; k < r.pieces->size(); ++k)
    for (std::size_t pos : *r.positions) {
      auto const& region = (*r.pieces)[k].inputs[pos];
      if (!region.empty()) out.push_back({r.late, (*r.devices)[k], &region.box});
    }
}

std::string degrees_key(plan::OpConfig const& c) {
  std::string key;
  for (auto d : c.degrees)
    key += std::to_string(d) + ",";
  return key;
}

// Candidate configurations as text: with an op's signature, all a cost table depends on.
std::string candidates_key(std::vector<plan::OpConfig> const& configs) {
  std::string key;
  for (auto const& c : configs) {
    key += degrees_key(c) + ":";
    for (int d : c.devices)
      key += std::to_string(d) + ",";
    key += ";";
  }
  return key;
}

// Tables already computed in one request, by what they price: repeated layers (ResNet's blocks,
// GPT's layers) have identical tables, each computed once per step.
using TableCache = std::map<std::string, std::vector<std::int64_t>>;

// Product of the strategy counts of `scope` (a size only compared to limits).
double table_size(std::vector<int> const& scope, std::vector<int> const& counts) {
  double size = 1;
  for (int n : scope)
    size *= counts[static_cast<std::size_t>(n)];
  return size;
}

// Per DP node, its number of strategies: the candidates of each of its ops.
std::vector<int> strategy_counts(Candidates const& c) {
  int nodes = 0;
  for (int n : c.node_of_op)
    nodes = std::max(nodes, n + 1);
  std::vector<int> out(static_cast<std::size_t>(nodes), 0);
  for (std::size_t op = 0; op < c.configs.size(); ++op) {
    int& n = out[static_cast<std::size_t>(c.node_of_op[op])];
    CLEAVE_ASSERT(n == 0 || n == static_cast<int>(c.configs[op].size()),
                  "ops tied to one node need the same number of candidates");
    n = static_cast<int>(c.configs[op].size());
  }
  return out;
}

// Each node's own cost: reducing its ops' partial outputs.
void add_reduce_factors(CommModel const& model, Candidates const& c,
                        std::vector<std::string> const& op_key, TableCache& tables, Request& r) {
  std::vector<Factor> unary(r.num_strategies.size());
  for (auto const& op : model.graph().ops()) {
    int node = c.node_of_op[op.id.value()];
    auto& f = unary[static_cast<std::size_t>(node)];
    auto const& cands = c.configs[op.id.value()];
    if (f.scope.empty()) {
      f.scope = {node};
      f.table.assign(cands.size(), 0);
    }
    auto [it, added] = tables.try_emplace("reduce|" + op_key[op.id.value()]);
    if (added)
      for (auto const& cand : cands)
        it->second.push_back(model.layout(op.id, cand).reduce_bytes);
    for (std::size_t s = 0; s < cands.size(); ++s)
      f.table[s] += it->second[s];
  }
  for (auto& f : unary)
    if (!f.scope.empty()) r.factors.push_back(std::move(f));
}

// A tensor factor's table over `scope` (mixed radix, the first node most significant; the
// holder's node first): per entry, the bytes its readers fetch, identical fetches once (as the
// lowering emits them). reader_pos[i] is reader i's position in the scope and views[i][s] reader
// i under its node's strategy s; holders[s] the holder's blocks under its strategy s.
std::vector<std::int64_t> union_table(std::vector<BlockIndex> const& holders,
                                      std::vector<std::vector<ReaderView>> const& views,
                                      std::vector<std::size_t> const& reader_pos,
                                      std::vector<int> const& scope, std::vector<int> const& counts,
                                      std::int64_t elem) {
  std::vector<std::vector<std::vector<Read>>> reads(views.size());
  for (std::size_t i = 0; i < views.size(); ++i)
    for (auto const& view : views[i])
      add_reads(view, reads[i].emplace_back());
  std::size_t width = scope.size();
  std::vector<int> digits(width, 0);
  std::vector<Read> entry_reads;
  std::vector<std::int64_t> table(static_cast<std::size_t>(table_size(scope, counts)));
  for (auto& entry : table) {
    entry_reads.clear();
    for (std::size_t i = 0; i < views.size(); ++i) {
      auto const& r = reads[i][static_cast<std::size_t>(digits[reader_pos[i]])];
      entry_reads.insert(entry_reads.end(), r.begin(), r.end());
    }
    entry = holders[static_cast<std::size_t>(digits[0])].fetched_elements(entry_reads) * elem;
    std::size_t i = width;
    while (i-- > 0) {
      if (++digits[i] < counts[static_cast<std::size_t>(scope[i])]) break;
      digits[i] = 0;
    }
  }
  return table;
}

}  // namespace

Expected<CommModel> CommModel::create(ir::Graph const& graph, ops::OpRegistry const& registry,
                                      plan::FetchPolicy fetch) {
  CommModel m;
  m.graph_ = &graph;
  m.fetch_ = fetch;
  std::map<std::string, std::shared_ptr<tdl::BoundOp const>> by_signature;
  for (auto const& op : graph.ops()) {
    std::string sig = op.type + "|" + op.attrs.to_string();
    for (auto t : op.inputs)
      sig += "|" + ir::type_to_string(graph.tensor(t).type);
    auto it = by_signature.find(sig);
    if (it == by_signature.end()) {
      CLEAVE_TRY(auto bound, registry.bind(graph, op.id));
      it = by_signature.emplace(sig, std::move(bound)).first;
    }
    m.bound_.push_back(it->second);
    m.signature_.push_back(std::move(sig));
  }
  m.holder_.resize(graph.num_tensors());
  m.readers_.resize(graph.num_tensors());
  for (auto const& t : graph.tensors()) {
    ir::OpId p = graph.producer(t.id);
    if (p.valid()) {
      m.holder_[t.id.value()] = p;
    } else {
      // The lowering's update_of: the op that writes a weight's or state's next value.
      for (ir::OpId c : graph.consumers(t.id)) {
        ir::Op const& op = graph.op(c);
        auto role = graph.tensor(op.outputs[0]).role;
        if (op.forward.valid() && op.inputs[0] == t.id &&
            (role == ir::TensorRole::weight || role == ir::TensorRole::optimizer_state)) {
          m.holder_[t.id.value()] = c;
          break;
        }
      }
    }
    // The lowering's pass_of: under per_pass, backward and optimizer ops read a forward or source
    // tensor in its late part.
    bool forward_or_source =
        fetch == plan::FetchPolicy::per_pass && (!p.valid() || !graph.op(p).forward.valid());
    for (ir::OpId c : graph.consumers(t.id)) {
      auto& readers = m.readers_[t.id.value()];
      if (!readers.empty() && readers.back().op == c) continue;
      Reader r{c, {}, forward_or_source && graph.op(c).forward.valid()};
      auto const& inputs = graph.op(c).inputs;
      for (std::size_t i = 0; i < inputs.size(); ++i)
        if (inputs[i] == t.id) r.positions.push_back(i);
      readers.push_back(std::move(r));
    }
  }
  return m;
}

std::vector<tdl::PieceInfo> const& CommModel::pieces(ir::OpId op,
                                                     plan::OpConfig const& config) const {
  std::string key = signature_[op.value()] + "#" + degrees_key(config);
  auto it = pieces_.find(key);
  if (it != pieces_.end()) return *it->second;
  auto infos = std::make_shared<std::vector<tdl::PieceInfo>>();
  auto const& b = bound(op);
  for (auto const& box : plan::piece_boxes(b, config)) {
    auto info = tdl::analyze_piece(b, box);
    CLEAVE_ASSERT(info.has_value(), "a candidate configuration has an invalid piece");
    infos->push_back(std::move(*info));
  }
  return *pieces_.emplace(key, std::move(infos)).first->second;
}

// The lowering's placement of an op's output: pieces' regions, or for partial pieces the
// reduce-scatter's parts (cut along lower::scatter_dimension, one per distinct device of
// the pieces that share the region, in piece order).
OpLayout CommModel::layout(ir::OpId op, plan::OpConfig const& config) const {
  auto const& infos = pieces(op, config);
  OpLayout out;
  std::int64_t elem = ir::dtype_bytes(graph_->tensor(graph_->op(op).outputs[0]).type.dtype);
  // The pieces by output region, regions in order of first appearance (found by a map: a
  // search of the groups so far made this quadratic in the pieces).
  std::vector<std::pair<tdl::Box const*, std::vector<std::size_t>>> groups;
  auto box_less = [](tdl::Box const* a, tdl::Box const* b) {
    return std::lexicographical_compare(a->begin(), a->end(), b->begin(), b->end(),
                                        [](tdl::Interval x, tdl::Interval y) {
                                          return std::tie(x.lo, x.hi) < std::tie(y.lo, y.hi);
                                        });
  };
  std::map<tdl::Box const*, std::size_t, decltype(box_less)> group_of(box_less);
  for (std::size_t k = 0; k < infos.size(); ++k) {
    auto [it, added] = group_of.try_emplace(&infos[k].output, groups.size());
    if (added) groups.push_back({&infos[k].output, {}});
    groups[it->second].second.push_back(k);
  }
  for (auto const& [region, members] : groups) {
    if (!infos[members[0]].partial) {
      out.blocks.push_back({*region, config.devices[members[0]]});
      continue;
    }
    std::vector<int> targets;
    for (std::size_t k : members)
      if (std::find(targets.begin(), targets.end(), config.devices[k]) == targets.end())
        targets.push_back(config.devices[k]);
    std::vector<tdl::Box> parts{*region};
    if (!region->empty()) {
      std::size_t cut = lower::scatter_dimension(*region, targets.size());
      std::int64_t cuts =
          std::min<std::int64_t>(static_cast<std::int64_t>(targets.size()), (*region)[cut].size());
      parts = tdl::split_evenly(*region, static_cast<int>(cut), cuts);
    }
    for (std::size_t j = 0; j < parts.size(); ++j) {
      int target = targets[j];
      for (std::size_t k : members)
        if (config.devices[k] != target) out.reduce_bytes += tdl::box_volume(parts[j]) * elem;
      out.blocks.push_back({parts[j], target});
    }
  }
  return out;
}

std::int64_t CommModel::tensor_bytes(
    ir::TensorId t, plan::OpConfig const* holder_config,
    std::vector<std::pair<ir::OpId, plan::OpConfig const*>> const& readers) const {
  auto h = holder(t);
  if (!h) return 0;
  CLEAVE_ASSERT(holder_config != nullptr, "a held tensor needs its holder's configuration");
  std::vector<Read> reads;
  for (auto const& [op, config] : readers)
    for (auto const& r : readers_[t.value()])
      if (r.op == op)
        add_reads({&pieces(op, *config), &config->devices, &r.positions, r.late}, reads);
  return BlockIndex(layout(*h, *holder_config).blocks).fetched_elements(reads) *
         ir::dtype_bytes(graph_->tensor(t).type.dtype);
}

std::int64_t CommModel::evaluate(std::vector<plan::OpConfig> const& configs) const {
  std::int64_t total = 0;
  for (auto const& op : graph_->ops())
    total += layout(op.id, configs[op.id.value()]).reduce_bytes;
  for (auto const& t : graph_->tensors()) {
    auto h = holder(t.id);
    if (!h) continue;
    std::vector<std::pair<ir::OpId, plan::OpConfig const*>> readers;
    for (auto const& r : readers_[t.id.value()])
      readers.push_back({r.op, &configs[r.op.value()]});
    total += tensor_bytes(t.id, &configs[h->value()], readers);
  }
  return total;
}

// What request() builds, shared by its parts.
struct CommModel::Building {
  Candidates const& c;
  std::int64_t max_factor_entries;
  // Per op, its signature and candidates: ops with equal keys have equal tables.
  std::vector<std::string> op_key;
  TableCache tables;
  Request r;
  RequestStats& stats;
  int node(ir::OpId op) const { return c.node_of_op[op.value()]; }
};

Request CommModel::request(Candidates const& c, std::int64_t max_factor_entries,
                           RequestStats* stats) const {
  RequestStats local;
  Building b{c, max_factor_entries, {}, {}, {}, stats ? *stats : local};
  b.r.num_strategies = strategy_counts(c);
  b.op_key.resize(graph_->num_ops());
  for (auto const& op : graph_->ops())
    b.op_key[op.id.value()] =
        signature_[op.id.value()] + "#" + candidates_key(c.configs[op.id.value()]);
  add_reduce_factors(*this, c, b.op_key, b.tables, b.r);
  for (auto const& t : graph_->tensors())
    add_tensor_factors(t, b);
  return std::move(b.r);
}

// All of t's readers in one set, or (the factor would pass max_factor_entries) the readers of
// each node in a set of their own.
std::vector<std::vector<CommModel::Reader const*>>
CommModel::reader_sets(ir::TensorId t, ir::OpId holder, Building& b) const {
  auto const& readers = readers_[t.value()];
  std::vector<std::vector<Reader const*>> sets(1);
  std::vector<int> all{b.node(holder)};
  for (auto const& rd : readers) {
    sets[0].push_back(&rd);
    all.push_back(b.node(rd.op));
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  if (table_size(all, b.r.num_strategies) <= static_cast<double>(b.max_factor_entries)) {
    ++b.stats.tensor_factors;
    return sets;
  }
  std::map<int, std::vector<Reader const*>> by_node;
  for (auto const& rd : readers)
    by_node[b.node(rd.op)].push_back(&rd);
  sets.clear();
  for (auto& [n, list] : by_node)
    sets.push_back(std::move(list));
  ++b.stats.split_factors;
  return sets;
}

void CommModel::add_tensor_factors(ir::Tensor const& t, Building& b) const {
  auto h = holder(t.id);
  if (!h || readers_[t.id.value()].empty()) return;
  std::vector<BlockIndex> holders;
  for (auto const& set : reader_sets(t.id, *h, b)) {
    Factor f;
    f.scope = {b.node(*h)};
    for (auto const* rd : set)
      if (std::find(f.scope.begin(), f.scope.end(), b.node(rd->op)) == f.scope.end())
        f.scope.push_back(b.node(rd->op));
    auto position = [&](int n) {
      return static_cast<std::size_t>(std::find(f.scope.begin(), f.scope.end(), n) -
                                      f.scope.begin());
    };
    std::string key = "tensor|" + b.op_key[h->value()];
    for (auto const* rd : set) {
      key += "|" + std::to_string(position(b.node(rd->op))) + ":" + b.op_key[rd->op.value()] + "@";
      for (auto p : rd->positions)
        key += std::to_string(p) + ",";
      if (rd->late) key += "late";
    }
    auto cached = b.tables.find(key);
    if (cached != b.tables.end()) {
      f.table = cached->second;
      b.r.factors.push_back(std::move(f));
      continue;
    }
    if (holders.empty())
      for (auto const& cfg : b.c.configs[h->value()])
        holders.emplace_back(layout(*h, cfg).blocks);
    // Per reader, its position in the scope and its view under each of its node's strategies.
    std::vector<std::size_t> reader_pos;
    std::vector<std::vector<ReaderView>> reader_views;
    for (auto const* rd : set) {
      reader_pos.push_back(position(b.node(rd->op)));
      reader_views.emplace_back();
      for (auto const& cfg : b.c.configs[rd->op.value()])
        reader_views.back().push_back(
            {&pieces(rd->op, cfg), &cfg.devices, &rd->positions, rd->late});
    }
    f.table = union_table(holders, reader_views, reader_pos, f.scope, b.r.num_strategies,
                          ir::dtype_bytes(t.type.dtype));
    b.stats.entries += static_cast<std::int64_t>(f.table.size());
    b.tables.emplace(std::move(key), f.table);
    b.r.factors.push_back(std::move(f));
  }
}

}  // namespace cleave::search::tofu
