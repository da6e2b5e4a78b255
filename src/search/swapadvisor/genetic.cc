#include "search/swapadvisor/genetic.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "lower/schedule.h"
#include "sim/evaluate.h"
#include "support/assert.h"
#include "support/format_bytes.h"

namespace cleave::search::swapadvisor {
namespace {

constexpr double infeasible = std::numeric_limits<double>::infinity();

class Genetic {
 public:
  Genetic(SearchContext const& ctx, StepModel const& model, GeneticOptions const& options)
      : ctx_(ctx), model_(model), opt_(options), rng_(ctx.rng()), clock_(ctx),
        rate_(double(options.mutation_percent) / 100), ops_(op_graph(ctx.graph, model)) {
    demand_.assign(model.allocation.sizes.size(), 0);
    for (std::size_t b = 0; b < model.bytes.size(); ++b)
      demand_[model.size_index[b]] += model.bytes[b];
  }

  Expected<GeneticResult> run() {
    std::vector<Scored> population{evaluate(initial(0))};
    // One device runs its ops one after another: where the graph's order fits without copies, no
    // other schedule, pool or swap makes the step faster.
    bool fits = population[0].step_s != infeasible && population[0].swaps.empty();
    for (std::int64_t i = 1; i < opt_.population && !fits; ++i)
      population.push_back(evaluate(initial(i)));
    rank(population);
    if (population[0].step_s == infeasible)
      return first_error_->with_context("in the first of " + std::to_string(population.size()) +
                                        " chromosomes, none of which fits");
    result_.first_population_best_s = population[0].step_s;
    auto unlimited = !ctx_.budget.time && !ctx_.budget.iterations;
    while (!fits && !clock_.exhausted() && (!unlimited || result_.generations < opt_.generations)) {
      std::vector<Scored> children;
      for (std::int64_t k = 0; k < std::max<std::int64_t>(1, opt_.population / 4); ++k) {
        if (clock_.exhausted()) break;
        auto [a, b] = parents(population);
        for (auto&& c : crossover(population[a].chromosome, population[b].chromosome))
          if (!clock_.exhausted()) children.push_back(evaluate(mutate(std::move(c))));
      }
      for (auto& c : children)
        population.push_back(std::move(c));
      rank(population);
      population.resize(static_cast<std::size_t>(opt_.population));
      ++result_.generations;
    }
    result_.best = population[0];
    result_.course.iterations = clock_.iterations();
    result_.budget_exhausted = clock_.exhausted();
    return result_;
  }

 private:
  static void rank(std::vector<Scored>& p) {
    std::stable_sort(p.begin(), p.end(),
                     [](Scored const& a, Scored const& b) { return a.step_s < b.step_s; });
  }

  Scored evaluate(Chromosome c) {
    Scored s{std::move(c), {}, infeasible};
    auto repaired = memory::repair(model_.allocation, s.chromosome.allocation);
    if (repaired || !s.chromosome.pooled) {
      if (repaired) s.chromosome.allocation = *repaired;
      SwapRequest request{model_, s.chromosome.schedule};
      if (s.chromosome.pooled)
        request.allocation = &s.chromosome.allocation;
      else
        request.room_bytes = model_.allocation.capacity;
      request.idle_threshold = opt_.idle_threshold;
      auto swaps = plan_swaps(request);
      if (swaps) {
        s.swaps = std::move(*swaps);
        auto t = step_time(s);
        if (t)
          s.step_s = *t;
        else if (!first_error_)
          first_error_ = t.error();
      } else if (!first_error_) {
        first_error_ = swaps.error();
      }
    } else if (!first_error_) {
      first_error_ = repaired.error();
    }
    if (s.step_s < best_s_) {
      best_s_ = s.step_s;
      ++result_.course.accepted;
      result_.course.best.emplace_back(clock_.elapsed().value(), best_s_);
    }
    clock_.tick(best_s_ == infeasible ? std::nullopt : std::optional<Seconds>(Seconds(best_s_)));
    return s;
  }

