// The lowering kept in parts, so that changing one op's configuration re-lowers only what the
// change touches (delta simulation, docs/cost_model.md). The program is assembled from two kinds
// of part, in a fixed order that does not depend on which parts were rebuilt:
//
// - an op part per op: its compute tasks (one per piece), and the partial transfers and reduce
//   tasks that combine its partial results (with their reduce-scatters);
// - two tensor parts per tensor, early and late: the transfers that carry its blocks to the pieces
//   that read it (with an all-gather each), what each reading piece waits for, and (early part)
//   the blocks held before the step. The late part serves the backward and optimizer ops that
//   read a forward or source tensor: they fetch again what the forward pass fetched, just before
//   their first reader (issue 5; lowering.cc, Pass).
//
// Order: the source tensors' early parts by tensor id, then per op in topological order the late
// parts whose first reader it is, its op part and its output's early part. `lower()` is a
// Lowering created and assembled once.
#pragma once

#include <memory>
#include <optional>

#include "lower/program.h"

namespace cleave::lower {

class Lowering {
 public:
  // Lowers every op of a validated plan (the plan is checked first).
  static Expected<Lowering> create(ir::Graph const& graph, plan::Plan plan,
                                   ops::OpRegistry const& registry);
  Lowering(Lowering&&) noexcept;
  Lowering& operator=(Lowering&&) noexcept;
  ~Lowering();

  // Gives `op` a new configuration and rebuilds the parts it touches: the op's own part, the parts
  // of the tensors it reads and writes, when the op is the update that places a weight or
  // optimizer state that tensor's parts, and the late parts whose transfers wait for its output.
  // The plan's per-device orders and swaps are dropped (they name the old pieces), so the first
  // reconfigure of a plan that had them re-lowers and renumbers every task (previous_ids all
  // nullopt). On error nothing changes.
  Status reconfigure(ir::OpId op, plan::OpConfig config);

  // Restores the plan and program before the last reconfigure() from the part data it kept (the
  // parts are swapped back and the program reassembled; nothing is lowered again), the schedule it
  // dropped included (then re-applied, and previous_ids() all nullopt). Once per reconfigure();
  // undoing twice, or before any, is a bug. previous_ids() then maps the restored program to the
  // one undone.
  void undo();

  // The program of the current plan, identical to lower(graph, plan()): with the plan's schedule
  // applied (schedule.h).
  Program const& program() const;
  // program() without bringing every dependency list up to date: after a reconfigure() or undo(),
  // a task that moved without changing (previous_ids() names it, and its part was not emitted
  // anew) may still list its dependencies' ids before it. Delta simulation reads only the changed
  // tasks' lists (it renumbers its own copy of the others, sim::TaskIndex), and renumbering
  // every moved task's list, twice for a rejected proposal, was a sixth of a proposal's time
  // (Inception-v3 on 4 GPUs, docs/search.md).
  Program const& program_in_flux() const;
  // The dependency list of program_in_flux()'s task, up to date.
  std::vector<TaskId> const& current_deps(TaskId task) const;
  plan::Plan const& plan() const;

  // For each task of program(): the id it had in the program before the last reconfigure(), or
  // nullopt where the task is new or waits for other tasks than before. Empty before any.
  std::vector<std::optional<TaskId>> const& previous_ids() const;

 private:
  friend Expected<Program> lower(ir::Graph const&, plan::Plan const&, ops::OpRegistry const&,
                                 CollectiveForm);
  struct State;
  explicit Lowering(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace cleave::lower
