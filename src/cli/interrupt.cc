#include "cli/interrupt.h"

#include <csignal>

namespace cleave::cli {
namespace {

std::atomic<bool> stop_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free, "set from a signal handler");

extern "C" void on_interrupt(int) {
  stop_requested.store(true);
  std::signal(SIGINT, SIG_DFL);  // the next Ctrl-C ends the process
}

}  // namespace

std::atomic<bool> const& stop_on_interrupt() {
  // Once per process; where sigaction fails, Ctrl-C ends the process as it would without this.
  [[maybe_unused]] static bool const installed = [] {
    struct sigaction action = {};
    action.sa_handler = on_interrupt;
    sigemptyset(&action.sa_mask);
    return sigaction(SIGINT, &action, nullptr) == 0;
  }();
  return stop_requested;
}

}  // namespace cleave::cli