  // The plan's step time by evaluate(); an error where it overflows the device's bytes or its
  // pool, which the walk rules out where the simulated step holds no block longer than the walk
  // (it counts blocks per class, whatever their order): checked, as a plan that does not fit must
  // not win.
  Expected<double> step_time(Scored const& s) const {
    auto plan = schedule_plan(ctx_, s.chromosome.schedule, s.swaps, pool(s.chromosome));
    auto e = sim::evaluate({ctx_.graph, ctx_.registry, plan, ctx_.cost, ctx_.batch});
    CLEAVE_ASSERT(e.has_value(), e ? "" : e.error().to_string().c_str());
    if (e->violations.empty()) return e->prediction.step_time_s;
    auto const& v = e->violations.front();
    return Error(ErrorCode::invalid_argument,
                 "the simulated step of the swap plan overflows the device's " +
                     std::string(v.largest.empty() ? "pool (a block of " : "memory (by ") +
                     format_bytes(Bytes(v.over_bytes)) +
                     (v.largest.empty() ? " finds no object" : "") +
                     ") at t = " + std::to_string(v.first_over_s) +
                     " s: the simulated step holds blocks longer than the planner's walk");
  }

  // The first chromosome: the graph's order, the classes whose minima take the least memory
  // (memory::least_classes), memory shared by the bytes each class's sizes ask for; the second: the
  // same order (when the search weighs both, in bytes: lru-swap's order and memory, planned by
  // Belady's rule with early copies back); the third and fourth: the graph's order with updates
  // eager (eager_updates), in a pool and in bytes; the others: ready-set mutations of the graph's
  // order and random classes and shares, one in four in bytes.
  Chromosome initial(std::int64_t i) {
    auto topo = ctx_.graph.topo_order();
    std::vector<ir::OpId> order(topo.begin(), topo.end());
    if (i == 2 || i == 3) order = eager_updates(ops_, order);
    std::size_t sizes = model_.allocation.sizes.size();
    memory::Allocation a;
    a.size_class.resize(sizes);
    // Even chromosomes draw a class break after each size with even odds; odd ones put sizes
    // within a random ratio (2 to 16) of their class's smallest together, so that some start with
    // few classes: a class per size keeps blocks of different sizes from sharing memory, so the
    // pool must hold each size's most blocks at once, far more than the step's peak where the
    // weights alone come in dozens of sizes.
    std::bernoulli_distribution step(0.5);
    double ratio = std::exp2(std::uniform_real_distribution<double>(1, 4)(rng_));
    auto const& size = model_.allocation.sizes;
    for (std::size_t s = 1, first = 0; s < sizes; ++s) {
      bool fresh = i % 2 == 0 ? step(rng_) : double(size[s]) > ratio * double(size[first]);
      a.size_class[s] = a.size_class[s - 1] + (fresh ? 1 : 0);
      if (fresh) first = s;
    }
    if (i == 0) a.size_class = model_.allocation.least_classes;
    std::vector<double> share(sizes == 0 ? 0 : a.size_class.back() + 1, 0);
    std::uniform_real_distribution<double> weight(0.1, 1.0);
    for (std::size_t s = 0; s < sizes; ++s)
      share[a.size_class[s]] += double(demand_[s]) * (i == 0 ? 1.0 : weight(rng_));
    double total = 0;
    for (double w : share)
      total += w;
    // As many objects as the share's bytes, on top of the minimum: repair cuts the excess in
    // proportion, so the pool ends up shared in these proportions.
    auto pool = memory::pool_of(model_.allocation,
                                {a.size_class, std::vector<std::int64_t>(share.size(), 1)});
    for (std::size_t c = 0; c < share.size(); ++c)
      a.objects.push_back(static_cast<std::int64_t>(
          std::ceil(share[c] / total * double(model_.allocation.capacity) /
                    double(pool.classes[c].object_bytes))));
    if (i > 3) order = ready_set(ops_, order, rate_, rng_);
    bool pooled = opt_.memory == MemoryKind::search ? (i < 4 ? i % 2 == 0 : i % 4 != 1)
                                                    : opt_.memory == MemoryKind::pool;
    return {std::move(order), std::move(a), pooled};
  }

