// The plan's schedule applied to a lowered program: its per-device orders and its swaps
// (plan.h). The lowering builds the program's data dependencies first (lowering.h); this pass
// then
//
// - adds, per device, an ordering-only edge (Program::ordering) from each compute piece to the
//   one before it in the device's order, so that the simulator and the runtime, which both run a
//   task once everything it waits for has ended, run each device's pieces in exactly that order;
// - turns each swap into a swap-out task (it reads the block, after the piece it follows; it frees
//   the block, lifetime.h) and a swap-in task (it reads the swap-out's host copy, after the piece
//   that issues it), both placed just after the block's writer in the task list (first, for a
//   block held before the step); the device's pieces from `in_before` on read the swapped-in
//   block instead of the original (they list the swap-in as a dependency); a swap's `out_before`
//   piece waits for its swap-out (an ordering edge);
// - checks that the orders agree with the data dependencies, a collective counting as one unit
//   (its members start together in the simulator): an order that would make a cycle is an error
//   naming two pieces of it.
//
// Swaps are limited to what a device alone decides: the block is the whole output of one of its
// compute pieces or reduce tasks, or a block it holds before the step, and no other device reads
// it (docs/runtime.md).
//
// A block held before the step (a weight, optimizer state, input) swapped out and back in leaves
// the device with no copy of it at the step's end: the swapped-in copy is freed after its last
// reader like any block the step writes. That keeps every step alike, because the next step's
// blocks are not this step's: they are the update ops' outputs (the next values of weights and
// optimizer state, held to the end of the step and never swapped, as nothing in the step reads
// them) and the next batch's inputs, all on the device when the next step starts, where the
// weights and optimizer state swapped in this step were.
//
// A block held before the step may instead start it on the host (a swap without out_after,
// Program::InitialBlock::on_host): it has no swap-out, each swap-in bringing it reads the host's
// copy and depends on no task, and the device's pieces read the copy brought last before them.
// A weight or optimizer state does so exactly where its update's output ends the step on the
// host (a swap without in_before: a swap-out and no swap-in), so that the next step's block
// starts where this step's did; a plan where they differ is an error.
#pragma once

#include "lower/program.h"
#include "plan/plan.h"

namespace cleave::lower {

// Per block held before the step (Program::initial), the tasks that read it: its device's compute
// pieces of the ops reading its tensor (a device holds one block of a source tensor, so they read
// that one) and any transfer sending part of it to another device (which makes it unswappable; a
// collective's member lowered per device counts as sending from every device of the tensor).
std::vector<std::vector<TaskId>> initial_readers(ir::Graph const& graph, Program const& program);

// The op that writes a weight's or optimizer state's next value (its update), if any: the
// lowering holds the weight where that op writes it, and a weight starts the step on the host
// exactly where its update's output ends there.
std::optional<ir::OpId> update_of(ir::Graph const& graph, ir::TensorId t);

// `program` is the lowering of `plan` without its schedule; on error it is unchanged.
Status apply_schedule(ir::Graph const& graph, plan::Plan const& plan, Program& program);

}  // namespace cleave::lower
