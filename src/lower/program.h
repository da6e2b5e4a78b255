// The one lowering (DESIGN.md): (graph, plan) -> program, a DAG of per-device tasks that both the
// simulator and the runtime consume. Compute tasks run pieces; transfer tasks move the regions a
// piece reads from where they are held; reduce tasks combine partial results.
#pragma once

#include <cstdint>
#include <vector>

#include "plan/plan.h"
#include "support/units.h"

namespace cleave::lower {

using TaskId = std::uint32_t;

enum class TaskKind { compute, transfer, reduce };

struct Task {
  TaskKind kind = TaskKind::compute;
  int device = 0;           // where it runs; for a transfer, the destination
  int source_device = -1;   // transfer: where the data comes from
  ir::OpId op;              // compute: the op; reduce: the op whose partial outputs it combines
  std::uint32_t piece = 0;  // compute: the piece of the op
  tdl::Box iteration;       // compute: the piece's box of the op's iteration space
  ir::TensorId tensor;      // the tensor written (compute, reduce) or moved (transfer)
  tdl::Box region;          // the region written or moved
  bool partial = false;     // compute: its output is a partial result
  tdl::Reducer reducer = tdl::Reducer::none;  // reduce: how partials combine
  std::vector<TaskId> deps;  // tasks that must finish first (always earlier in the list)
  Flops flops;               // compute and reduce work
  Bytes bytes;               // transfer: bytes moved; compute: bytes read and written
};

// A block of a tensor held by a device before the step starts (inputs, weights, optimizer state).
struct InitialBlock {
  ir::TensorId tensor;
  tdl::Box region;
  int device = 0;
};

struct Program {
  int num_devices = 1;
  std::vector<InitialBlock> initial;
  std::vector<Task> tasks;  // in a topological order
};

// Lowers a validated plan. Where a tensor lives: a produced tensor where its producer's pieces
// (or, for partial pieces, the reduce tasks) wrote it; a weight or optimizer state where its
// update writes the next value (so that every step starts from the layout the previous one left);
// other sources (inputs) on every device that reads them, as a data loader delivers them.
Expected<Program> lower(ir::Graph const& graph, plan::Plan const& plan,
                        ops::OpRegistry const& registry);

}  // namespace cleave::lower