  memory::Pool pool(Chromosome const& c) const {
    return c.pooled ? memory::pool_of(model_.allocation, c.allocation) : memory::Pool{};
  }

  std::pair<std::size_t, std::size_t> parents(std::vector<Scored> const& p) {
    std::vector<double> w;
    for (auto const& s : p)
      w.push_back(s.step_s == infeasible ? 0 : std::exp((best_s_ - s.step_s) / best_s_));
    std::discrete_distribution<std::size_t> pick(w.begin(), w.end());
    std::size_t a = pick(rng_), b = pick(rng_);
    return {a, b};
  }

  std::vector<Chromosome> crossover(Chromosome const& a, Chromosome const& b) {
    std::size_t n = a.schedule.size();
    std::uniform_int_distribution<std::size_t> cut(0, n);
    std::size_t cr = cut(rng_);
    std::size_t sizes = a.allocation.size_class.size();
    std::uniform_int_distribution<std::size_t> point(0, sizes);
    std::size_t x = point(rng_);
    auto s1 = schedule_cross(a.schedule, b.schedule, cr),
         s2 = schedule_cross(b.schedule, a.schedule, cr);
    auto a1 = allocation_cross(a.allocation, b.allocation, x),
         a2 = allocation_cross(b.allocation, a.allocation, x);
    return {{s1, a1, a.pooled}, {s1, a2, b.pooled}, {s2, a1, a.pooled}, {s2, a2, b.pooled}};
  }

  // The first `cr` ops of `second`, then the rest in `first`'s order.
  static std::vector<ir::OpId> schedule_cross(std::vector<ir::OpId> const& first,
                                              std::vector<ir::OpId> const& second, std::size_t cr) {
    std::vector<bool> taken(first.size(), false);
    std::vector<ir::OpId> out(second.begin(), second.begin() + static_cast<std::ptrdiff_t>(cr));
    for (auto op : out)
      taken[op.value()] = true;
    for (auto op : first)
      if (!taken[op.value()]) out.push_back(op);
    return out;
  }

  // Sizes before `x` from `first`, the rest from `second`; the classes' counts likewise from the
  // first class of size x on (repair then restores the steps and the capacity).
  static memory::Allocation allocation_cross(memory::Allocation const& first,
                                             memory::Allocation const& second, std::size_t x) {
    memory::Allocation c;
    c.size_class.assign(first.size_class.begin(),
                        first.size_class.begin() + static_cast<std::ptrdiff_t>(x));
    c.size_class.insert(c.size_class.end(),
                        second.size_class.begin() + static_cast<std::ptrdiff_t>(x),
                        second.size_class.end());
    std::size_t y = x == 0 ? 0 : first.size_class[x - 1] + 1;
    c.objects.assign(first.objects.begin(), first.objects.begin() + static_cast<std::ptrdiff_t>(y));
    for (std::size_t k = y; k < second.objects.size(); ++k)
      c.objects.push_back(second.objects[k]);
    return c;
  }

  Chromosome mutate(Chromosome c) {
    c.schedule = ready_set(ops_, c.schedule, rate_, rng_);
    std::bernoulli_distribution hit(rate_), up(0.5);
    if (opt_.memory == MemoryKind::search && hit(rng_)) c.pooled = !c.pooled;
    auto& a = c.allocation;
    for (std::size_t s = 1; s < a.size_class.size(); ++s)
      if (hit(rng_))
        a.size_class[s] =
            up(rng_) ? a.size_class[s] + 1 : (a.size_class[s] == 0 ? 0 : a.size_class[s] - 1);
    for (auto& objects : a.objects)
      if (hit(rng_)) {
        std::normal_distribution<double> step(0, std::max(1.0, double(objects) / 4));
        objects = std::max<std::int64_t>(0, objects + std::llround(step(rng_)));
      }
    return c;
  }

