#include "search/tofu/solver.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <map>
#include <set>

#include "support/assert.h"

namespace cleave::search::tofu {
namespace {

constexpr std::int64_t kInf = std::numeric_limits<std::int64_t>::max() / 4;

// Product of the strategy counts of `scope`, saturating (a size only compared to limits).
double table_size(std::vector<int> const& scope, std::vector<int> const& n) {
  double size = 1;
  for (int v : scope)
    size *= n[static_cast<std::size_t>(v)];
  return size;
}

// A factor's entry for a full assignment.
std::size_t entry_index(std::vector<int> const& scope, std::vector<int> const& n,
                        std::vector<int> const& strategy) {
  std::size_t index = 0;
  for (int v : scope)
    index = index * static_cast<std::size_t>(n[static_cast<std::size_t>(v)]) +
            static_cast<std::size_t>(strategy[static_cast<std::size_t>(v)]);
  return index;
}

std::int64_t lookup(Factor const& f, std::vector<int> const& n, std::vector<int> const& strategy) {
  return f.table[entry_index(f.scope, n, strategy)];
}

// The same factor with its scope sorted (tables permuted), so equal scopes can be merged. Walks
// the sorted table in order with an odometer carrying the source offset: no division per entry
// (this ran once per factor per step and was a third of WResNet-152's solve time).
Factor canonical(Factor f, std::vector<int> const& n) {
  if (std::is_sorted(f.scope.begin(), f.scope.end())) return f;
  std::size_t m = f.scope.size();
  std::vector<std::size_t> order(m);
  for (std::size_t i = 0; i < m; ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return f.scope[a] < f.scope[b]; });
  // stride[i]: the source stride of sorted position i.
  std::vector<std::size_t> source_stride(m), stride(m), radix(m);
  std::size_t step = 1;
  for (std::size_t i = m; i-- > 0;) {
    source_stride[i] = step;
    step *= static_cast<std::size_t>(n[static_cast<std::size_t>(f.scope[i])]);
  }
  Factor out;
  for (std::size_t i = 0; i < m; ++i) {
    out.scope.push_back(f.scope[order[i]]);
    stride[i] = source_stride[order[i]];
    radix[i] = static_cast<std::size_t>(n[static_cast<std::size_t>(out.scope[i])]);
  }
  out.table.resize(f.table.size());
  std::vector<std::size_t> digits(m, 0);
  std::size_t source = 0;
  for (std::size_t index = 0; index < out.table.size(); ++index) {
    out.table[index] = f.table[source];
    for (std::size_t i = m; i-- > 0;) {
      if (++digits[i] < radix[i]) {
        source += stride[i];
        break;
      }
      digits[i] = 0;
      source -= stride[i] * (radix[i] - 1);
    }
  }
  return out;
}

// The innermost loops of eliminate() as a block of entries, and the factors read inside it.
struct LeafBlock {
  std::size_t entries = 0;
  std::size_t nv = 0;
  std::vector<std::int64_t const*> table;  // per leaf factor, its entry at the block's start
  std::vector<std::int64_t const*> rel;    // per leaf factor, each entry's offset from there
  std::vector<std::int64_t> v_stride;      // per leaf factor
  std::int64_t const* out_rel = nullptr;   // each entry's offset in the output
};

// For each entry of the block, the minimum over v's strategies of the partial sum `p` plus the
// leaf factors' entries, and (when `choice` is given) the first strategy reaching it. NV > 0
// fixes v's strategy count at compile time so the sums stay in registers (the common counts,
// 2-8); NV == 0 is any count.
template <std::size_t NV>
void min_over_block(LeafBlock const& b, std::int64_t const* p, std::int64_t* out,
                    std::uint8_t* choice, std::int64_t* scratch) {
  std::size_t const nv = NV > 0 ? NV : b.nv;
  std::int64_t local[NV > 0 ? NV : 1];
  std::int64_t* sum = NV > 0 ? local : scratch;
  std::size_t const leaves = b.table.size();
  for (std::size_t j = 0; j < b.entries; ++j) {
    for (std::size_t s = 0; s < nv; ++s)
      sum[s] = p[s];
    for (std::size_t x = 0; x < leaves; ++x) {
      std::int64_t const* q = b.table[x] + b.rel[x][j];
      std::int64_t vs = b.v_stride[x];
      for (std::size_t s = 0; s < nv; ++s)
        sum[s] += q[static_cast<std::int64_t>(s) * vs];
    }
    std::int64_t best = sum[0];
    for (std::size_t s = 1; s < nv; ++s)
      best = std::min(best, sum[s]);
    out[b.out_rel[j]] = best;
    if (choice) {
      // The first strategy at the minimum, without branches (ties are common and unpredictable).
      std::size_t first = nv - 1;
      for (std::size_t s = nv - 1; s-- > 0;)
        first = sum[s] == best ? s : first;
      choice[b.out_rel[j]] = static_cast<std::uint8_t>(first);
    }
  }
}

using BlockKernel = void (*)(LeafBlock const&, std::int64_t const*, std::int64_t*, std::uint8_t*,
                             std::int64_t*);

BlockKernel block_kernel(std::size_t nv) {
  static constexpr BlockKernel fixed[] = {min_over_block<0>, min_over_block<1>, min_over_block<2>,
                                          min_over_block<3>, min_over_block<4>, min_over_block<5>,
                                          min_over_block<6>, min_over_block<7>, min_over_block<8>};
  return nv < std::size(fixed) ? fixed[nv] : min_over_block<0>;
}

// eliminate()'s loop order over the output scope's positions: the largest factor's nodes first,
// then the next largest's new ones, so that large tables are read about once per entry and the
// innermost loops read small ones that stay in cache. `stride[f * m + pos]` is nonzero where
// factor f has the node at pos; level[f] becomes how many loops fix all of f's nodes.
std::vector<std::size_t> loop_order(std::vector<Factor const*> const& bucket,
                                    std::vector<std::int64_t> const& stride, std::size_t m,
                                    std::vector<std::size_t>& level) {
  std::size_t k = bucket.size();
  std::vector<std::size_t> by_size(k), order;
  for (std::size_t f = 0; f < k; ++f)
    by_size[f] = f;
  std::stable_sort(by_size.begin(), by_size.end(), [&](std::size_t a, std::size_t b) {
    return bucket[a]->table.size() > bucket[b]->table.size();
  });
  std::vector<bool> placed(m, false);
  for (std::size_t f : by_size)
    for (std::size_t pos = 0; pos < m; ++pos)
      if (stride[f * m + pos] != 0 && !placed[pos]) {
        placed[pos] = true;
        order.push_back(pos);
      }
  level.assign(k, 0);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t f = 0; f < k; ++f)
      if (stride[f * m + order[i]] != 0) level[f] = i + 1;
  return order;
}

