#include "search/tofu/comm_model.h"

#include <algorithm>
#include <array>
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

// A fetch the lowering would emit: (pass, source, destination, region), flat and allocation-free
// so that deduplicating many of them stays cheap. Fetches of the two passes never merge.
constexpr std::size_t kMaxRank = 8;
struct Fetch {
  bool late = false;
  int from = 0;
  int to = 0;
  std::array<std::int64_t, 2 * kMaxRank> bounds{};
  auto key() const { return std::tie(late, from, to, bounds); }
  bool operator<(Fetch const& o) const { return key() < o.key(); }
  bool operator==(Fetch const& o) const { return key() == o.key(); }
};

std::int64_t fetch_volume(Fetch const& f) {
  std::int64_t v = 1;
  for (std::size_t d = 0; d < 2 * kMaxRank && f.bounds[d + 1] != f.bounds[d]; d += 2)
    v *= f.bounds[d + 1] - f.bounds[d];
  return v;
}

// What `reads` fetch from blocks on other devices, listed (the lowering's deliver()).
void list_fetches(std::vector<Block> const& blocks, std::vector<Read> const& reads,
                  std::vector<Fetch>& out) {
  for (auto const& r : reads)
    for (auto const& block : blocks) {
      if (block.device == r.device) continue;
      tdl::Box part = tdl::intersect(*r.region, block.box);
      if (tdl::box_volume(part) == 0) continue;
      CLEAVE_ASSERT(part.size() <= kMaxRank, "tensor rank above 8");
      Fetch f{r.late, block.device, r.device, {}};
      for (std::size_t d = 0; d < part.size(); ++d) {
        f.bounds[2 * d] = part[d].lo;
        f.bounds[2 * d + 1] = part[d].hi;
      }
      out.push_back(f);
    }
}

// What a tensor factor's table is made of: the scope (mixed radix, the first node most
// significant; the holder's node first) and the strategy counts; holders[s], the holder's blocks
// under its strategy s; reads[i][s], what reader i reads under its node's strategy s, and
// reader_pos[i] its node's position in the scope.
struct TableParts {
  std::vector<int> const& scope;
  std::vector<int> const& counts;
  std::vector<BlockIndex> const& holders;
  std::vector<std::vector<std::vector<Read>>> const& reads;
  std::vector<std::size_t> const& reader_pos;
};

// Calls fill(entry, digits, changed) on every entry in order, `changed` the first scope position
// whose digit differs from the previous entry's (0 for the first).
template <typename Fill> std::vector<std::int64_t> fill_table(TableParts const& t, Fill fill) {
  std::size_t width = t.scope.size();
  std::vector<int> digits(width, 0);
  std::vector<std::int64_t> table(static_cast<std::size_t>(table_size(t.scope, t.counts)));
  std::size_t changed = 0;
  for (auto& entry : table) {
    fill(entry, digits, changed);
    changed = width;
    while (changed-- > 0) {
      if (++digits[changed] < t.counts[static_cast<std::size_t>(t.scope[changed])]) break;
      digits[changed] = 0;
    }
  }
  return table;
}

// The table with every fetch listed: each (reader, strategy, holder strategy) fetches a list of
// regions and an entry is the union of its readers' lists. Fetches are numbered once, and the
// union is built scope position by position: after an odometer step only the lists of the
// readers at the changed positions are walked again. The lists grow with the square of the
// devices (a region read whole by every piece is fetched from every block).
std::vector<std::int64_t> listed_table(TableParts const& t) {
  std::size_t nh = t.holders.size();
  std::vector<Fetch> all;
  std::vector<std::size_t> list_start;
  std::vector<std::size_t> first_list(t.reads.size());
  for (std::size_t i = 0; i < t.reads.size(); ++i) {
    first_list[i] = list_start.size();
    for (auto const& reads : t.reads[i])
      for (auto const& holder : t.holders) {
        list_start.push_back(all.size());
        list_fetches(holder.blocks(), reads, all);
      }
  }
  list_start.push_back(all.size());
  std::vector<std::size_t> order(all.size());
  for (std::size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return all[a] < all[b] || (all[a] == all[b] && a < b);
  });
  std::vector<int> id_of(all.size());
  std::vector<std::int64_t> volume_of;
  for (std::size_t j = 0; j < order.size(); ++j) {
    if (j == 0 || !(all[order[j]] == all[order[j - 1]]))
      volume_of.push_back(fetch_volume(all[order[j]]));
    id_of[order[j]] = static_cast<int>(volume_of.size() - 1);
  }
  // mark[id]: the position and pass that counted fetch id; it counts for this entry while that
  // position's pass is current.
  std::size_t width = t.scope.size();
  std::vector<std::vector<std::size_t>> at_position(width);
  for (std::size_t i = 0; i < t.reads.size(); ++i)
    at_position[t.reader_pos[i]].push_back(i);
  std::vector<std::pair<std::size_t, std::size_t>> mark(volume_of.size(), {0, 0});
  std::vector<std::size_t> pass(width, 0);
  std::vector<std::int64_t> sum(width + 1, 0);  // sum[p + 1]: positions 0..p's union
  std::size_t passes = 0;
  return fill_table(
      t, [&](std::int64_t& entry, std::vector<int> const& digits, std::size_t changed) {
        auto hs = static_cast<std::size_t>(digits[0]);
        for (std::size_t p = changed; p < width; ++p) {
          pass[p] = ++passes;
          sum[p + 1] = sum[p];
          for (std::size_t i : at_position[p]) {
            std::size_t list = first_list[i] + static_cast<std::size_t>(digits[p]) * nh + hs;
            for (std::size_t j = list_start[list]; j < list_start[list + 1]; ++j) {
              auto& [at, by] = mark[static_cast<std::size_t>(id_of[j])];
              if (at <= p && pass[at] == by && by != 0) continue;
              at = p;
              by = pass[p];
              sum[p + 1] += volume_of[static_cast<std::size_t>(id_of[j])];
            }
          }
        }
        entry = sum[width];
      });
}

