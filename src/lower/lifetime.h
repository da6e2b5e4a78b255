// How long the block a task writes stays on its device: the one memory rule that the simulator
// (which accounts memory over the simulated order) and the runtime (whose arenas free blocks for
// real) share, so that a predicted peak and a measured one count the same blocks.
//
// Blocks held before the step (Program::initial) persist. A task's output lives from its start
// until every task that reads it (lists it as a dependency) has ended; with no reader it lives to
// the end of the step (the loss, updated weights). A swap-out moves no data onto its device: it
// frees its region there when it ends, in place of the block it copies (whose readers then no
// longer keep it), a block held before the step included. A task's output holds output_bytes().
#pragma once

#include <vector>

#include "lower/program.h"

namespace cleave::lower {

struct OutputLifetime {
  // The tasks that read the output, once per listing (a task listing it twice appears twice).
  std::vector<TaskId> readers;
  // A swap-out of the same tensor on the same device copies it: that swap-out frees it.
  bool swapped = false;
  // What the task allocates: false for a swap-out (it frees instead).
  bool allocates = true;
};

// Per task of the program.
std::vector<OutputLifetime> output_lifetimes(Program const& program);

// What a task's output holds on its device: a transfer's bytes (a per-device member of a
// collective receives several blocks, program.h), else its region's.
std::int64_t output_bytes(ir::Graph const& graph, Task const& task);

}  // namespace cleave::lower
