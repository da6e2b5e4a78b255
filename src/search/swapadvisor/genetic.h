// SwapAdvisor's genetic algorithm (PAPERS.md §4). A chromosome is a schedule (a topological order
// of the ops) and an allocation (memory/allocation.h); its fitness is the simulated step time of
// the plan the swap planner makes for it (swap_planner.h), infinite where the planner finds no
// room. Each crossover of two parents makes 4 children: the 2 schedule crossovers (the first CR
// ops of one parent, then the rest in the other's order: always topological) times the 2
// one-point crossovers of their allocations (repaired). A child's schedule mutates by a ready-set
// scheduler that takes a random ready op with the mutation rate (else the one the schedule runs
// first); its allocation's genes each mutate with that rate (a size's class by +-1, a class's
// objects by a Gaussian step). Parents are drawn by softmax over (T_best - t) / T_best; the next
// population is the best of parents and children, so the best never gets worse. Beside the
// paper, a chromosome may divide the device's bytes instead of a pool (Chromosome::pooled).
#pragma once

#include <cstdint>
#include <vector>

#include "search/common/progress.h"
#include "search/swapadvisor/swap_planner.h"

namespace cleave::search::swapadvisor {

struct Chromosome {
  std::vector<ir::OpId> schedule;
  memory::Allocation allocation;
  // False: the device's memory is one budget of bytes (as lru-swap's and every other plan's), the
  // allocation's genes carried but unused. A static pool of size classes wastes what a class's
  // larger objects leave unused in smaller blocks (a CNN's few early activations of 1 GiB and more
  // need their objects at the step's two ends; between, blocks a tenth their size fill them), so
  // the search weighs the pool against bytes.
  bool pooled = true;
};

// What memory the chromosomes divide: the search weighs the paper's pool against bytes, or keeps
// to one.
enum class MemoryKind : std::uint8_t { search, pool, bytes };

struct GeneticOptions {
  std::int64_t population = 32;
  std::int64_t mutation_percent = 10;
  std::int64_t generations = 20;  // when the budget gives no limit
  int idle_threshold = 2;
  MemoryKind memory = MemoryKind::search;
};

// The ops' dependencies within the step (through blocks it writes), and which ops update a weight
// or its optimizer state.
struct OpGraph {
  std::vector<std::vector<std::uint32_t>> preds, succs;  // per op, one entry per read
  std::vector<bool> update;                              // per op
};
OpGraph op_graph(ir::Graph const& graph, StepModel const& model);

// A ready-set scheduler over the ops: with probability p a random ready op, else the ready op of
// least rank (per op), or that `base` runs first.
std::vector<ir::OpId> ready_set(OpGraph const& g, std::vector<std::size_t> const& rank, double p,
                                Rng& rng);
std::vector<ir::OpId> ready_set(OpGraph const& g, std::vector<ir::OpId> const& base, double p,
                                Rng& rng);

// `base` with each update run as soon as its inputs are ready. A graph's order runs the updates
// after the whole backward pass, so every gradient is held to the step's end, and where the
// weights and optimizer state start the step on the host they are all brought back for the
// updates with no computation left to hide the copies: WResNet-152-10's step spent 4.9 s of
// 47.3 s there (0.18 s of it computing), copying 54 GiB in and 43 GiB out. The third and fourth
// chromosomes of the first population take it.
std::vector<ir::OpId> eager_updates(OpGraph const& g, std::vector<ir::OpId> const& base);

// A chromosome's plan and how fast it runs.
struct Scored {
  Chromosome chromosome;
  std::vector<plan::Swap> swaps;
  double step_s = 0;  // +inf: the planner found no room
};

struct GeneticResult {
  Scored best;
  double first_population_best_s = 0;
  plan::SearchCourse course;
  std::int64_t generations = 0;
  bool budget_exhausted = false;
};

// The plan of device 0 for a schedule, its swaps and its pool (none: without classes): every op
// whole there, in that order.
plan::Plan schedule_plan(SearchContext const& ctx, std::vector<ir::OpId> const& schedule,
                         std::vector<plan::Swap> swaps, memory::Pool pool = {});

// The search; an error when no chromosome of the first population fits (the swap planner's or
// the repair's error for the first, in a context that says none fits).
Expected<GeneticResult> run_genetic(SearchContext const& ctx, StepModel const& model,
                                    GeneticOptions const& options);

}  // namespace cleave::search::swapadvisor