// Minimises node v out of `bucket` (factors that all mention v): a factor over the union of
// their scopes without v.
//
// Issue 5: this was one loop over the output's entries reading every factor for every strategy
// of v, plus an odometer over every factor, per entry (half of WResNet-152's search). Now the
// scope is looped over in loop_order(), each factor's entries for all strategies of v are added
// once at the loop where its last node is fixed (partial sums), and the innermost loops form a
// block whose offsets are tabulated once: the per-entry work is a few adds and a min. Summing in
// another order changes no value (integers), so the tables, and the plans, are those of the
// plain loop. `choice`, when given, receives v's first best strategy per output entry.
Factor eliminate(std::vector<Factor const*> const& bucket, int v, std::vector<int> const& n,
                 std::vector<std::uint8_t>* choice) {
  std::vector<int> scope;
  for (auto const* f : bucket)
    scope.insert(scope.end(), f->scope.begin(), f->scope.end());
  std::sort(scope.begin(), scope.end());
  scope.erase(std::unique(scope.begin(), scope.end()), scope.end());
  scope.erase(std::find(scope.begin(), scope.end(), v));
  std::size_t m = scope.size(), k = bucket.size();
  auto radix = [&](std::size_t pos) {
    return static_cast<std::int64_t>(n[static_cast<std::size_t>(scope[pos])]);
  };
  // stride[f * m + pos]: factor f's stride for scope position pos (0 when it lacks that node).
  std::vector<std::int64_t> stride(k * m, 0), v_stride(k, 0);
  for (std::size_t f = 0; f < k; ++f) {
    std::int64_t step = 1;
    for (std::size_t i = bucket[f]->scope.size(); i-- > 0;) {
      int node = bucket[f]->scope[i];
      if (node == v)
        v_stride[f] = step;
      else
        stride[f * m + static_cast<std::size_t>(std::lower_bound(scope.begin(), scope.end(), node) -
                                                scope.begin())] = step;
      step *= n[static_cast<std::size_t>(node)];
    }
  }
  Factor out;
  out.scope = scope;
  std::vector<std::int64_t> out_stride(m);
  std::int64_t size = 1;
  for (std::size_t pos = m; pos-- > 0;) {
    out_stride[pos] = size;
    size *= radix(pos);
  }
  out.table.resize(static_cast<std::size_t>(size));  // every entry is written below
  if (choice) choice->resize(static_cast<std::size_t>(size));
  std::vector<std::size_t> level;
  std::vector<std::size_t> order = loop_order(bucket, stride, m, level);
  auto nv = static_cast<std::size_t>(n[static_cast<std::size_t>(v)]);
  // The innermost loops form a block of up to kBlock entries whose offsets are tabulated once, so
  // the odometer and the partial sums below run once per block rather than once per entry.
  constexpr std::int64_t kBlock = 256;
  std::size_t outer = m;
  std::int64_t block = 1;
  while (outer > 0 && (outer == m || block * radix(order[outer - 1]) <= kBlock))
    block *= radix(order[--outer]);
  std::vector<std::vector<std::size_t>> at_level(outer + 1);
  std::vector<std::size_t> leaf;
  for (std::size_t f = 0; f < k; ++f)
    (level[f] > outer ? leaf : at_level[level[f]]).push_back(f);
  // Per leaf factor (and for the output), the offset of each block entry from the block's start.
  auto block_size = static_cast<std::size_t>(block);
  std::vector<std::int64_t> rel((leaf.size() + 1) * block_size, 0);
  {
    std::vector<std::int64_t> digits(m - outer, 0), at(leaf.size() + 1, 0);
    for (std::size_t j = 0; j < block_size; ++j) {
      for (std::size_t x = 0; x <= leaf.size(); ++x)
        rel[x * block_size + j] = at[x];
      for (std::size_t i = m; i-- > outer;) {
        std::size_t pos = order[i];
        std::int64_t delta = ++digits[i - outer] < radix(pos) ? 1 : -(radix(pos) - 1);
        if (delta < 0) digits[i - outer] = 0;
        for (std::size_t x = 0; x < leaf.size(); ++x)
          at[x] += delta * stride[leaf[x] * m + pos];
        at[leaf.size()] += delta * out_stride[pos];
        if (delta > 0) break;
      }
    }
  }
  std::vector<std::int64_t> offset(k, 0);
  // partial[l * nv + s]: the factors complete within l outer loops, for strategy s of v.
  std::vector<std::int64_t> partial((outer + 1) * nv, 0);
  auto add_level = [&](std::size_t l) {
    std::int64_t* p = partial.data() + l * nv;
    for (std::size_t s = 0; s < nv; ++s)
      p[s] = l > 0 ? (p - nv)[s] : 0;
    for (std::size_t f : at_level[l]) {
      std::int64_t const* t = bucket[f]->table.data() + offset[f];
      for (std::size_t s = 0; s < nv; ++s)
        p[s] += t[static_cast<std::int64_t>(s) * v_stride[f]];
    }
  };
  for (std::size_t l = 0; l <= outer; ++l)
    add_level(l);
  LeafBlock lb;
  lb.entries = block_size;
  lb.nv = nv;
  lb.table.resize(leaf.size());
  for (std::size_t x = 0; x < leaf.size(); ++x) {
    lb.rel.push_back(rel.data() + x * block_size);
    lb.v_stride.push_back(v_stride[leaf[x]]);
  }
  lb.out_rel = rel.data() + leaf.size() * block_size;
  BlockKernel kernel = block_kernel(nv);
  std::vector<std::int64_t> digits(outer, 0), scratch(nv);
  std::int64_t out_offset = 0;
  while (true) {
    for (std::size_t x = 0; x < leaf.size(); ++x)
      lb.table[x] = bucket[leaf[x]]->table.data() + offset[leaf[x]];
    kernel(lb, partial.data() + outer * nv, out.table.data() + out_offset,
           choice ? choice->data() + out_offset : nullptr, scratch.data());
    // Odometer over the outer loops, the last fastest; partial sums from the changed loop on.
    std::size_t i = outer;
    while (i-- > 0) {
      std::size_t pos = order[i];
      std::int64_t delta = ++digits[i] < radix(pos) ? 1 : -(radix(pos) - 1);
      if (delta < 0) digits[i] = 0;
      for (std::size_t f = 0; f < k; ++f)
        offset[f] += delta * stride[f * m + pos];
      out_offset += delta * out_stride[pos];
      if (delta > 0) break;
    }
    if (i == static_cast<std::size_t>(-1)) break;
    for (std::size_t l = i + 1; l <= outer; ++l)
      add_level(l);
  }
  return out;
}

