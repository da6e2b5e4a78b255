// What every benchmark under bench/ needs: wall time since a point, the median of samples, the
// process's peak resident memory, and ending the run on a setup error.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sys/resource.h>
#include <vector>

#include "support/status.h"

namespace cleave::bench {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Peak resident set size of this process so far, in GiB.
inline double peak_rss_gib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / (1024.0 * 1024.0);  // ru_maxrss is in KiB
}

[[noreturn]] inline void die(Error const& e) {
  std::fprintf(stderr, "%s\n", e.to_string().c_str());
  std::exit(1);
}

template <typename T> T must(Expected<T> v) {
  if (!v) die(v.error());
  return std::move(v).value();
}

}  // namespace cleave::bench
