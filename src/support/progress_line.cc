#include "support/progress_line.h"

#include <unistd.h>

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

}  // namespace cleave