  SearchContext const& ctx_;
  StepModel const& model_;
  GeneticOptions const& opt_;
  Rng rng_;
  SearchClock clock_;
  double rate_;
  OpGraph ops_;
  std::vector<std::int64_t> demand_;  // per size: bytes of its blocks
  double best_s_ = infeasible;
  std::optional<Error> first_error_;
  GeneticResult result_;
};

}  // namespace

OpGraph op_graph(ir::Graph const& graph, StepModel const& model) {
  OpGraph g;
  std::size_t n = model.task_of_op.size();
  g.preds.resize(n);
  g.succs.resize(n);
  for (std::size_t op = 0; op < n; ++op)
    for (auto d : model.reads[model.task_of_op[op]]) {
      if (d >= n) continue;  // held before the step
      auto from = model.program.tasks[d].op.value();
      g.preds[op].push_back(from);
      g.succs[from].push_back(static_cast<std::uint32_t>(op));
    }
  for (auto const& op : graph.ops())
    g.update.push_back(!op.inputs.empty() && lower::update_of(graph, op.inputs[0]) == op.id);
  return g;
}

std::vector<ir::OpId> ready_set(OpGraph const& g, std::vector<std::size_t> const& rank, double p,
                                Rng& rng) {
  std::size_t n = rank.size();
  std::vector<std::size_t> waiting(n);
  std::vector<std::uint32_t> ready;
  for (std::uint32_t op = 0; op < n; ++op) {
    waiting[op] = g.preds[op].size();
    if (waiting[op] == 0) ready.push_back(op);
  }
  std::bernoulli_distribution random(p);
  std::vector<ir::OpId> out;
  while (!ready.empty()) {
    std::size_t at = 0;
    if (p > 0 && random(rng)) {
      at = std::uniform_int_distribution<std::size_t>(0, ready.size() - 1)(rng);
    } else {
      for (std::size_t k = 1; k < ready.size(); ++k)
        if (rank[ready[k]] < rank[ready[at]]) at = k;
    }
    std::uint32_t op = ready[at];
    ready[at] = ready.back();
    ready.pop_back();
    out.push_back(ir::OpId(op));
    for (auto s : g.succs[op])
      if (--waiting[s] == 0) ready.push_back(s);
  }
  CLEAVE_ASSERT(out.size() == n, "the op graph has a cycle");
  return out;
}

std::vector<ir::OpId> ready_set(OpGraph const& g, std::vector<ir::OpId> const& base, double p,
                                Rng& rng) {
  std::vector<std::size_t> rank(base.size());
  for (std::size_t k = 0; k < base.size(); ++k)
    rank[base[k].value()] = k;
  return ready_set(g, rank, p, rng);
}

std::vector<ir::OpId> eager_updates(OpGraph const& g, std::vector<ir::OpId> const& base) {
  std::vector<std::size_t> rank(base.size());
  for (std::size_t k = 0; k < base.size(); ++k)
    rank[base[k].value()] = g.update[base[k].value()] ? 0 : k + 1;
  Rng unused;
  return ready_set(g, rank, 0, unused);
}

plan::Plan schedule_plan(SearchContext const& ctx, std::vector<ir::OpId> const& schedule,
                         std::vector<plan::Swap> swaps, memory::Pool pool) {
  plan::Plan p = plan::single_device_plan(ctx.graph, ctx.registry);
  p.num_devices = static_cast<int>(ctx.cluster().num_devices());
  p.order.resize(static_cast<std::size_t>(p.num_devices));
  for (auto op : schedule)
    p.order[0].push_back({op.value(), 0});
  p.swaps = std::move(swaps);
  if (!pool.classes.empty()) {
    p.pools.resize(p.order.size());
    p.pools[0] = std::move(pool);
  }
  return p;
}

Expected<GeneticResult> run_genetic(SearchContext const& ctx, StepModel const& model,
                                    GeneticOptions const& options) {
  return Genetic(ctx, model, options).run();
}

}  // namespace cleave::search::swapadvisor
