#include "search/tofu/tofu.h"

#include <optional>
#include <tuple>

#include "search/common/plan_util.h"
#include "search/common/progress.h"
#include "sim/evaluate.h"
#include "support/assert.h"

namespace cleave::search::tofu {

std::vector<std::int64_t> factor_ways(std::int64_t k) {
  std::vector<std::int64_t> out;
  for (std::int64_t p = 2; p * p <= k; ++p)
    while (k % p == 0) {
      out.push_back(p);
      k /= p;
    }
  if (k > 1) out.push_back(k);
  std::sort(out.rbegin(), out.rend());
  return out;
}

plan::OpConfig config_from_history(tdl::BoundOp const& op, std::vector<int> const& history,
                                   std::vector<std::int64_t> const& ways) {
  auto const& dims = op.dims();
  plan::OpConfig c;
  c.degrees.assign(dims.size(), 1);
  for (std::size_t t = 0; t < history.size(); ++t)
    if (history[t] >= 0) c.degrees[static_cast<std::size_t>(history[t])] *= ways[t];
  // weight[t]: what a part at step t adds to the device group number.
  std::vector<std::int64_t> weight(history.size(), 1);
  for (std::size_t t = history.size(); t-- > 1;)
    weight[t - 1] = weight[t] * ways[t];
  std::int64_t pieces = 1;
  for (auto d : c.degrees)
    pieces *= d;
  c.devices.resize(static_cast<std::size_t>(pieces));
  for (std::int64_t p = 0; p < pieces; ++p) {
    // Index along each dimension -> the part at each step that cut it (mixed radix, the earliest
    // step most significant).
    auto at = coordinates(p, c.degrees);
    std::int64_t group = 0;
    for (std::size_t d = dims.size(); d-- > 0;) {
      std::int64_t i = at[d];
      for (std::size_t t = history.size(); t-- > 0;) {
        if (history[t] != static_cast<int>(d)) continue;
        group += (i % ways[t]) * weight[t];
        i /= ways[t];
      }
    }
    c.devices[static_cast<std::size_t>(p)] = static_cast<int>(group);
  }
  return c;
}

Candidates step_candidates(CommModel const& model, Coarsening const& coarsening,
                           History const& history, std::vector<std::int64_t> const& ways,
                           std::vector<std::vector<int>>* cut_dims) {
  auto const& g = model.graph();
  std::size_t step = history.empty() ? 0 : history[0].size();
  CLEAVE_ASSERT(step < ways.size(), "no step left to take");
  std::int64_t k = ways[step];
  // The strategies of a node come from its first op that follows none: its other ops have the
  // same iteration space and have always been cut alike, and followers are projected from their
  // leaders.
  std::vector<std::vector<int>> node_dims(static_cast<std::size_t>(coarsening.num_nodes));
  std::vector<bool> seen(static_cast<std::size_t>(coarsening.num_nodes), false);
  for (auto const& op : g.ops()) {
    auto n = static_cast<std::size_t>(coarsening.node_of_op[op.id.value()]);
    if (seen[n] || coarsening.leader_of_op[op.id.value()] >= 0) continue;
    seen[n] = true;
    auto const& b = model.bound(op.id);
    auto current = config_from_history(b, history[op.id.value()], ways);
    for (std::size_t d = 0; d < b.dims().size(); ++d)
      if (b.dims()[d].splittable && current.degrees[d] * k <= b.dims()[d].extent)
        node_dims[n].push_back(static_cast<int>(d));
    if (node_dims[n].empty()) node_dims[n].push_back(-1);
  }
  Candidates c;
  c.node_of_op = coarsening.node_of_op;
  c.configs.resize(g.num_ops());
  cut_dims->assign(g.num_ops(), {});
  for (auto const& op : g.ops()) {
    auto const& dims = node_dims[static_cast<std::size_t>(coarsening.node_of_op[op.id.value()])];
    (*cut_dims)[op.id.value()] = dims;
    if (coarsening.leader_of_op[op.id.value()] >= 0) continue;
    auto h = history[op.id.value()];
    h.push_back(-1);
    for (int d : dims) {
      h.back() = d;
      c.configs[op.id.value()].push_back(config_from_history(model.bound(op.id), h, ways));
    }
  }
  project_followers(model, coarsening, c);
  return c;
}

std::vector<std::vector<std::int64_t>> step_sequences(std::int64_t k) {
  std::vector<std::vector<std::int64_t>> out;
  if (k <= 1) return {{}};
  for (std::int64_t first = k; first >= 2; --first) {
    if (k % first != 0) continue;
    for (auto rest : step_sequences(k / first)) {
      rest.insert(rest.begin(), first);
      out.push_back(std::move(rest));
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](auto const& a, auto const& b) { return a.size() < b.size(); });
  return out;
}

TofuResult tofu_search(CommModel const& model, int devices, TofuOptions const& options) {
  auto const& g = model.graph();
  auto ways = options.ways.empty() ? factor_ways(devices) : options.ways;
  std::int64_t product = 1;
  for (auto w : ways)
    product *= w;
  CLEAVE_ASSERT(product == std::max(devices, 1), "the steps' ways multiply to the device count");
  Coarsening coarsening = coarsen(model, options.coarsen);
  TofuResult out;
  out.history.assign(g.num_ops(), {});
  for (std::size_t s = 0; s < ways.size(); ++s) {
    std::vector<std::vector<int>> cut_dims;
    Candidates cands = step_candidates(model, coarsening, out.history, ways, &cut_dims);
    StepReport report;
    report.ways = ways[s];
    Request request = model.request(cands, options.max_factor_entries, &report.stats);
    request.max_table_entries = options.max_table_entries;
    bool cut = false;  // the DP finished approximately because keep_going said false
    if (options.keep_going)
      request.keep_going = [&] {
        cut = !options.keep_going(nullptr);
        return !cut;
      };
    Result r = solve(request);
    std::vector<plan::OpConfig> configs(g.num_ops());
    for (auto const& op : g.ops()) {
      auto choice = static_cast<std::size_t>(
          r.strategy[static_cast<std::size_t>(coarsening.node_of_op[op.id.value()])]);
      out.history[op.id.value()].push_back(cut_dims[op.id.value()][choice]);
      configs[op.id.value()] = cands.configs[op.id.value()][choice];
    }
    report.dp_bytes = r.cost;
    report.exact = r.exact && report.stats.split_factors == 0;
    report.nodes = static_cast<int>(request.num_strategies.size());
    report.largest_scope = r.largest_scope;
    // The request prices every tensor's fetches over all its readers unless a factor was split
    // (then it over-counts): its cost of the chosen strategies is the plan's bytes, and
    // evaluating the plan again would cost as much as the request.
    report.comm_bytes = report.stats.split_factors == 0 ? r.cost : model.evaluate(configs);
    out.steps.push_back(report);
    bool stop = options.keep_going && !options.keep_going(&out.steps.back());
    if (stop || s + 1 == ways.size()) {
      out.configs = std::move(configs);
      out.comm_bytes = report.comm_bytes;
      out.stopped = cut || (stop && s + 1 < ways.size());
      break;
    }
  }
  if (ways.empty())
    for (auto const& op : g.ops())
      out.configs.push_back(config_from_history(model.bound(op.id), {}, ways));
  return out;
}

namespace {

std::string ways_text(TofuResult const& r) {
  std::string steps;
  for (auto const& s : r.steps)
    steps += (steps.empty() ? "" : ",") + std::to_string(s.ways);
  return steps.empty() ? std::string("1") : steps;
}

std::string fetch_text(plan::FetchPolicy fetch) {
  return fetch == plan::FetchPolicy::per_pass ? "per-pass" : "shared";
}

plan::Plan plan_of(SearchContext const& ctx, TofuResult r, plan::FetchPolicy fetch) {
  std::string config = "ways=" + ways_text(r) + " fetch=" + fetch_text(fetch) +
                       " comm_bytes=" + std::to_string(r.comm_bytes);
  bool stopped = r.stopped;
  plan::Plan p = plan_from_configs(ctx, std::move(r.configs), fetch, std::move(config));
  p.provenance.budget_exhausted = stopped;
  return p;
}

TofuOptions dp_settings(Options const& options) {
  TofuOptions out;
  out.max_table_entries = options.integer("max_table_entries");
  out.max_factor_entries = options.integer("max_factor_entries");
  return out;
}

}  // namespace

std::vector<OptionSpec> dp_options() {
  TofuOptions defaults;
  return {{"max_table_entries",
           OptionType::integer,
           std::to_string(defaults.max_table_entries),
           "the largest DP table built exactly; wider buckets are approximated (solver.h)",
           {}},
          {"max_factor_entries",
           OptionType::integer,
           std::to_string(defaults.max_factor_entries),
           "the largest per-tensor cost factor; past it, one factor per reader (comm_model.h)",
           {}}};
}

std::vector<OptionSpec> tofu_options() {
  auto out = dp_options();
  out.insert(out.begin(),
             {{"ways",
               OptionType::integer_list,
               "",
               "the ways of each recursive step, multiplying to the device count (default: its "
               "prime factors, largest first)",
               {}},
              {"fetch",
               OptionType::choice,
               fetch_text(tofu_fetch),
               "what fetched copies serve: per-pass (the paper's) or shared (plan.h)",
               {"per-pass", "shared"}}});
  return out;
}

Expected<plan::Plan> tofu(SearchContext const& ctx, Options const& options) {
  auto fetch =
      options.choice("fetch") == "shared" ? plan::FetchPolicy::shared : plan::FetchPolicy::per_pass;
  auto devices = static_cast<std::int64_t>(ctx.cluster().num_devices());
  TofuOptions settings = dp_settings(options);
  settings.ways = options.integers("ways");
  std::int64_t product = 1;
  for (auto w : settings.ways)
    product = w >= 2 ? product * w : -1;
  if (!settings.ways.empty() && product != devices)
    return Error(ErrorCode::invalid_argument,
                 "option ways: every step's ways must be at least 2 and their product the " +
                     std::to_string(devices) + " devices of the cluster");
  CLEAVE_TRY(CommModel model, CommModel::create(ctx.graph, ctx.registry, fetch));
  SearchClock clock(ctx);
  settings.keep_going = [&](StepReport const* step) {
    if (step)
      clock.tick(std::nullopt, Bytes(step->comm_bytes));
    else
      clock.report();
    return !clock.exhausted();
  };
  TofuResult r = tofu_search(model, static_cast<int>(devices), settings);
  return plan_of(ctx, std::move(r), fetch);
}

// Every step sequence under both fetch policies: per-pass plans hold less, shared ones move less.
Expected<plan::Plan> tofu_ranked(SearchContext const& ctx, Options const& options) {
  auto devices = static_cast<std::int64_t>(ctx.cluster().num_devices());
  struct Ranked {
    plan::Plan plan;
    sim::Prediction prediction;
    std::int64_t comm_bytes = 0;
    std::string ways;
  };
  auto key = [](Ranked const& x) {
    std::int64_t peak = 0;
    for (auto b : x.prediction.peak_memory_bytes)
      peak = std::max(peak, b);
    return std::make_tuple(!x.prediction.fits, x.prediction.fits ? 0 : peak,
                           x.prediction.step_time_s, x.comm_bytes);
  };
  std::optional<Ranked> best;
  std::string tried;
  SearchClock clock(ctx);
  TofuOptions settings = dp_settings(options);
  // Within a candidate only time can run out (its iteration is counted when it is ranked).
  settings.keep_going = [&](StepReport const*) {
    clock.report();
    return !clock.exhausted();
  };
  auto sequences = step_sequences(devices);
  bool stopped = false;  // the budget left a candidate out or cut one short
  for (auto fetch : {plan::FetchPolicy::per_pass, plan::FetchPolicy::shared}) {
    if (stopped) break;
    CLEAVE_TRY(CommModel model, CommModel::create(ctx.graph, ctx.registry, fetch));
    for (auto const& sequence : sequences) {
      if (best && clock.exhausted()) {
        stopped = true;
        break;
      }
      settings.ways = sequence;
      TofuResult r = tofu_search(model, static_cast<int>(devices), settings);
      Ranked c{{}, {}, r.comm_bytes, ways_text(r) + "/" + fetch_text(fetch)};
      c.plan = plan_of(ctx, std::move(r), fetch);
      stopped = stopped || c.plan.provenance.budget_exhausted;
      c.plan.num_devices = static_cast<int>(devices);
      CLEAVE_TRY(auto evaluation,
                 sim::evaluate({ctx.graph, ctx.registry, c.plan, ctx.cost, ctx.batch}));
      c.prediction = std::move(evaluation.prediction);
      tried += (tried.empty() ? "" : ";") + c.ways + ":" +
               std::to_string(c.prediction.step_time_s) + "s" +
               (c.prediction.fits ? "" : "(does not fit)");
      if (!best || key(c) < key(*best)) best = std::move(c);
      clock.tick(Seconds(best->prediction.step_time_s));
    }
  }
  CLEAVE_ASSERT(best.has_value(), "at least one step sequence");
  best->plan.provenance.config += " ranked_by=simulated_step_time candidates=" + tried;
  best->plan.provenance.budget_exhausted = stopped;
  return std::move(best->plan);
}

}  // namespace cleave::search::tofu