// The table counted by BlockIndex: an entry costs its reads, whatever the number of blocks.
std::vector<std::int64_t> counted_table(TableParts const& t) {
  std::vector<Read> reads;
  return fill_table(t, [&](std::int64_t& entry, std::vector<int> const& digits, std::size_t) {
    reads.clear();
    for (std::size_t i = 0; i < t.reads.size(); ++i) {
      auto const& r = t.reads[i][static_cast<std::size_t>(digits[t.reader_pos[i]])];
      reads.insert(reads.end(), r.begin(), r.end());
    }
    entry = t.holders[static_cast<std::size_t>(digits[0])].fetched_elements(reads);
  });
}

// A tensor factor's table: per entry, the elements its readers fetch, identical fetches once;
// listed up to `max_listed_pairs` (read, block) pairs, counted past them (WResNet-152 on 8
// devices: 1.2 s of search listed, 3.8 s counted; GPT-3 on 256 devices: 46 s listed, 14 s
// counted; the plans the same).
std::vector<std::int64_t> union_table(TableParts const& t, std::int64_t max_listed_pairs) {
  std::int64_t reads = 0, blocks = 0;
  for (auto const& reader : t.reads)
    for (auto const& r : reader)
      reads += static_cast<std::int64_t>(r.size());
  for (auto const& h : t.holders)
    blocks += static_cast<std::int64_t>(h.blocks().size());
  return reads * blocks <= max_listed_pairs ? listed_table(t) : counted_table(t);
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
  auto by_box = [](tdl::Box const* a, tdl::Box const* b) { return lower::box_less(*a, *b); };
  std::map<tdl::Box const*, std::size_t, decltype(by_box)> group_of(by_box);
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
  std::int64_t max_listed_pairs;
  // Per op, its signature and candidates: ops with equal keys have equal tables.
  std::vector<std::string> op_key;
  TableCache tables;
  Request r;
  RequestStats& stats;
  int node(ir::OpId op) const { return c.node_of_op[op.value()]; }
};

Request CommModel::request(Candidates const& c, std::int64_t max_factor_entries,
                           RequestStats* stats, std::int64_t max_listed_pairs) const {
  RequestStats local;
  Building b{c, max_factor_entries, max_listed_pairs, {}, {}, {}, stats ? *stats : local};
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
    // Per reader, its position in the scope and its reads under each of its node's strategies.
    std::vector<std::size_t> reader_pos;
    std::vector<std::vector<std::vector<Read>>> reads;
    for (auto const* rd : set) {
      reader_pos.push_back(position(b.node(rd->op)));
      reads.emplace_back();
      for (auto const& cfg : b.c.configs[rd->op.value()])
        add_reads({&pieces(rd->op, cfg), &cfg.devices, &rd->positions, rd->late},
                  reads.back().emplace_back());
    }
    f.table =
        union_table({f.scope, b.r.num_strategies, holders, reads, reader_pos}, b.max_listed_pairs);
    for (auto& entry : f.table)
      entry *= ir::dtype_bytes(t.type.dtype);
    b.stats.entries += static_cast<std::int64_t>(f.table.size());
    b.tables.emplace(std::move(key), f.table);
    b.r.factors.push_back(std::move(f));
  }
}

}  // namespace cleave::search::tofu
