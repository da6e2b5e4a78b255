// The comparison points of Tofu's Fig. 10 (PAPERS.md §1) as plans: optcnn, allrow-greedy and
// equal-chop (tofu.h says what each does).
#include <functional>

#include "search/common/plan_util.h"
#include "search/common/progress.h"
#include "search/tofu/tofu.h"
#include "support/assert.h"

namespace cleave::search::tofu {
namespace {

// Every op on its own: `degrees` cut into pieces placed row-major on devices 0, 1, ...
plan::OpConfig row_major(std::vector<std::int64_t> degrees) {
  plan::OpConfig c;
  std::int64_t pieces = 1;
  for (auto d : degrees)
    pieces *= d;
  c.degrees = std::move(degrees);
  for (std::int64_t p = 0; p < pieces; ++p)
    c.devices.push_back(static_cast<int>(p));
  return c;
}

// Every way of cutting the splittable parallel dimensions of `op` into a number of pieces that
// divides k, keeping only those with the most pieces (k itself where possible).
std::vector<plan::OpConfig> parallel_cuts(tdl::BoundOp const& op, std::int64_t k) {
  std::vector<std::vector<std::int64_t>> found;
  std::int64_t best = 0;
  std::vector<std::int64_t> degrees(op.dims().size(), 1);
  std::function<void(std::size_t, std::int64_t)> visit = [&](std::size_t d, std::int64_t left) {
    if (d == static_cast<std::size_t>(op.num_parallel())) {
      std::int64_t pieces = k / left;
      if (pieces > best) {
        best = pieces;
        found.clear();
      }
      if (pieces == best) found.push_back(degrees);
      return;
    }
    auto const& dim = op.dims()[d];
    for (std::int64_t f = 1; f <= left; ++f) {
      if (left % f != 0 || (f > 1 && (!dim.splittable || f > dim.extent))) continue;
      degrees[d] = f;
      visit(d + 1, left / f);
    }
    degrees[d] = 1;
  };
  visit(0, k);
  std::vector<plan::OpConfig> out;
  for (auto& d : found)
    out.push_back(row_major(std::move(d)));
  return out;
}

}  // namespace

Expected<plan::Plan> optcnn(SearchContext const& ctx, Options const& options) {
  CLEAVE_TRY(CommModel model, CommModel::create(ctx.graph, ctx.registry, tofu_fetch));
  auto k = static_cast<std::int64_t>(ctx.cluster().num_devices());
  Coarsening coarsening = coarsen(model);
  Candidates c;
  c.node_of_op = coarsening.node_of_op;
  for (auto const& op : ctx.graph.ops())
    c.configs.push_back(parallel_cuts(model.bound(op.id), k));
  project_followers(model, coarsening, c);
  Request request = model.request(c, options.integer("max_factor_entries"));
  request.max_table_entries = options.integer("max_table_entries");
  SearchClock clock(ctx);
  bool stopped = false;
  request.keep_going = [&] {
    clock.tick(std::nullopt);
    stopped = clock.exhausted();
    return !stopped;
  };
  Result r = solve(request);
  std::vector<plan::OpConfig> configs;
  for (auto const& op : ctx.graph.ops())
    configs.push_back(c.configs[op.id.value()][static_cast<std::size_t>(
        r.strategy[static_cast<std::size_t>(c.node_of_op[op.id.value()])])]);
  std::int64_t bytes = model.evaluate(configs);
  plan::Plan p =
      plan_from_configs(ctx, std::move(configs), tofu_fetch,
                        "comm_bytes=" + std::to_string(bytes) + (r.exact ? "" : " approximate"));
  p.provenance.budget_exhausted = stopped;
  return p;
}

Expected<plan::Plan> allrow_greedy(SearchContext const& ctx) {
  CLEAVE_TRY(CommModel model, CommModel::create(ctx.graph, ctx.registry, tofu_fetch));
  auto const& g = ctx.graph;
  auto k = static_cast<std::int64_t>(ctx.cluster().num_devices());
  std::vector<plan::OpConfig> configs(g.num_ops());
  std::vector<bool> decided(g.num_ops(), false);
  for (ir::OpId id : g.topo_order()) {
    auto const& b = model.bound(id);
    std::vector<plan::OpConfig> cands;
    for (std::size_t d = 0; d < b.dims().size(); ++d) {
      if (!b.dims()[d].splittable || b.dims()[d].extent < k) continue;
      std::vector<std::int64_t> degrees(b.dims().size(), 1);
      degrees[d] = k;
      cands.push_back(row_major(std::move(degrees)));
      // The row: the dimension that writes the output's first dimension.
      if (!b.output_indices().empty() && b.output_indices()[0].var_terms.size() == 1 &&
          b.output_indices()[0].var_terms[0].first == static_cast<int>(d)) {
        cands = {cands.back()};
        break;
      }
    }
    if (cands.empty()) cands.push_back(row_major(std::vector<std::int64_t>(b.dims().size(), 1)));
    std::int64_t best = -1;
    for (auto const& cand : cands) {
      std::int64_t cost = model.layout(id, cand).reduce_bytes;
      for (auto t : g.op(id).inputs) {
        auto h = model.holder(t);
        if (h && decided[h->value()])
          cost += model.tensor_bytes(t, &configs[h->value()], {{id, &cand}});
      }
      if (best < 0 || cost < best) {
        best = cost;
        configs[id.value()] = cand;
      }
    }
    decided[id.value()] = true;
  }
  std::int64_t bytes = model.evaluate(configs);
  return plan_from_configs(ctx, std::move(configs), tofu_fetch,
                           "comm_bytes=" + std::to_string(bytes));
}

Expected<plan::Plan> equal_chop(SearchContext const& ctx) {
  CLEAVE_TRY(CommModel model, CommModel::create(ctx.graph, ctx.registry, tofu_fetch));
  auto const& g = ctx.graph;
  auto ways = factor_ways(static_cast<std::int64_t>(ctx.cluster().num_devices()));
  std::vector<plan::OpConfig> configs;
  for (auto const& op : g.ops()) {
    auto const& b = model.bound(op.id);
    std::vector<std::int64_t> degrees(b.dims().size(), 1);
    // Each factor of k goes to the splittable parallel dimension whose pieces are largest.
    for (auto f : ways) {
      int best = -1;
      for (int d = 0; d < b.num_parallel(); ++d) {
        auto const& dim = b.dims()[static_cast<std::size_t>(d)];
        auto u = static_cast<std::size_t>(d);
        if (!dim.splittable || degrees[u] * f > dim.extent) continue;
        if (best < 0 || dim.extent / degrees[u] > b.dims()[static_cast<std::size_t>(best)].extent /
                                                      degrees[static_cast<std::size_t>(best)])
          best = d;
      }
      if (best >= 0) degrees[static_cast<std::size_t>(best)] *= f;
    }
    configs.push_back(row_major(std::move(degrees)));
  }
  std::int64_t bytes = model.evaluate(configs);
  return plan_from_configs(ctx, std::move(configs), tofu_fetch,
                           "comm_bytes=" + std::to_string(bytes));
}

}  // namespace cleave::search::tofu
