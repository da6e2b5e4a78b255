// One line of progress on a terminal (searches, runs): written after a quiet start, rewritten in
// place at most 10 times a second, cleared when the work is done. Output that is not a terminal
// (a file, a pipe, CI's log) gets no progress at all, so that it stays plain.
#pragma once

#include <cstdio>
#include <memory>
#include <string>

#include "support/units.h"

namespace cleave {

class ProgressLine {
 public:
  // A line on `out`, or null when `out` is not a terminal. Nothing shows before `quiet` has
  // passed, so that short work prints nothing.
  static std::shared_ptr<ProgressLine> on_terminal(std::FILE* out, Seconds quiet = Seconds(2));

  explicit ProgressLine(std::FILE* out, Seconds quiet) : out_(out), quiet_(quiet) {}

  // Whether a line at `elapsed` (since the work began) would be shown: callers build the text
  // only then.
  bool due(Seconds elapsed) const;
  void show(Seconds elapsed, std::string const& text);
  void clear();

 private:
  std::FILE* out_;
  Seconds quiet_;
  bool shown_ = false;
  Seconds last_{0};
};

}  // namespace cleave
