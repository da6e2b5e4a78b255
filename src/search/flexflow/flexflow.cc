#include "search/flexflow/flexflow.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <utility>

#include "lower/program.h"
#include "search/baselines/baselines.h"
#include "search/common/plan_util.h"
#include "search/common/progress.h"
#include "search/flexflow/config_space.h"
#include "search/tofu/tofu.h"
#include "sim/delta.h"
#include "support/assert.h"

namespace cleave::search::flexflow {
namespace {

// What a chain minimises, and how the best plan is chosen.
struct Score {
  bool fits = true;
  double step = 0;  // predicted step time, s
  double cost = 0;  // step * (1 + memory overflow): what acceptance compares
};

Score score_of(sim::Prediction const& p) {
  double over = 0;
  for (std::size_t d = 0; d < p.peak_memory_bytes.size(); ++d) {
    auto cap = static_cast<double>(p.memory_capacity_bytes[d]);
    auto peak = static_cast<double>(p.peak_memory_bytes[d]);
    if (peak > cap) over += (peak - cap) / cap;
  }
  return {p.fits, p.step_time_s, p.step_time_s * (1 + over)};
}

// A fitting plan beats every plan that does not fit; among plans that do not, the one less over.
bool better(Score const& a, Score const& b) {
  if (a.fits != b.fits) return a.fits;
  return a.fits ? a.step < b.step : a.cost < b.cost;
}

// FlexFlow's propagation for one op: its neighbour across the edge with the most bytes, and the
// pairs (neighbour dimension, op dimension) that index the same dimension of that tensor.
struct Propagation {
  ir::OpId from;
  std::vector<std::pair<std::size_t, std::size_t>> dims;
};

// Per dimension of tensor `t`, the dimension of `op`'s iteration space that indexes it alone
// (coefficient 1), if one does: through the output's indices, or the first read of an input.
std::vector<std::optional<std::size_t>> dims_indexing(ir::Op const& op, tdl::BoundOp const& bound,
                                                      ir::TensorId t) {
  std::vector<tdl::BoundIndex> const* indices = nullptr;
  if (op.outputs[0] == t) indices = &bound.output_indices();
  for (std::size_t i = 0; !indices && i < op.inputs.size() && i < bound.accesses().size(); ++i)
    if (op.inputs[i] == t && !bound.accesses()[i].empty()) indices = bound.accesses()[i][0];
  std::vector<std::optional<std::size_t>> out;
  if (!indices) return out;
  for (auto const& index : *indices) {
    bool alone = index.kind == tdl::BoundIndex::Kind::linear && index.children.empty() &&
                 index.var_terms.size() == 1 && index.var_terms[0].second == 1 &&
                 index.var_terms[0].first < static_cast<int>(bound.dims().size());
    out.push_back(alone ? std::optional<std::size_t>(index.var_terms[0].first) : std::nullopt);
  }
  return out;
}

Expected<std::vector<std::optional<Propagation>>> propagations(SearchContext const& ctx) {
  auto const& g = ctx.graph;
  std::vector<std::shared_ptr<tdl::BoundOp const>> bound(g.num_ops());
  for (std::uint32_t o = 0; o < g.num_ops(); ++o) {
    CLEAVE_TRY(bound[o], ctx.registry.bind(g, ir::OpId(o)));
  }
  auto bytes = [&](ir::TensorId t) {
    auto const& type = g.tensor(t).type;
    return ir::num_elements(type.shape) * ir::dtype_bytes(type.dtype);
  };
  std::vector<std::optional<Propagation>> out(g.num_ops());
  for (std::uint32_t o = 0; o < g.num_ops(); ++o) {
    ir::Op const& op = g.op(ir::OpId(o));
    std::optional<std::pair<ir::OpId, ir::TensorId>> heaviest;
    auto consider = [&](ir::OpId n, ir::TensorId t) {
      if (n.valid() && n.value() != o && (!heaviest || bytes(t) > bytes(heaviest->second)))
        heaviest = std::pair(n, t);
    };
    for (ir::TensorId t : op.inputs)
      consider(g.producer(t), t);
    for (ir::OpId c : g.consumers(op.outputs[0]))
      consider(c, op.outputs[0]);
    if (!heaviest) continue;
    auto [n, t] = *heaviest;
    auto mine = dims_indexing(op, *bound[o], t);
    auto theirs = dims_indexing(g.op(n), *bound[n.value()], t);
    Propagation p{n, {}};
    for (std::size_t d = 0; d < std::min(mine.size(), theirs.size()); ++d)
      if (mine[d] && theirs[d]) p.dims.emplace_back(*theirs[d], *mine[d]);
    out[o] = std::move(p);
  }
  return out;
}

// Prices proposals: by the delta simulator, or (for comparison, as FlexFlow's public code does)
// by lowering and predicting every proposal in full. Both give the same predictions bit for bit
// (sim/delta.h), so the same seed gives the same plan either way.
class Pricer {
 public:
  static Expected<Pricer> create(SearchContext const& ctx, plan::Plan plan, bool full) {
    Pricer p;
    if (!full) {
      CLEAVE_TRY(auto delta, sim::DeltaSimulator::create(ctx.graph, std::move(plan), ctx.registry,
                                                         ctx.cost, ctx.batch));
      p.delta_ = std::make_unique<sim::DeltaSimulator>(std::move(delta));
      return p;
    }
    p.ctx_ = &ctx;
    p.plan_ = std::move(plan);
    CLEAVE_TRY(auto program, lower::lower(ctx.graph, p.plan_, ctx.registry));
    p.prediction_ = sim::predict(ctx.graph, program, ctx.cost, ctx.batch);
    return p;
  }

