#include "search/common/progress.h"

#include <string>

#include "cluster/quantity_text.h"
#include "support/format_bytes.h"
#include "support/progress_line.h"

namespace cleave::search {

SearchClock::SearchClock(SearchContext const& ctx)
    : ctx_(&ctx), start_(std::chrono::steady_clock::now()) {}

Seconds SearchClock::elapsed() const {
  return Seconds(std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
}

void SearchClock::tick(std::optional<Seconds> best_step_time, std::optional<Bytes> best_comm) {
  ++progress_.iterations;
  if (best_step_time && (!progress_.best_step_time || *best_step_time < *progress_.best_step_time))
    progress_.best_step_time = best_step_time;
  if (best_comm && (!progress_.best_comm || *best_comm < *progress_.best_comm))
    progress_.best_comm = best_comm;
  report();
}

void SearchClock::report() {
  if (!ctx_->progress) return;
  progress_.elapsed = elapsed();
  ctx_->progress(progress_);
}

bool SearchClock::exhausted() const {
  auto const& budget = ctx_->budget;
  if (budget.stop && budget.stop->load(std::memory_order_relaxed)) return true;
  if (budget.iterations && progress_.iterations >= *budget.iterations) return true;
  return budget.time && elapsed() >= *budget.time;
}

ProgressFn terminal_progress(std::FILE* out) {
  auto line = ProgressLine::on_terminal(out);
  if (!line) return {};
  return [line](Progress const& p) {
    if (p.done) return line->clear();
    if (!line->due(p.elapsed)) return;
    std::string text = "searching: " + std::to_string(p.iterations) + " iterations";
    if (p.best_step_time) text += ", best step " + cluster::format_seconds(*p.best_step_time);
    if (p.best_comm) text += ", least traffic " + format_bytes(*p.best_comm);
    text += ", " + cluster::format_seconds(p.elapsed) + " elapsed";
    line->show(p.elapsed, text);
  };
}

}  // namespace cleave::search
