// Ctrl-C during a search (issue 15: anytime search, flexflow-train #197): the first SIGINT asks
// the search to stop as at the end of its budget, so `cleave plan` still writes and prints the
// best plan found; a second SIGINT ends the process at once, as usual.
#pragma once

#include <atomic>

namespace cleave::cli {

// Installs the handler (once) and returns the flag it sets; the search polls it
// (search::Budget::stop).
std::atomic<bool> const& stop_on_interrupt();

// The exit code of a command that finished after an interrupt (128 + SIGINT, the shell's).
inline constexpr int interrupted_exit_code = 130;

}  // namespace cleave::cli