  plan::Plan const& plan() const { return delta_ ? delta_->plan() : plan_; }
  sim::Prediction const& prediction() const { return delta_ ? delta_->prediction() : prediction_; }

  // The new prediction; with the delta simulator, nullptr when the step time is sure to exceed
  // `step_above` (DeltaSimulator::apply_unless_above). Full simulation always finishes, as
  // FlexFlow's does.
  Expected<sim::Prediction const*> apply(ir::OpId op, plan::OpConfig config, double step_above) {
    if (delta_) return delta_->apply_unless_above(op, std::move(config), step_above);
    kept_ = std::exchange(plan_.ops[op.value()], std::move(config));
    kept_op_ = op;
    auto program = lower::lower(ctx_->graph, plan_, ctx_->registry);
    if (!program) {
      plan_.ops[op.value()] = std::move(kept_);
      return std::move(program).error();
    }
    kept_prediction_ =
        std::exchange(prediction_, sim::predict(ctx_->graph, *program, ctx_->cost, ctx_->batch));
    return &prediction_;
  }

  void undo() {
    if (delta_) return delta_->undo();
    plan_.ops[kept_op_.value()] = std::move(kept_);
    prediction_ = std::move(kept_prediction_);
  }

 private:
  std::unique_ptr<sim::DeltaSimulator> delta_;
  // Full simulation: the plan, its prediction, and what the last apply() replaced.
  SearchContext const* ctx_ = nullptr;
  plan::Plan plan_;
  sim::Prediction prediction_;
  ir::OpId kept_op_;
  plan::OpConfig kept_;
  sim::Prediction kept_prediction_;
};

class Search {
 public:
  // `clock` started with the search, before the space and the propagations were built.
  Search(SearchContext const& ctx, Options const& options, SearchClock clock, ConfigSpace space,
         std::vector<std::optional<Propagation>> propagation)
      : ctx_(ctx), space_(std::move(space)), propagation_(std::move(propagation)),
        beta_(static_cast<double>(options.integer("beta_per_op") * ctx.graph.num_ops())),
        full_(options.choice("simulator") == "full"), reset_(options.integer("reset")),
        clock_(std::move(clock)), rng_(ctx.rng()) {}

  plan::Plan random_plan() {
    plan::Plan p = plan::single_device_plan(ctx_.graph, ctx_.registry);
    for (std::uint32_t o = 0; o < p.ops.size(); ++o)
      p.ops[o] = space_.random(ir::OpId(o), rng_);
    return p;
  }

