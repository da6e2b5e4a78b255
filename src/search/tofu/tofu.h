// Tofu's recursive search (EuroSys'19 §5, PAPERS.md §1) and the comparison points of its Fig. 10.
//
// Tofu splits every op over all k devices. k is factored into k1 >= k2 >= ... (primes, largest
// first: 8 = 2*2*2, 6 = 3*2); step s cuts every op's pieces k_s ways along one dimension chosen by
// the DP, and every sub-problem applies the same choice ("recurse on one half, apply the same plan
// to the other"). A dimension may be cut again at a later step. Digit s of a piece's device is
// its part at step s, the first step most significant, so the first cut separates the two halves
// of the device list (on a hierarchical cluster, e.g. two nodes, it is the cut that crosses the
// slow link).
//
// A step's strategies for an op are its splittable dimensions, parallel (output split, Tofu's
// case 1) or reduction (partial outputs plus their reduce-scatter, case 2), whose extent allows
// the cut; an op with none stays whole (on the first part). Replication is not a strategy:
// cleave.plan/1 partitions each op's iteration space into pieces and cannot say that two devices
// compute the same piece, so Tofu's "replicate" option has no plan to express it (a replicated
// read is still possible: the lowering fetches a whole tensor to every reader).
//
// The objective of step s is the communication bytes of the whole plan cut so far (k_1...k_s
// device groups as devices), computed exactly as the lowering moves data (comm_model.h), so the
// last step's objective is the lowered program's transfer bytes. Each step's DP is exact (up to
// the solver's documented table limits); the sequence of steps is greedy, as the paper's.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "search/common/options.h"
#include "search/common/search_context.h"
#include "search/tofu/coarsen.h"

namespace cleave::search::tofu {

// k1 >= k2 >= ... with product k (prime factors, largest first); {} for k = 1.
std::vector<std::int64_t> factor_ways(std::int64_t k);

// Per op, the dimension cut at each step so far (-1: kept whole at that step); a follower
// (coarsen.h) records its leader's cuts, its configuration being its leader's projected.
using History = std::vector<std::vector<int>>;

// The configuration of an op after the steps in `history` (one entry per step), with device
// groups numbered as described above (0 .. k_1*...*k_s - 1).
plan::OpConfig config_from_history(tdl::BoundOp const& op, std::vector<int> const& history,
                                   std::vector<std::int64_t> const& ways);

// Step `history[op].size()`'s strategies: per op, every dimension one more cut of `ways[step]`
// can split, in dimension order (or -1 alone); `cut_dims` receives them.
Candidates step_candidates(CommModel const& model, Coarsening const& coarsening,
                           History const& history, std::vector<std::int64_t> const& ways,
                           std::vector<std::vector<int>>* cut_dims);

struct StepReport {
  std::int64_t ways = 2;
  std::int64_t comm_bytes = 0;  // of the plan cut so far
  std::int64_t dp_bytes = 0;    // what the DP predicted for it (== comm_bytes unless approximated)
  bool exact = true;
  int nodes = 0;
  int largest_scope = 0;
  RequestStats stats;
};

struct TofuOptions {
  CoarsenOptions coarsen;
  // The ways of each step, their product the device count; empty: factor_ways(devices).
  std::vector<std::int64_t> ways;
  std::int64_t max_table_entries = std::int64_t{1} << 22;   // solver (exact below)
  std::int64_t max_factor_entries = std::int64_t{1} << 16;  // per-tensor factors (exact below)
  // Asked during each step's DP (Request::keep_going, with null) and after each step (with its
  // report); false finishes the step approximately and stops with the plan cut so far, on the
  // device groups of the steps taken (a search's budget). Empty: every step, exactly.
  std::function<bool(StepReport const*)> keep_going;
};

struct TofuResult {
  History history;
  std::vector<plan::OpConfig> configs;  // per op, devices 0..k-1
  std::vector<StepReport> steps;
  std::int64_t comm_bytes = 0;  // == the lowered program's transfer bytes
  bool stopped = false;         // keep_going said false: fewer steps than planned, or approximate
};

TofuResult tofu_search(CommModel const& model, int devices, TofuOptions const& options = {});

// Every ordered factorisation of k into factors >= 2 (8: {8}, {4,2}, {2,4}, {2,2,2}), in that
// order (fewest steps first, then larger first steps).
std::vector<std::vector<std::int64_t>> step_sequences(std::int64_t k);

// The algorithms of the table (search.cc), with the options they declare there.
// The fetch policy of the paper's comparison points and Tofu's default (plan.h): per pass, as in
// the paper, where every op's input conversion is its own communication.
constexpr plan::FetchPolicy tofu_fetch = plan::FetchPolicy::per_pass;

// Options: ways, fetch, max_table_entries, max_factor_entries. An iteration is one step's DP.
std::vector<OptionSpec> tofu_options();
Expected<plan::Plan> tofu(SearchContext const& ctx, Options const& options);
// Tofu's DP ranked by simulated step time (issue 5's option): one DP plan per step sequence of
// step_sequences(k) under each fetch policy, each lowered and simulated with the context's cost
// model; the plan that fits in memory with the least step time wins (the least peak memory where
// none fits), ties to fewer bytes. Slower than `tofu` by about twice the number of sequences.
// Options: max_table_entries, max_factor_entries. An iteration is one candidate plan.
std::vector<OptionSpec> dp_options();
Expected<plan::Plan> tofu_ranked(SearchContext const& ctx, Options const& options);
// OptCNN's DP (ICML'18) without output reduction, not recursive: every op chooses among all ways
// of cutting its parallel dimensions into k pieces at once. Options: dp_options(). An iteration
// is one node elimination of the DP; past the budget the rest is approximate (solver.h).
Expected<plan::Plan> optcnn(SearchContext const& ctx, Options const& options);
// Tofu Fig. 10's AllRow-Greedy: every op cuts its output's first (row) dimension k ways where it
// can; others take, greedily in topological order, the single-dimension cut that fetches least.
Expected<plan::Plan> allrow_greedy(SearchContext const& ctx);
// Tofu Fig. 10's EqualChop: every op chops its splittable parallel dimensions as equally as k
// allows (largest dimensions first), with no search.
Expected<plan::Plan> equal_chop(SearchContext const& ctx);

}  // namespace cleave::search::tofu
