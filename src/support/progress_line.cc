#include "support/progress_line.h"

#include <unistd.h>

#include <fmt/format.h>

namespace cleave {

std::shared_ptr<ProgressLine> ProgressLine::on_terminal(std::FILE* out, Seconds quiet) {
  if (!isatty(fileno(out))) return nullptr;
  return std::make_shared<ProgressLine>(out, quiet);
}

bool ProgressLine::due(Seconds elapsed) const {
  return elapsed >= quiet_ && (!shown_ || elapsed >= last_ + Seconds(0.1));
}

void ProgressLine::show(Seconds elapsed, std::string const& text) {
  if (!due(elapsed)) return;
  std::fprintf(out_, "\r\033[K%s", text.c_str());
  std::fflush(out_);
  shown_ = true;
  last_ = elapsed;
}

void ProgressLine::clear() {
  if (shown_) std::fputs("\r\033[K", out_);
  std::fflush(out_);
  shown_ = false;
}

WorkProgressLine::WorkProgressLine(std::FILE* out, std::string what, Seconds quiet)
    : line_(out ? ProgressLine::on_terminal(out, quiet) : nullptr), what_(std::move(what)),
      start_(std::chrono::steady_clock::now()) {}

WorkProgressLine::~WorkProgressLine() {
  if (line_) line_->clear();
}

WorkProgressFn WorkProgressLine::callback() const {
  if (!line_) return {};
  return [line = line_, what = what_, start = start_](WorkProgress const& p) {
    Seconds elapsed(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (!line->due(elapsed)) return;
    std::string count;
    if (p.total > 0)
      count = fmt::format(" {} of {}", p.done, p.total);
    else if (p.done > 0)
      count = fmt::format(" {}", p.done);
    line->show(elapsed,
               fmt::format("{}: {}{}, {:.1f} s elapsed", what, p.stage, count, elapsed.value()));
  };
}

}  // namespace cleave
