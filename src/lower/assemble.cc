// The assembly of the program from the lowering's parts (lowering_state.h), in place after a
// reconfigure.
#include <algorithm>
#include <iterator>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "lower/lowering_state.h"
#include "support/assert.h"

namespace cleave::lower {

void Lowering::State::assemble(std::vector<bool> const* rebuilt) {
  std::size_t parts = num_ops + 2 * std::size_t{num_tensors};
  // The emitted parts' old tasks are compared with their new ones (unchanged()): their lists
  // were brought up to date before their part data changed (Lowering::reconfigure).
  std::vector<bool> emit = rebuilt ? emitted(*rebuilt) : std::vector<bool>(parts, true);
  std::size_t start = rebuilt ? order.size() : 0;
  stale.resize(parts, false);
  if (rebuilt) {
    for (std::size_t pos = 0; pos < order.size(); ++pos)
      if (emit[order[pos]]) {
        start = pos;
        break;
      }
  }
  Program& p = program;
  p.num_devices = plan.num_devices;
  offset.resize(parts, 0);
  first_collective.resize(parts, 0);
  first_initial.resize(parts, 0);
  bool all = start >= order.size();
  TaskId keep = all ? static_cast<TaskId>(p.tasks.size()) : offset[order[start]];
  // Collectives and blocks from `start` on are written over the old ones (reusing their lists'
  // storage); these count the ones written.
  auto collectives =
      all ? static_cast<CollectiveId>(p.collectives.size()) : first_collective[order[start]];
  std::size_t initials = all ? p.initial.size() : first_initial[order[start]];
  // Where each part from `start` on was (`was`, by position in `order`, and the old end) and
  // will be (`offset`): a part has its part data's tasks, as many as before unless rebuilt.
  std::vector<TaskId> was(order.size() - start + 1);
  TaskId end = keep;
  for (std::size_t pos = start; pos < order.size(); ++pos) {
    auto id = order[pos];
    was[pos - start] = offset[id];
    offset[id] = end;
    end += static_cast<TaskId>(part_of(id).tasks.size());
  }
  was.back() = static_cast<TaskId>(p.tasks.size());
  auto moves = [&](std::size_t pos) { return rebuilt && !emit[order[pos]]; };
  // The old tasks of emitted parts that keep their size, out of the way: each new one is
  // compared below with the one it replaces.
  std::vector<Task> replaced;
  std::vector<std::size_t> replaced_at(was.size(), 0);  // per position
  if (rebuilt)
    for (std::size_t pos = start; pos < order.size(); ++pos) {
      TaskId from = was[pos - start], to = was[pos - start + 1];
      replaced_at[pos - start] = replaced.size();
      if (emit[order[pos]] && to - from == part_of(order[pos]).tasks.size())
        replaced.insert(replaced.end(), std::make_move_iterator(p.tasks.begin() + from),
                        std::make_move_iterator(p.tasks.begin() + to));
    }
  // The other parts' tasks move in place, each once: parts moving to lower ids first, in
  // order, then those moving to higher ids, last first; either way a part only lands on tasks
  // that have moved already or are not needed (the parts keep their order).
  if (end > p.tasks.size()) p.tasks.resize(end);
  auto range = [&](std::size_t pos) { return p.tasks.begin() + was[pos - start]; };
  for (std::size_t pos = start; pos < order.size(); ++pos)
    if (moves(pos) && offset[order[pos]] < was[pos - start])
      std::move(range(pos), range(pos + 1), p.tasks.begin() + offset[order[pos]]);
  for (std::size_t pos = order.size(); pos-- > start;)
    if (moves(pos) && offset[order[pos]] > was[pos - start])
      std::move_backward(range(pos), range(pos + 1),
                         p.tasks.begin() + offset[order[pos]] +
                             (was[pos - start + 1] - was[pos - start]));
  p.tasks.resize(end);
  if (rebuilt) {
    previous.assign(end, std::nullopt);
    for (TaskId i = 0; i < keep; ++i)
      previous[i] = i;
  }
  for (std::size_t pos = start; pos < order.size(); ++pos) {
    auto id = order[pos];
    bool is_op = id < num_ops;
    Part const& part = part_of(id);
    first_collective[id] = collectives;
    first_initial[id] = initials;
    bool waits_changed = false;
    if (emit[id]) {
      for (std::size_t i = 0; i < part.tasks.size(); ++i) {
        Task& task = p.tasks[offset[id] + i];
        task = part.tasks[i];
        task.collective = no_collective;
      }
      waits_changed = resolve_deps(id, rebuilt);
      stale[id] = false;
    } else {
      // Its tasks' lists keep the ids of their dependencies before this assembly until the
      // program is handed out (program()): renumbering every moved task's list was a sixth of
      // what a delta-simulated proposal cost (Inception-v3 on 4 GPUs), and delta simulation
      // reads only the changed tasks' lists (it renumbers its own copy of the others). Its tasks
      // are not otherwise touched: its collectives' members get their collectives' new ids below,
      // and its other tasks are in none, as before.
      stale[id] = true;
      any_stale = true;
    }
    if (!is_op)
      for (auto const& b : tensor_parts[id - num_ops].initial)
        slot(p.initial, initials++) = b;
    add_collectives(id, part, p, collectives);
    if (!rebuilt) continue;
    // A part rebuilt as before (a weight's all-gather after its reader changed) keeps the ids of
    // the tasks that did not change, so that delta simulation need not restart from the step's
    // start.
    TaskId old = was[pos - start];
    bool kept = !(*rebuilt)[id];  // the same tasks as before, maybe new ids
    bool same_size = was[pos - start + 1] - old == part.tasks.size();
    for (std::size_t i = 0; i < part.tasks.size(); ++i) {
      bool compute = is_op && i < pieces[id].size();
      TaskId now = offset[id] + static_cast<TaskId>(i);
      if (kept && !(compute && waits_changed))
        previous[now] = old + i;
      else if (same_size && emit[id] &&
               unchanged(p.tasks[now], replaced[replaced_at[pos - start] + i]))
        previous[now] = old + i;
    }
  }
  p.collectives.resize(collectives);
  p.initial.resize(initials);
  if (!rebuilt) any_stale = false;
}

std::vector<bool> Lowering::State::emitted(std::vector<bool> const& rebuilt) const {
  std::vector<bool> emit(rebuilt.size(), false);
  for (std::size_t id = 0; id < rebuilt.size(); ++id) {
    if (!rebuilt[id]) continue;
    emit[id] = true;
    if (id < num_ops) continue;
    ir::TensorId t = tensor_of(static_cast<std::uint32_t>(id));
    if (graph.producer(t).valid()) emit[graph.producer(t).value()] = true;
    for (ir::OpId c : graph.consumers(t))
      emit[c.value()] = true;
  }
  return emit;
}

bool Lowering::State::resolve_deps(std::uint32_t id, std::vector<bool> const* rebuilt) {
  Part const& part = part_of(id);
  for (std::size_t i = 0; i < part.tasks.size(); ++i) {
    auto& deps = program.tasks[offset[id] + i].deps;
    deps.clear();
    for (auto r : part.deps[i])
      deps.push_back(resolve(r));
  }
  return id < num_ops && add_compute_deps(ir::OpId(id), program, rebuilt);
}

std::vector<TaskId> const& Lowering::State::current_deps(TaskId task) {
  // The part holding the task: the last in assembly order that starts at or before it (an empty
  // part starts where the next one does, and comes before it).
  auto it = std::upper_bound(order.begin(), order.end(), task,
                             [&](TaskId t, std::uint32_t id) { return t < offset[id]; });
  CLEAVE_ASSERT(it != order.begin(), "a task of the program lies in a part");
  std::uint32_t id = *std::prev(it);
  if (stale[id]) {
    resolve_deps(id, nullptr);
    stale[id] = false;
  }
  return program.tasks[task].deps;
}

void Lowering::State::resolve_stale(std::vector<bool> const* only) {
  if (!any_stale) return;
  bool all = only == nullptr;
  for (std::uint32_t id = 0; id < stale.size(); ++id) {
    if (!stale[id] || (only && !(*only)[id])) continue;
    resolve_deps(id, nullptr);
    stale[id] = false;
  }
  if (all) any_stale = false;
}

void Lowering::State::assemble_once() {
  CLEAVE_ASSERT(program.tasks.empty(), "lower()'s state assembles once");
  Program& p = program;
  p.num_devices = plan.num_devices;
  std::size_t parts = num_ops + 2 * std::size_t{num_tensors};
  offset.assign(parts, 0);
  first_collective.assign(parts, 0);
  first_initial.assign(parts, 0);
  TaskId end = 0;
  for (auto id : order) {
    offset[id] = end;
    end += static_cast<TaskId>(part_of(id).tasks.size());
  }
  p.tasks.reserve(end);
  CollectiveId collectives = 0;
  std::vector<TaskId> deps;
  std::vector<Read const*> reads;  // an op's, per input
  std::size_t freed = 0;           // bytes of the parts' task lists freed since the last trim
  constexpr std::size_t trim_every = std::size_t{128} << 20;
  for (auto id : order) {
    bool is_op = id < num_ops;
    Part& part = part_of(id);
    first_collective[id] = collectives;
    first_initial[id] = p.initial.size();
    reads.clear();
    if (is_op) {
      ir::Op const& op = graph.op(ir::OpId(id));
      for (std::size_t i = 0; i < op.inputs.size(); ++i)
        reads.push_back(&read_of(ir::OpId(id), i));
    }
    // As assemble(): a task's own dependencies, then (a compute task) what it waits for of each
    // input in the inputs' order.
    for (std::size_t i = 0; i < part.tasks.size(); ++i) {
      deps.clear();
      for (auto r : part.deps[i])
        deps.push_back(resolve(r));
      for (Read const* read : reads)
        if (i < read->pieces.size())
          for (auto r : read->pieces[i])
            deps.push_back(resolve(r));
      Task& task = p.tasks.emplace_back(std::move(part.tasks[i]));
      task.collective = no_collective;
      task.deps.assign(deps.begin(), deps.end());
    }
    if (!is_op)
      for (auto const& b : tensor_parts[id - num_ops].initial)
        p.initial.push_back(b);
    add_collectives(id, part, p, collectives);
    // A tensor part's reads stay: its readers come later.
    freed += part.tasks.capacity() * sizeof(Task);
    std::vector<Task>().swap(part.tasks);
    part.deps = RefLists{};
    std::vector<Collective>().swap(part.collectives);
#if defined(__GLIBC__)
    // The parts' lists are small blocks, which glibc keeps resident once freed; the program's
    // list, one large block, takes pages of its own as it fills. Handing the freed pages back as
    // the assembly goes keeps each task's bytes resident once, not twice (issue 21).
    if (freed > trim_every) {
      malloc_trim(0);
      freed = 0;
    }
#endif
  }
  p.collectives.resize(collectives);
}

bool Lowering::State::unchanged(Task const& t, Task const& before) const {
  bool same = t.kind == before.kind && t.device == before.device &&
              t.source_device == before.source_device && t.op == before.op &&
              t.piece == before.piece && t.tensor == before.tensor && t.partial == before.partial &&
              t.reducer == before.reducer && t.flops == before.flops && t.bytes == before.bytes &&
              t.deps.size() == before.deps.size() && t.iteration == before.iteration &&
              t.region == before.region;
  for (std::size_t j = 0; same && j < t.deps.size(); ++j)
    same = previous[t.deps[j]] == before.deps[j];
  return same;
}

void Lowering::State::add_collectives(std::uint32_t id, Part const& part, Program& p,
                                      CollectiveId& written) {
  bool is_op = id < num_ops;
  for (std::size_t c = 0; c < part.collectives.size(); ++c) {
    CollectiveId gid = written;
    if (!is_op && tensor_parts[id - num_ops].completes) {
      auto producer = graph.producer(tensor_of(id)).value();
      gid = first_collective[producer] + *tensor_parts[id - num_ops].completes;
      Collective& rs = p.collectives[gid];
      rs.kind = CollectiveKind::all_reduce;
      for (auto m : part.collectives[c].members)
        rs.members.push_back(m + offset[id]);
    } else {
      Collective& col = slot(p.collectives, written++);
      col = part.collectives[c];
      for (auto& m : col.members)
        m += offset[id];
    }
    for (auto m : part.collectives[c].members)
      p.tasks[offset[id] + m].collective = gid;
  }
}

bool Lowering::State::add_compute_deps(ir::OpId id, Program& p, std::vector<bool> const* rebuilt) {
  ir::Op const& op = graph.op(id);
  TaskId base = offset[id.value()];
  bool changed = false;
  for (std::size_t i = 0; i < op.inputs.size(); ++i) {
    auto tp_id = part_id(op.inputs[i], pass_of(op.inputs[i], id));
    changed = changed || (rebuilt && (*rebuilt)[tp_id]);
    Read const& read = read_of(id, i);
    for (std::size_t k = 0; k < read.pieces.size(); ++k)
      for (auto r : read.pieces[k])
        p.tasks[base + k].deps.push_back(resolve(r));
  }
  return changed;
}

Read const& Lowering::State::read_of(ir::OpId id, std::size_t input) const {
  ir::TensorId t = graph.op(id).inputs[input];
  auto const& reads = tensor_parts[part_id(t, pass_of(t, id)) - num_ops].reads;
  auto it = std::find_if(reads.begin(), reads.end(),
                         [&](Read const& r) { return r.op == id && r.input == input; });
  CLEAVE_ASSERT(it != reads.end(), "a consumer's read is missing from its input's part");
  return *it;
}

}  // namespace cleave::lower
