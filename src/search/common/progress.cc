#include "search/common/progress.h"

#include <unistd.h>

#include <memory>
#include <string>

#include "cluster/quantity_text.h"
#include "support/format_bytes.h"

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
  if (!isatty(fileno(out))) return {};
  struct Display {
    bool shown = false;
    Seconds last{0};
  };
  auto display = std::make_shared<Display>();
  return [out, display](Progress const& p) {
    if (p.done) {
      if (display->shown) std::fputs("\r\033[K", out);
      display->shown = false;
      return;
    }
    if (p.elapsed < Seconds(2) || (display->shown && p.elapsed < display->last + Seconds(0.1)))
      return;
    std::string line = "searching: " + std::to_string(p.iterations) + " iterations";
    if (p.best_step_time) line += ", best step " + cluster::format_seconds(*p.best_step_time);
    if (p.best_comm) line += ", least traffic " + format_bytes(*p.best_comm);
    line += ", " + cluster::format_seconds(p.elapsed) + " elapsed";
    std::fprintf(out, "\r\033[K%s", line.c_str());
    std::fflush(out);
    display->shown = true;
    display->last = p.elapsed;
  };
}

}  // namespace cleave::search