// What back-substitution needs of one elimination: v's best strategy per assignment of its
// neighbours (`scope`, mixed radix as a Factor's table), or, when the bucket was split into
// mini-buckets, the bucket itself.
struct Step {
  std::vector<int> scope;
  std::vector<std::uint8_t> choice;
  std::vector<Factor> bucket;
};

class Eliminator {
 public:
  explicit Eliminator(Request const& r) : n_(r.num_strategies), node_factors_(n_.size()) {
    for (auto const& f : r.factors)
      add(canonical(f, n_));
    for (std::size_t v = 0; v < n_.size(); ++v)
      queue_.insert({score(static_cast<int>(v)), static_cast<int>(v)});
    limit_ = r.max_table_entries;
    keep_going_ = r.keep_going;
  }

  Result run() {
    Result result;
    std::vector<int> order;
    while (!queue_.empty()) {
      int v = queue_.begin()->second;
      queue_.erase(queue_.begin());
      order.push_back(v);
      std::vector<int> bucket_ids = node_factors_[static_cast<std::size_t>(v)];
      std::set<int> neighbours;
      for (int id : bucket_ids) {
        for (int u : factors_[static_cast<std::size_t>(id)].scope)
          if (u != v) neighbours.insert(u);
        detach(id);
      }
      for (int u : neighbours)
        queue_.erase({scores_[static_cast<std::size_t>(u)], u});
      std::vector<Factor> bucket;
      for (int id : bucket_ids)
        bucket.push_back(std::move(factors_[static_cast<std::size_t>(id)]));
      result.largest_scope =
          std::max(result.largest_scope, static_cast<int>(neighbours.size()) + 1);
      auto parts = mini_buckets(bucket, v);
      // An exact step keeps only v's best strategy per assignment of its neighbours (a byte per
      // entry) instead of its bucket's tables: WResNet-152 kept every table it ever built.
      bool keep_choice = parts.size() == 1 && n_[static_cast<std::size_t>(v)] <= 256;
      Step step;
      for (auto const& part : parts) {
        Factor f = eliminate(part, v, n_, keep_choice ? &step.choice : nullptr);
        if (keep_choice) step.scope = f.scope;
        if (f.scope.empty())
          constant_ += f.table[0];
        else
          add(std::move(f));
      }
      if (!keep_choice) step.bucket = std::move(bucket);
      steps_.push_back(std::move(step));
      for (int u : neighbours)
        queue_.insert({score(u), u});
      if (keep_going_ && limit_ > 0 && !keep_going_()) limit_ = 0;
    }
    result.exact = exact_;
    result.lower_bound = constant_;
    // Back-substitution, last eliminated first: every other node of a bucket is chosen already.
    // v takes the first strategy minimising its bucket's sum: read from the step's choice table,
    // or summed from the bucket it kept.
    result.strategy.assign(n_.size(), 0);
    for (std::size_t i = order.size(); i-- > 0;) {
      int v = order[i];
      Step const& step = steps_[i];
      if (step.bucket.empty()) {
        result.strategy[static_cast<std::size_t>(v)] =
            step.choice[entry_index(step.scope, n_, result.strategy)];
        continue;
      }
      std::int64_t best = kInf;
      int choice = 0;
      for (int s = 0; s < n_[static_cast<std::size_t>(v)]; ++s) {
        result.strategy[static_cast<std::size_t>(v)] = s;
        std::int64_t sum = 0;
        for (auto const& f : step.bucket)
          sum += lookup(f, n_, result.strategy);
        if (sum < best) {
          best = sum;
          choice = s;
        }
      }
      result.strategy[static_cast<std::size_t>(v)] = choice;
    }
    return result;
  }

