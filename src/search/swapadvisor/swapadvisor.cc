#include "search/swapadvisor/swapadvisor.h"

#include <sstream>

#include "search/swapadvisor/genetic.h"
#include "support/format_bytes.h"

namespace cleave::search::swapadvisor {
namespace {

std::int64_t swapped_bytes(ir::Graph const& graph, std::vector<plan::Swap> const& swaps) {
  std::int64_t total = 0;
  for (auto const& s : swaps)
    total += tdl::box_volume(s.region) * ir::dtype_bytes(graph.tensor(s.tensor).type.dtype);
  return total;
}

Status check_options(GeneticOptions const& g) {
  auto fail = [](std::string const& why) {
    return Error(ErrorCode::invalid_argument, "swapadvisor: " + why);
  };
  if (g.population < 2) return fail("population must be at least 2");
  if (g.mutation_percent < 0 || g.mutation_percent > 100)
    return fail("mutation must be a percentage from 0 to 100");
  if (g.generations < 0) return fail("generations must not be negative");
  if (g.idle_threshold < 1) return fail("idle must be at least 1 op");
  return Status::ok();
}

}  // namespace

std::vector<OptionSpec> swapadvisor_options() {
  return {
      {"population",
       OptionType::integer,
       "32",
       "chromosomes per generation (the paper: 144); each crossover makes 4 children",
       {}},
      {"mutation",
       OptionType::integer,
       "10",
       "mutation rate in percent: of a schedule's picks made at random, of allocation genes "
       "changed",
       {}},
      {"generations",
       OptionType::integer,
       "20",
       "generations when no budget is given (with a budget: until it is spent)",
       {}},
      {"idle",
       OptionType::integer,
       "2",
       "ops a block must have been idle for before Belady's rule may evict it (its copy out has "
       "time to run)",
       {}},
      {"memory",
       OptionType::choice,
       "search",
       "what the chromosomes divide: the paper's pool of size classes, the device's bytes, or "
       "the search weighs both",
       {"search", "pool", "bytes"}},
  };
}

Expected<plan::Plan> swapadvisor(SearchContext const& ctx, Options const& options) {
  GeneticOptions g;
  g.population = options.integer("population");
  g.mutation_percent = options.integer("mutation");
  g.generations = options.integer("generations");
  g.idle_threshold = static_cast<int>(options.integer("idle"));
  auto const& memory = options.choice("memory");
  g.memory = memory == "pool"    ? MemoryKind::pool
             : memory == "bytes" ? MemoryKind::bytes
                                 : MemoryKind::search;
  CLEAVE_CHECK_OK(check_options(g));
  CLEAVE_TRY(StepModel model, step_model(ctx));
  CLEAVE_TRY(GeneticResult r, run_genetic(ctx, model, g));
  std::ostringstream config;
  config << "swaps=" << r.best.swaps.size()
         << " swapped=" << format_bytes(Bytes(swapped_bytes(ctx.graph, r.best.swaps)))
         << " step_s=" << r.best.step_s << " first_population_best_s=" << r.first_population_best_s
         << " generations=" << r.generations << " held=" << (model.held_on_host ? "host" : "device")
         << " memory=" << (r.best.chromosome.pooled ? "pool" : "bytes");
  auto const& best = r.best.chromosome;
  plan::Plan p = schedule_plan(ctx, best.schedule, std::move(r.best.swaps),
                               best.pooled ? memory::pool_of(model.allocation, best.allocation)
                                           : memory::Pool{});
  p.provenance.config = config.str();
  p.provenance.course = std::move(r.course);
  p.provenance.budget_exhausted = r.budget_exhausted;
  return p;
}

Expected<plan::Plan> lru_swap(SearchContext const& ctx) {
  CLEAVE_TRY(StepModel model, step_model(ctx));
  auto topo = ctx.graph.topo_order();
  std::vector<ir::OpId> schedule(topo.begin(), topo.end());
  SwapRequest request{model,
                      schedule,
                      nullptr,
                      model.allocation.capacity,
                      Eviction::lru,
                      /*idle_threshold=*/1,
                      /*early_copy_in=*/false,
                      /*early_host_copies=*/false};
  CLEAVE_TRY(std::vector<plan::Swap> swaps, plan_swaps(request));
  plan::Plan p = schedule_plan(ctx, schedule, std::move(swaps));
  p.provenance.config = "swaps=" + std::to_string(p.swaps.size()) +
                        " swapped=" + format_bytes(Bytes(swapped_bytes(ctx.graph, p.swaps))) +
                        " held=" + (model.held_on_host ? "host" : "device");
  return p;
}

}  // namespace cleave::search::swapadvisor
