// One line of progress on a terminal (searches, runs): written after a quiet start, rewritten in
// place at most 10 times a second, cleared when the work is done. Output that is not a terminal
// (a file, a pipe, CI's log) gets no progress at all, so that it stays plain.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

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

// Where a library's long work is (an import's nodes, a graph file's ops): a stage and the items
// done in it, of `total` (0: not known ahead).
struct WorkProgress {
  std::string_view stage;  // "converting nodes"
  std::int64_t done = 0;
  std::int64_t total = 0;
};
using WorkProgressFn = std::function<void(WorkProgress const&)>;

// The line of work that reports WorkProgress, for a shell: "loading m.onnx: converting nodes 1200
// of 5000, 3.1 s elapsed" on `out` when it is a terminal (null `out`, or not a terminal: none and
// an empty callback), after `quiet` (ProgressLine's), from a clock started here; cleared when it
// goes.
class WorkProgressLine {
 public:
  WorkProgressLine(std::FILE* out, std::string what, Seconds quiet = Seconds(2));
  ~WorkProgressLine();
  WorkProgressLine(WorkProgressLine const&) = delete;
  WorkProgressLine& operator=(WorkProgressLine const&) = delete;

  WorkProgressFn callback() const;

 private:
  std::shared_ptr<ProgressLine> line_;
  std::string what_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace cleave
