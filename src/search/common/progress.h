// How a search honours its budget and reports progress (search_context.h): a search counts its
// iterations on a SearchClock, which says when the budget is spent and passes the progress on to
// the context's callback; terminal_progress() is the callback `cleave plan` uses.
#pragma once

#include <chrono>
#include <cstdio>
#include <optional>

#include "search/common/search_context.h"

namespace cleave::search {

class SearchClock {
 public:
  explicit SearchClock(SearchContext const& ctx);

  // Counts one iteration and reports progress with the best found so far (better values replace
  // worse ones; none keeps the last).
  void tick(std::optional<Seconds> best_step_time, std::optional<Bytes> best_comm = std::nullopt);
  // Reports progress without counting an iteration (within a long one).
  void report();
  // Whether the budget is spent: the search should stop and return its best plan.
  bool exhausted() const;
  std::int64_t iterations() const { return progress_.iterations; }
  Seconds elapsed() const;

 private:
  SearchContext const* ctx_;
  std::chrono::steady_clock::time_point start_;
  Progress progress_;
};

// A progress display on `out` (stderr in the CLI) when it is a terminal, else none (an empty
// callback): after 2 s of search, one line with the iterations, the best step time (or
// communication) so far and the elapsed time, rewritten in place at most 10 times a second and
// cleared when the search is done.
ProgressFn terminal_progress(std::FILE* out);

}  // namespace cleave::search