 private:
  // Edge elimination: a factor with the scope of an existing one is added into it.
  void add(Factor f) {
    auto it = by_scope_.find(f.scope);
    if (it != by_scope_.end()) {
      auto& into = factors_[static_cast<std::size_t>(it->second)].table;
      for (std::size_t i = 0; i < into.size(); ++i)
        into[i] += f.table[i];
      return;
    }
    if (f.scope.empty()) {
      constant_ += f.table[0];
      return;
    }
    int id = static_cast<int>(factors_.size());
    by_scope_[f.scope] = id;
    for (int v : f.scope)
      node_factors_[static_cast<std::size_t>(v)].push_back(id);
    factors_.push_back(std::move(f));
  }

  void detach(int id) {
    auto const& f = factors_[static_cast<std::size_t>(id)];
    by_scope_.erase(f.scope);
    for (int u : f.scope) {
      auto& list = node_factors_[static_cast<std::size_t>(u)];
      list.erase(std::find(list.begin(), list.end(), id));
    }
  }

  // Size of the table eliminating v would build (OptCNN eliminates cheap nodes first: a node on
  // a chain costs |C|^3).
  double score(int v) {
    std::vector<int> scope{v};
    for (int id : node_factors_[static_cast<std::size_t>(v)])
      for (int u : factors_[static_cast<std::size_t>(id)].scope)
        scope.push_back(u);
    std::sort(scope.begin(), scope.end());
    scope.erase(std::unique(scope.begin(), scope.end()), scope.end());
    double s = table_size(scope, n_);
    scores_.resize(n_.size());
    scores_[static_cast<std::size_t>(v)] = s;
    return s;
  }