  Expected<Pricer> pricer(plan::Plan p) const { return Pricer::create(ctx_, std::move(p), full_); }
  // Prices a starting plan (one simulation) and counts it as a candidate for the best plan.
  Expected<Pricer> price_start(plan::Plan start, std::string const& name);
  // One chain from a priced start, with `chains_left` chains (this one included) still to run.
  Status chain(Pricer sim, std::string const& name, int chains_left);

  Expected<plan::Plan> result(bool default_budget) const;

 private:
  std::optional<plan::OpConfig> propose(ir::OpId op, plan::Plan const& current);
  double surely_rejected(double cost, double draw) const;
  void consider(Score const& s, plan::Plan const& p, std::string const& name);

  SearchContext const& ctx_;
  ConfigSpace space_;
  std::vector<std::optional<Propagation>> propagation_;
  double beta_;
  bool full_;  // price proposals by full simulation
  std::int64_t reset_;
  SearchClock clock_;
  Rng rng_;
  std::optional<Score> best_;
  plan::Plan best_plan_;
  std::string best_from_;
  double best_at_ = 0;  // when the best was found, s into the search
  plan::SearchCourse course_;
  std::int64_t gave_up_ = 0;  // proposals rejected before their simulation ended
};

std::optional<plan::OpConfig> Search::propose(ir::OpId op, plan::Plan const& current) {
  auto const& prop = propagation_[op.value()];
  if (!prop || std::uniform_int_distribution<int>(0, 1)(rng_) == 0) return space_.random(op, rng_);
  plan::OpConfig const& from = current.ops[prop->from.value()];
  plan::OpConfig out;
  out.degrees.assign(space_.rank(op), 1);
  std::int64_t pieces = 1;
  for (auto [theirs, mine] : prop->dims) {
    std::int64_t d = from.degrees[theirs];
    auto const& dims = space_.dims(op);
    auto it =
        std::find_if(dims.begin(), dims.end(), [&](SplitDim const& s) { return s.dim == mine; });
    if (d < 2 || it == dims.end() || d > it->extent) continue;
    out.degrees[mine] = d;
    pieces *= d;
  }
  if (pieces > static_cast<std::int64_t>(from.devices.size())) return std::nullopt;
  out.devices.assign(from.devices.begin(), from.devices.begin() + pieces);
  return out;
}

// The cost from which on the acceptance test rejects a proposal with uniform draw `draw`, from
// the chain's current cost: exp(-beta (c - cost) / cost) <= draw for every c >= cost (1 - ln(draw)
// / beta). The relative margin of 1e-9 (the exponent's margin is beta times that) keeps rounding,
// of the logarithm, the exponential or the simulator's bound, from ever rejecting a proposal the
// test accepts: a proposal whose step time (at most its cost) is sure to exceed this is rejected
// before its simulation ends, with the decision the full test makes.
double Search::surely_rejected(double cost, double draw) const {
  double limit = cost * (1 - std::log(draw) / beta_) * (1 + 1e-9);
  return beta_ > 0 && std::isfinite(limit) ? limit : std::numeric_limits<double>::infinity();
}

void Search::consider(Score const& s, plan::Plan const& p, std::string const& name) {
  if (best_ && !better(s, *best_)) return;
  best_ = s;
  best_plan_ = p;
  best_from_ = name;
  best_at_ = clock_.elapsed().value();
  // Improvements of less than 0.1% wait for a larger one (or the end), to keep the course short.
  if (course_.best.empty() || s.step < course_.best.back().second * 0.999)
    course_.best.emplace_back(best_at_, s.step);
}

Expected<Pricer> Search::price_start(plan::Plan start, std::string const& name) {
  start.num_devices = static_cast<int>(ctx_.cluster().num_devices());
  CLEAVE_TRY(auto sim, pricer(std::move(start)));
  consider(score_of(sim.prediction()), sim.plan(), name);
  return sim;
}

Status Search::chain(Pricer sim, std::string const& name, int chains_left) {
  Score current = score_of(sim.prediction());
  Score chain_best = current;
  plan::Plan chain_best_plan = sim.plan();
  // This chain's share of what is left of the budget.
  auto const& budget = ctx_.budget;
  std::int64_t share =
      budget.iterations ? (*budget.iterations - clock_.iterations()) / chains_left : -1;
  double began = clock_.elapsed().value();
  double time_share = budget.time ? (budget.time->value() - began) / chains_left : -1;
  std::int64_t it = 0, improved_at = 0, reset_at = 0;
  double improved_time = began;
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  auto const num_ops = static_cast<std::uint32_t>(ctx_.graph.num_ops());
  while (!clock_.exhausted() && (share < 0 || it < share) &&
         (time_share < 0 || clock_.elapsed().value() - began < time_share)) {
    ++it;
    ir::OpId op(std::uniform_int_distribution<std::uint32_t>(0, num_ops - 1)(rng_));
    auto config = propose(op, sim.plan());
    if (config && (config->degrees != sim.plan().ops[op.value()].degrees ||
                   config->devices != sim.plan().ops[op.value()].devices)) {
      // Drawn before the proposal is priced, so that pricing can stop once it is sure to fail.
      double draw = coin(rng_);
      auto predicted = sim.apply(op, std::move(*config), surely_rejected(current.cost, draw));
      CLEAVE_ASSERT(predicted.has_value(), "the space's configurations are valid");
      std::optional<Score> s;
      if (*predicted) s = score_of(**predicted);
      if (s && (s->cost <= current.cost ||
                draw < std::exp(-beta_ * (s->cost - current.cost) / current.cost))) {
        current = *s;
        ++course_.accepted;
        if (better(*s, chain_best)) {
          chain_best = *s;
          chain_best_plan = sim.plan();
          improved_at = reset_at = it;
          improved_time = clock_.elapsed().value();
          consider(*s, chain_best_plan, name);
        }
      } else {
        gave_up_ += s ? 0 : 1;
        sim.undo();
      }
    }
    ++course_.iterations;
    clock_.tick(Seconds(best_->step));
    // Half of the share without improvement: this chain has converged.
    if ((share >= 0 && it - improved_at > share / 2) ||
        (time_share >= 0 && clock_.elapsed().value() - improved_time > time_share / 2))
      break;
    if (it - reset_at >= reset_) {
      reset_at = it;
      sim = Pricer();  // one simulator at a time
      CLEAVE_TRY(sim, pricer(chain_best_plan));
      current = chain_best;
    }
  }
  return Status::ok();
}

Expected<plan::Plan> Search::result(bool default_budget) const {
  CLEAVE_ASSERT(best_.has_value(), "the random chain always starts");
  std::map<DimRole, int> splits;
  for (std::uint32_t o = 0; o < best_plan_.ops.size(); ++o)
    for (std::size_t d = 0; d < best_plan_.ops[o].degrees.size(); ++d)
      if (best_plan_.ops[o].degrees[d] > 1)
        if (auto role = space_.role(ir::OpId(o), d)) ++splits[*role];
  std::ostringstream text;
  text << "step_time_s=" << best_->step << " fits=" << (best_->fits ? "yes" : "no")
       << " from=" << best_from_ << " proposals=" << course_.iterations
       << " accepted=" << course_.accepted << " rejected_unfinished=" << gave_up_ << " splits:";
  for (DimRole r : {DimRole::sample, DimRole::attribute, DimRole::parameter, DimRole::reduction})
    text << " " << role_name(r) << "=" << splits[r];
  if (default_budget) text << " budget=default(" << default_iterations << " proposals)";
  plan::Plan p = plan_from_configs(ctx_, best_plan_.ops, best_plan_.fetch, text.str());
  p.provenance.course = course_;
  if (best_->step < course_.best.back().second)
    p.provenance.course->best.emplace_back(best_at_, best_->step);
  p.provenance.budget_exhausted = !default_budget && clock_.exhausted();
  return p;
}

// Tofu's plan with its default options, within the time budget (its iterations are DP steps, not
// proposals, so the proposal budget does not apply to it).
Expected<plan::Plan> tofu_plan(SearchContext const& ctx) {
  SearchContext run = ctx;
  run.budget.iterations.reset();
  CLEAVE_TRY(auto options, Options::parse("tofu", tofu::tofu_options(), {}));
  return tofu::tofu(run, options);
}

}  // namespace

std::vector<OptionSpec> flexflow_options() {
  return {
      {"beta_per_op",
       OptionType::integer,
       "10",
       "acceptance: min(1, exp(-beta * (t_new - t_cur) / t_cur)), beta this times the graph's ops "
       "(a move changes one op: its relative effect shrinks as graphs grow)",
       {}},
      {"reset",
       OptionType::integer,
       "1000",
       "proposals without improvement after which a chain goes back to its best plan",
       {}},
      {"reductions",
       OptionType::choice,
       "off",
       "whether configurations split reduction dimensions too (partial results reduced)",
       {"off", "on"}},
      {"tofu_start",
       OptionType::choice,
       "on",
       "also run a chain from Tofu's plan (cleave's addition: FlexFlow starts from data-parallel, "
       "expert and random plans only; off reproduces the paper's search)",
       {"on", "off"}},
      {"simulator",
       OptionType::choice,
       "delta",
       "what prices a proposal: the delta simulator, or lowering and predicting in full (as "
       "FlexFlow's public code does; the same plan, slower)",
       {"delta", "full"}},
  };
}

Expected<plan::Plan> flexflow(SearchContext const& ctx, Options const& options) {
  if (options.integer("beta_per_op") < 0 || options.integer("reset") < 1)
    return Error(ErrorCode::invalid_argument,
                 "flexflow needs beta_per_op >= 0 and reset >= 1 (proposals)");
  bool default_budget = !ctx.budget.time && !ctx.budget.iterations;
  SearchContext run = ctx;
  if (default_budget) run.budget.iterations = default_iterations;
  // The course's times (time to the final plan) count from here.
  SearchClock clock(run);
  CLEAVE_TRY(auto space, ConfigSpace::create(run, options.choice("reductions") == "on"));
  CLEAVE_TRY(auto propagation, propagations(run));
  Search search(run, options, std::move(clock), std::move(space), std::move(propagation));
  // The baselines' own failures (an expert plan the model has none of) leave their chain out.
  std::vector<std::pair<std::string, Expected<plan::Plan>>> starts;
  starts.emplace_back("data-parallel", data_parallel(run));
  starts.emplace_back("expert", expert(run));
  if (options.choice("tofu_start") == "on") starts.emplace_back("tofu", tofu_plan(run));
  starts.emplace_back("random", search.random_plan());
  // Each start is priced once, then the chains run best start first (by the order that picks the
  // best plan; a tie keeps the order above), so that the time to the final plan is not spent on
  // chains from worse starts. One simulator is held at a time (on 64 K80s one holds gigabytes, and
  // two overflowed a 23 GiB machine): each start's is dropped before the next is priced, and a
  // chain prices its start again, unless it is the last one priced (kept).
  struct Priced {
    std::string name;
    Score score;
    plan::Plan plan;
  };
  std::vector<Priced> priced;
  std::optional<Pricer> kept;
  std::string kept_name;
  for (auto& [name, start] : starts) {
    if (!start) continue;
    kept.reset();
    CLEAVE_TRY(kept, search.price_start(std::move(*start), name));
    priced.push_back({name, score_of(kept->prediction()), kept->plan()});
    kept_name = name;
  }
  std::stable_sort(priced.begin(), priced.end(),
                   [](Priced const& a, Priced const& b) { return better(a.score, b.score); });
  int left = static_cast<int>(priced.size());
  for (auto& chain : priced) {
    if (chain.name == kept_name) {
      CLEAVE_CHECK_OK(search.chain(std::move(*kept), chain.name, left--));
      kept.reset();
      continue;
    }
    CLEAVE_TRY(auto sim, search.pricer(std::move(chain.plan)));
    CLEAVE_CHECK_OK(search.chain(std::move(sim), chain.name, left--));
  }
  return search.result(default_budget);
}

}  // namespace cleave::search::flexflow
