// CLEAVE_ASSERT: a broken invariant inside cleave (a bug), never bad user input (use Error).
#pragma once

#include <cstdio>
#include <cstdlib>

namespace cleave::detail {
[[noreturn]] inline void assert_fail(char const* cond, char const* file, int line,
                                     char const* msg) {
  std::fprintf(stderr, "cleave internal error: %s:%d: assertion '%s' failed: %s\n", file, line,
               cond, msg);
  std::abort();
}
}  // namespace cleave::detail

#define CLEAVE_ASSERT(cond, msg)                                                                   \
  ((cond) ? static_cast<void>(0) : ::cleave::detail::assert_fail(#cond, __FILE__, __LINE__, msg))