  // The bucket whole when its table fits the limit; else groups of factors whose union does.
  std::vector<std::vector<Factor const*>> mini_buckets(std::vector<Factor> const& bucket, int v) {
    std::vector<int> all;
    for (auto const& f : bucket)
      all.insert(all.end(), f.scope.begin(), f.scope.end());
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    std::vector<std::vector<Factor const*>> parts;
    if (table_size(all, n_) <= static_cast<double>(limit_)) {
      parts.emplace_back();
      for (auto const& f : bucket)
        parts.back().push_back(&f);
      return parts;
    }
    exact_ = false;
    std::vector<std::vector<int>> scopes;
    for (auto const& f : bucket) {
      bool placed = false;
      for (std::size_t p = 0; p < parts.size() && !placed; ++p) {
        std::vector<int> merged = scopes[p];
        merged.insert(merged.end(), f.scope.begin(), f.scope.end());
        std::sort(merged.begin(), merged.end());
        merged.erase(std::unique(merged.begin(), merged.end()), merged.end());
        if (table_size(merged, n_) <= static_cast<double>(limit_)) {
          parts[p].push_back(&f);
          scopes[p] = merged;
          placed = true;
        }
      }
      if (!placed) {
        parts.push_back({&f});
        scopes.push_back(f.scope);
      }
    }
    (void)v;
    return parts;
  }

  std::vector<int> n_;
  std::vector<Factor> factors_;
  std::map<std::vector<int>, int> by_scope_;
  std::vector<std::vector<int>> node_factors_;
  std::vector<double> scores_;
  std::set<std::pair<double, int>> queue_;
  std::vector<Step> steps_;  // per elimination, in order
  std::int64_t constant_ = 0;
  std::int64_t limit_ = 0;  // 0 once keep_going_ said false: every factor its own mini-bucket
  std::function<bool()> keep_going_;
  bool exact_ = true;
};

}  // namespace

std::string check_request(Request const& request) {
  auto nodes = request.num_strategies.size();
  for (std::size_t v = 0; v < nodes; ++v)
    if (request.num_strategies[v] < 1)
      return "node " + std::to_string(v) + " has no strategy; give every node at least one";
  for (std::size_t i = 0; i < request.factors.size(); ++i) {
    auto const& f = request.factors[i];
    std::vector<int> sorted = f.scope;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
      return "factor " + std::to_string(i) + " names a node twice in its scope";
    std::size_t size = 1;
    for (int v : f.scope) {
      if (v < 0 || static_cast<std::size_t>(v) >= nodes)
        return "factor " + std::to_string(i) + " names node " + std::to_string(v) + ", not in 0.." +
               std::to_string(nodes - 1);
      size *= static_cast<std::size_t>(request.num_strategies[static_cast<std::size_t>(v)]);
    }
    if (f.table.size() != size)
      return "factor " + std::to_string(i) + " has " + std::to_string(f.table.size()) +
             " entries; its scope needs " + std::to_string(size);
  }
  return "";
}

std::int64_t evaluate(Request const& request, std::vector<int> const& strategy) {
  CLEAVE_ASSERT(strategy.size() == request.num_strategies.size(), "one strategy per node");
  std::int64_t total = 0;
  for (auto const& f : request.factors)
    total += lookup(f, request.num_strategies, strategy);
  return total;
}

Result solve(Request const& request) {
  CLEAVE_ASSERT(check_request(request).empty(), "a malformed DP request");
  Result result = Eliminator(request).run();
  result.cost = evaluate(request, result.strategy);
  if (result.exact)
    CLEAVE_ASSERT(result.cost == result.lower_bound, "exact elimination disagrees with evaluate");
  return result;
}

Result solve_exhaustive(Request const& request) {
  CLEAVE_ASSERT(check_request(request).empty(), "a malformed DP request");
  auto const& n = request.num_strategies;
  std::vector<int> s(n.size(), 0);
  Result best;
  best.cost = kInf;
  while (true) {
    std::int64_t c = evaluate(request, s);
    if (c < best.cost) {
      best.cost = c;
      best.strategy = s;
    }
    std::size_t i = n.size();
    while (i > 0 && ++s[i - 1] == n[i - 1])
      s[--i] = 0;
    if (i == 0) break;
  }
  best.lower_bound = best.cost;
  return best;
}

}  // namespace cleave::search::tofu
