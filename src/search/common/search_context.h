// What every search algorithm receives (STYLE.md #6, #8): the training graph and the semantics it
// was built with, the cost model (and through it the cluster) every candidate is priced with, what
// to record in the plan, the seed, the budget, the options as the user set them, and where to
// report progress. Every algorithm is a function (SearchContext, Options) -> Plan; src/search/
// search.h registers them by name with the options each declares (options.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "cost/cost_model.h"
#include "plan/plan.h"

namespace cleave::search {

// How long a search may run; unlimited by default. What one iteration is belongs to each
// algorithm (search.cc's table says it). A search past its budget stops and returns the best plan
// it has: every search leaves a plan, even with a budget of one iteration.
struct Budget {
  std::optional<Seconds> time;
  std::optional<std::int64_t> iterations;
  // Set from outside while the search runs (the CLI's Ctrl-C handler): the search then stops as
  // at the end of its budget, and the plan records that it was interrupted.
  std::atomic<bool> const* stop = nullptr;
};

// A search's state as its progress callback sees it. `best_step_time` is the best predicted step
// time so far for searches that price step times, `best_comm` the least communication so far for
// those that minimise bytes (Tofu's objective).
struct Progress {
  std::int64_t iterations = 0;
  std::optional<Seconds> best_step_time;
  std::optional<Bytes> best_comm;
  Seconds elapsed{0};
  bool done = false;  // the last call of a search: a progress display clears its line
};
using ProgressFn = std::function<void(Progress const&)>;

// The deterministic engine of randomised searches: std::mt19937_64's sequence is fixed by the
// standard, so the same seed gives the same plan on every platform.
using Rng = std::mt19937_64;

// The option settings as the user wrote them ("key", "value"), typed against the algorithm's
// declared options by make_plan (options.h).
using OptionSettings = std::vector<std::pair<std::string, std::string>>;

struct SearchContext {
  ir::Graph const& graph;
  ops::OpRegistry const& registry;
  cost::CostModel const& cost;  // prices every candidate: --profile reaches every search
  std::string cluster_spec;
  std::string model;       // the model spec or file, recorded in the plan
  std::int64_t batch = 0;  // samples per step: inputs whose first dimension is this are batched
  std::uint64_t seed = 0;
  Budget budget = {};
  OptionSettings options = {};
  ProgressFn progress = {};  // empty: no progress reports

  cluster::Cluster const& cluster() const { return cost.cluster(); }
  // A fresh engine seeded from `seed`: a search that draws from it is reproducible.
  Rng rng() const { return Rng(seed); }
};

}  // namespace cleave::search
