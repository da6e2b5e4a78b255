#include "lower/schedule.h"

#include <algorithm>
#include <map>

#include "support/assert.h"

namespace cleave::lower {
namespace {

using plan::PieceRef;

struct Context {
  ir::Graph const& graph;
  plan::Plan const& plan;
  Program const& program;
  std::vector<std::vector<TaskId>> compute;          // per op, per piece: its compute task
  std::vector<std::vector<std::size_t>> position;    // per op, per piece: in its device's order
  std::vector<std::vector<TaskId>> readers;          // per task: the tasks listing it in deps
  std::vector<std::vector<TaskId>> initial_readers;  // per block held before the step

  TaskId task_of(PieceRef r) const { return compute[r.op][r.piece]; }
  std::size_t position_of(Task const& t) const { return position[t.op.value()][t.piece]; }
};

std::string describe(ir::Graph const& graph, Task const& t) {
  std::string block =
      "tensor '" + graph.tensor(t.tensor).name + "' " + tdl::box_to_string(t.region);
  switch (t.kind) {
  case TaskKind::compute:
    return "op '" + graph.op(t.op).name + "' piece " + std::to_string(t.piece);
  case TaskKind::transfer:
    return "the transfer of " + block + " to device " + std::to_string(t.device);
  case TaskKind::reduce:
    return "the reduce task of " + block;
  case TaskKind::swap_out:
    return "the swap-out of " + block;
  case TaskKind::swap_in:
    return "the swap-in of " + block;
  }
  return block;
}

// What a swap amounts to in the program: the task that wrote the block, or the block held before
// the step (Program::initial), the readers that read the copy swapped in, and the swap of the
// same block that brought the copy this one takes out, if any.
struct Resolved {
  std::optional<TaskId> writer;
  std::optional<std::size_t> initial;
  std::vector<TaskId> late;
  std::optional<std::size_t> previous;
};

Error swap_error(Context const& c, plan::Swap const& s, std::string const& why) {
  return Error(ErrorCode::invalid_argument, "the swap of tensor '" + c.graph.tensor(s.tensor).name +
                                                "' " + tdl::box_to_string(s.region) +
                                                " on device " + std::to_string(s.device) + ": " +
                                                why);
}

// A swap's block; its late readers are assigned once every swap of the block is known
// (assign_late, assign_from_host).
Expected<Resolved> resolve(Context const& c, plan::Swap const& s) {
  auto fail = [&](std::string const& why) { return swap_error(c, s, why); };
  auto const& tasks = c.program.tasks;
  std::optional<TaskId> writer;
  std::string held;
  for (TaskId i = 0; i < tasks.size(); ++i) {
    Task const& t = tasks[i];
    bool block = (t.kind == TaskKind::compute && !t.partial) || t.kind == TaskKind::reduce;
    if (!block || t.device != s.device || t.tensor != s.tensor) continue;
    if (t.region == s.region) writer = i;
    held += " " + tdl::box_to_string(t.region);
  }
  std::optional<std::size_t> initial;
  for (std::size_t b = 0; b < c.program.initial.size() && !writer; ++b) {
    auto const& h = c.program.initial[b];
    if (h.device != s.device || h.tensor != s.tensor) continue;
    if (h.region == s.region) initial = b;
    held += " " + tdl::box_to_string(h.region);
  }
  if (!writer && !initial)
    return fail("the region is not a block the device computes (the whole output of one of its "
                "pieces or reduce tasks) or holds before the step; its blocks of the tensor:" +
                (held.empty() ? std::string(" none") : held));
  if (!s.out_after && !initial)
    return fail("it starts the step on the host (it has no out_after), which only a block held "
                "before the step can");
  if (writer && tasks[*writer].kind == TaskKind::compute &&
      c.position_of(tasks[*writer]) > c.position[s.out_after->op][s.out_after->piece])
    return fail("it is written by " + describe(c.graph, tasks[*writer]) +
                ", which the device's order runs after the swap-out's piece");
  return Resolved{writer, initial, {}, {}};
}

// The late readers of a swap that copies its block out: those from its swap-in on, up to
// `until` (the next swap-out of the block, which takes the copy they read).
Status assign_late(Context const& c, plan::Swap const& s, Resolved& r,
                   std::optional<std::size_t> until) {
  auto fail = [&](std::string const& why) { return swap_error(c, s, why); };
  auto const& tasks = c.program.tasks;
  auto at = [&](std::optional<plan::PieceRef> const& p) -> std::optional<std::size_t> {
    if (!p) return std::nullopt;
    return c.position[p->op][p->piece];
  };
  auto out = at(s.out_after);
  auto in = at(s.in_before);
  auto readers = r.writer ? c.readers[*r.writer] : c.initial_readers[*r.initial];
  for (TaskId reader : readers) {
    Task const& t = tasks[reader];
    if (t.kind != TaskKind::compute || t.device != s.device)
      return fail(describe(c.graph, t) +
                  " reads it; only blocks that no other task than the device's pieces reads can "
                  "be swapped");
    std::size_t p = c.position_of(t);
    if (!out || (until && p > *until)) continue;
    if (!in && p > *out)
      return fail(describe(c.graph, t) +
                  " reads it after its swap-out, which leaves it on the host at the step's end");
    if (in && p > *out && p < *in)
      return fail(describe(c.graph, t) +
                  " reads it between the swap-out and the swap-in in the device's order");
    if (in && p >= *in) r.late.push_back(reader);
  }
  return Status::ok();
}

// The late readers of the blocks swapped out and in, each given to the swap that brought the copy
// it reads: the swaps of one block that copy it out alternate (plan::validate), each taking out
// the copy the one before brought. A block is swapped out and in, or starts the step on the host,
// not both.
Status assign_out_in(Context const& c, std::vector<Resolved>& resolved) {
  auto const& swaps = c.plan.swaps;
  auto block = [&](std::size_t k) {
    return resolved[k].writer ? *resolved[k].writer : c.program.tasks.size() + *resolved[k].initial;
  };
  std::vector<std::vector<std::size_t>> chains(c.program.tasks.size() + c.program.initial.size());
  std::vector<bool> from_host(chains.size(), false);
  for (std::size_t k = 0; k < swaps.size(); ++k)
    if (swaps[k].out_after)
      chains[block(k)].push_back(k);
    else
      from_host[block(k)] = true;
  auto out_at = [&](std::size_t k) {
    return c.position[swaps[k].out_after->op][swaps[k].out_after->piece];
  };
  for (std::size_t b = 0; b < chains.size(); ++b) {
    auto& ks = chains[b];
    if (ks.empty()) continue;
    if (from_host[b])
      return swap_error(c, swaps[ks.front()],
                        "another swap brings the block from the host, where it starts the step; "
                        "a block is swapped out and in or starts the step on the host, not both");
    std::sort(ks.begin(), ks.end(), [&](auto x, auto y) { return out_at(x) < out_at(y); });
    for (std::size_t i = 0; i < ks.size(); ++i) {
      std::optional<std::size_t> until;
      if (i + 1 < ks.size()) until = out_at(ks[i + 1]);
      if (i > 0) resolved[ks[i]].previous = ks[i - 1];
      CLEAVE_CHECK_OK(assign_late(c, swaps[ks[i]], resolved[ks[i]], until));
    }
  }
  return Status::ok();
}

// The readers of the blocks that start the step on the host, each given to the swap that brings
// the block last before it in the device's order.
Status assign_from_host(Context const& c, std::vector<Resolved>& resolved) {
  Program const& program = c.program;
  auto const& swaps = c.plan.swaps;
  std::vector<std::vector<std::size_t>> bringing(program.initial.size());  // swaps, by position
  for (std::size_t k = 0; k < swaps.size(); ++k)
    if (!swaps[k].out_after) bringing[*resolved[k].initial].push_back(k);
  auto in_at = [&](std::size_t k) {
    return c.position[swaps[k].in_before->op][swaps[k].in_before->piece];
  };
  for (std::size_t b = 0; b < bringing.size(); ++b) {
    auto& ks = bringing[b];
    if (ks.empty()) continue;
    std::sort(ks.begin(), ks.end(), [&](auto x, auto y) { return in_at(x) < in_at(y); });
    for (std::size_t i = 1; i < ks.size(); ++i)
      if (in_at(ks[i]) == in_at(ks[i - 1]))
        return swap_error(c, swaps[ks[i]], "another swap brings it for the same piece");
    for (TaskId reader : c.initial_readers[b]) {
      std::size_t p = c.position_of(program.tasks[reader]);
      auto last = std::find_if(ks.rbegin(), ks.rend(), [&](auto k) { return in_at(k) <= p; });
      if (last == ks.rend())
        return swap_error(c, swaps[ks.front()],
                          describe(c.graph, program.tasks[reader]) +
                              " reads it before the first swap-in brings it from the host");
      resolved[*last].late.push_back(reader);
    }
  }
  return Status::ok();
}

// Every step starts alike: a weight or optimizer state starts the step on the host exactly where
// its update's output ends the step there (the next step's block is that output).
Status check_periodic(Context const& c, Program const& program) {
  auto const& swaps = c.plan.swaps;
  auto ends_on_host = [&](ir::TensorId t, InitialBlock const& b) {
    return std::any_of(swaps.begin(), swaps.end(), [&](plan::Swap const& s) {
      return !s.in_before && s.tensor == t && s.device == b.device && s.region == b.region;
    });
  };
  std::ptrdiff_t paired = 0;
  for (auto const& b : program.initial) {
    auto update = update_of(c.graph, b.tensor);
    if (!update) continue;
    ir::TensorId next = c.graph.op(*update).outputs[0];
    bool ends = ends_on_host(next, b);
    paired += ends ? 1 : 0;
    if (ends != b.on_host)
      return Error(ErrorCode::invalid_argument,
                   "tensor '" + c.graph.tensor(b.tensor).name + "' " +
                       tdl::box_to_string(b.region) + " on device " + std::to_string(b.device) +
                       (b.on_host ? " starts the step on the host but its next value '"
                                  : " starts the step on the device but its next value '") +
                       c.graph.tensor(next).name +
                       (b.on_host ? "' does not end it there" : "' ends it on the host") +
                       ": the next step would start otherwise");
  }
  // The lowering holds a weight where its update writes the next value (lowering.h), so every
  // update's output left on the host was paired above.
  CLEAVE_ASSERT(std::count_if(swaps.begin(), swaps.end(),
                              [&](plan::Swap const& s) {
                                ir::OpId p = c.graph.producer(s.tensor);
                                return !s.in_before && p.valid() && !c.graph.op(p).inputs.empty() &&
                                       update_of(c.graph, c.graph.op(p).inputs[0]) == p;
                              }) == paired,
                "an update's output left on the host without a block of its weight");
  return Status::ok();
}

// The program with each swap's tasks (a swap-out unless the block starts the step on the host, a
// swap-in unless it ends it there) just after the block's writer, or first for a block held
// before the step (so that every task's dependencies still come before it), its late readers
// reading the swap-in, and the ordering edges of its points.
Program with_swaps(Context const& c, std::vector<Resolved> const& resolved) {
  Program const& p = c.program;
  auto const& swaps = c.plan.swaps;
  std::vector<std::vector<std::size_t>> after_writer(p.tasks.size());
  std::vector<TaskId> id(p.tasks.size());
  std::vector<TaskId> first_id(swaps.size());
  // A swap that takes out a copy another brought comes just after that one's tasks.
  std::vector<std::optional<std::size_t>> following(swaps.size());
  for (std::size_t k = 0; k < swaps.size(); ++k)
    if (resolved[k].previous) following[*resolved[k].previous] = k;
  TaskId next = 0;
  auto place = [&](std::size_t k) {
    for (std::optional<std::size_t> f = k; f; f = following[*f]) {
      first_id[*f] = next;
      next += TaskId(swaps[*f].out_after ? 1 : 0) + TaskId(swaps[*f].in_before ? 1 : 0);
    }
  };
  for (std::size_t k = 0; k < swaps.size(); ++k) {
    if (resolved[k].previous) continue;
    if (resolved[k].writer)
      after_writer[*resolved[k].writer].push_back(k);
    else
      place(k);
  }
  for (TaskId i = 0; i < p.tasks.size(); ++i) {
    id[i] = next++;
    for (auto k : after_writer[i])
      place(k);
  }
  Program q;
  q.num_devices = p.num_devices;
  q.initial = p.initial;
  q.tasks.resize(next);
  for (TaskId i = 0; i < p.tasks.size(); ++i) {
    Task& t = q.tasks[id[i]];
    t = p.tasks[i];
    for (auto& d : t.deps)
      d = id[d];
  }
  for (std::size_t k = 0; k < swaps.size(); ++k) {
    auto const& s = swaps[k];
    auto const& writer = resolved[k].writer;
    Task copy;
    copy.device = s.device;
    // A block held before the step is named after the op of the piece it is swapped out after
    // (or in before, where it starts on the host).
    copy.op =
        writer ? p.tasks[*writer].op : ir::OpId(s.out_after ? s.out_after->op : s.in_before->op);
    copy.tensor = s.tensor;
    copy.region = s.region;
    copy.bytes =
        Bytes(tdl::box_volume(s.region) * ir::dtype_bytes(c.graph.tensor(s.tensor).type.dtype));
    TaskId out_id = first_id[k];
    if (s.out_after) {
      Task& out = q.tasks[out_id] = copy;
      out.kind = TaskKind::swap_out;
      // It copies the copy the previous swap brought, else the block itself.
      if (auto const& previous = resolved[k].previous)
        out.deps = {first_id[*previous] + 1};
      else if (writer)
        out.deps = {id[*writer]};
      q.ordering.push_back({out_id, id[c.task_of(*s.out_after)]});
      if (s.out_before) q.ordering.push_back({id[c.task_of(*s.out_before)], out_id});
    }
    if (!s.out_after) q.initial[*resolved[k].initial].on_host = true;
    if (!s.in_before) continue;
    TaskId in_id = first_id[k] + (s.out_after ? 1 : 0);
    Task& in = q.tasks[in_id] = copy;
    in.kind = TaskKind::swap_in;
    if (s.out_after) in.deps = {out_id};
    for (TaskId reader : resolved[k].late) {
      auto& deps = q.tasks[id[reader]].deps;
      if (writer)
        std::replace(deps.begin(), deps.end(), id[*writer], in_id);
      else
        deps.push_back(in_id);
    }
    auto const& order = c.plan.order[static_cast<std::size_t>(s.device)];
    std::size_t in_at = c.position[s.in_before->op][s.in_before->piece];
    // Issued after in_after, else the piece before in_before; at the step's start before the
    // first.
    std::optional<PieceRef> issue = s.in_after;
    if (!issue && in_at > 0) issue = order[in_at - 1];
    if (issue) q.ordering.push_back({in_id, id[c.task_of(*issue)]});
    TaskId before = id[c.task_of(*s.in_before)];
    auto const& deps = q.tasks[before].deps;
    if (std::find(deps.begin(), deps.end(), in_id) == deps.end())
      q.ordering.push_back({before, in_id});
  }
  q.collectives = p.collectives;
  for (auto& col : q.collectives)
    for (auto& m : col.members)
      m = id[m];
  return q;
}

// The program's dependencies between the units the simulator schedules (a task in no
// collective, or a whole collective: its members start together), each edge with the tasks it
// comes from: a compressed list per unit.
struct UnitGraph {
  struct Edge {
    TaskId task;       // waits
    TaskId after;      // for this one
    bool ordering;     // an ordering edge, not a dependency
    std::uint32_t to;  // after's unit
  };
  std::vector<std::uint32_t> first;  // per unit, into edges
  std::vector<Edge> edges;

  explicit UnitGraph(Program const& p) {
    std::vector<std::uint32_t> unit(p.tasks.size());
    for (TaskId i = 0; i < p.tasks.size(); ++i)
      unit[i] = i;
    for (std::size_t c = 0; c < p.collectives.size(); ++c)
      for (auto m : p.collectives[c].members)
        unit[m] = static_cast<std::uint32_t>(p.tasks.size() + c);
    std::vector<std::vector<Edge>> out(p.tasks.size() + p.collectives.size());
    auto add = [&](TaskId task, TaskId after, bool ordering) {
      if (unit[task] != unit[after])
        out[unit[task]].push_back({task, after, ordering, unit[after]});
    };
    for (TaskId i = 0; i < p.tasks.size(); ++i)
      for (TaskId d : p.tasks[i].deps)
        add(i, d, false);
    for (auto const& e : p.ordering)
      add(e.task, e.after, true);
    first.push_back(0);
    for (auto& list : out) {
      edges.insert(edges.end(), list.begin(), list.end());
      first.push_back(static_cast<std::uint32_t>(edges.size()));
    }
  }
  std::size_t units() const { return first.size() - 1; }
};

// An error naming an ordering edge on a cycle of the program's units, if there is one: an order
// that the simulator could not follow (and the runtime might deadlock on).
Status check_acyclic(ir::Graph const& graph, Program const& p) {
  UnitGraph g(p);
  enum : std::uint8_t { fresh, open, done };
  std::vector<std::uint8_t> state(g.units(), fresh);
  struct Frame {
    std::uint32_t unit;
    std::uint32_t next;  // the next of its edges to follow
  };
  for (std::uint32_t root = 0; root < g.units(); ++root) {
    if (state[root] != fresh) continue;
    std::vector<Frame> stack{{root, g.first[root]}};
    state[root] = open;
    while (!stack.empty()) {
      Frame& f = stack.back();
      if (f.next == g.first[f.unit + 1]) {
        state[f.unit] = done;
        stack.pop_back();
        continue;
      }
      std::uint32_t v = g.edges[f.next++].to;
      if (state[v] == fresh) {
        state[v] = open;
        stack.push_back({v, g.first[v]});
        continue;
      }
      if (state[v] == done) continue;
      // A cycle: from v's frame to the top, then back to v. Name an ordering edge on it,
      // preferably one between two pieces of a device's order.
      auto from =
          std::find_if(stack.begin(), stack.end(), [&](Frame const& h) { return h.unit == v; });
      std::optional<UnitGraph::Edge> named;
      for (auto it = from; it != stack.end(); ++it) {
        auto const& e = g.edges[it->next - 1];
        if (!e.ordering) continue;
        bool pieces =
            p.tasks[e.task].kind == TaskKind::compute && p.tasks[e.after].kind == TaskKind::compute;
        if (!named || pieces) named = e;
        if (pieces) break;
      }
      CLEAVE_ASSERT(named.has_value(), "the program's data dependencies form a cycle");
      Task const& a = p.tasks[named->task];
      Task const& b = p.tasks[named->after];
      return Error(ErrorCode::invalid_argument,
                   "the plan's order of device " + std::to_string(a.device) + " runs " +
                       describe(graph, b) + " before " + describe(graph, a) +
                       ", but the former needs what the latter computes (directly or through "
                       "other tasks, or a collective that runs as one): the order contradicts the "
                       "data dependencies");
    }
  }
  return Status::ok();
}

}  // namespace

std::optional<ir::OpId> update_of(ir::Graph const& graph, ir::TensorId t) {
  for (ir::OpId c : graph.consumers(t)) {
    ir::Op const& op = graph.op(c);
    auto role = graph.tensor(op.outputs[0]).role;
    bool update = op.forward.valid() && !op.inputs.empty() && op.inputs[0] == t &&
                  (role == ir::TensorRole::weight || role == ir::TensorRole::optimizer_state);
    if (update) return c;
  }
  return std::nullopt;
}

std::vector<std::vector<TaskId>> initial_readers(ir::Graph const& graph, Program const& program) {
  std::map<std::pair<int, std::uint32_t>, std::vector<std::size_t>> blocks;
  for (std::size_t b = 0; b < program.initial.size(); ++b)
    blocks[{program.initial[b].device, program.initial[b].tensor.value()}].push_back(b);
  std::vector<std::vector<TaskId>> out(program.initial.size());
  auto held = [&](int device, ir::TensorId tensor) -> std::vector<std::size_t> const* {
    auto it = blocks.find({device, tensor.value()});
    return it == blocks.end() ? nullptr : &it->second;
  };
  for (TaskId i = 0; i < program.tasks.size(); ++i) {
    Task const& t = program.tasks[i];
    if (t.kind == TaskKind::transfer) {
      // A collective's member lowered per device gathers from its group: every device's block it
      // overlaps.
      for (int d = 0; d < program.num_devices; ++d) {
        if (t.source_device >= 0 && d != t.source_device) continue;
        if (auto const* bs = held(d, t.tensor))
          for (auto b : *bs)
            if (tdl::box_volume(tdl::intersect(t.region, program.initial[b].region)) > 0)
              out[b].push_back(i);
      }
      continue;
    }
    if (t.kind != TaskKind::compute) continue;
    auto inputs = graph.op(t.op).inputs;
    std::sort(inputs.begin(), inputs.end());
    inputs.erase(std::unique(inputs.begin(), inputs.end()), inputs.end());
    for (auto input : inputs)
      if (auto const* bs = held(t.device, input))
        for (auto b : *bs)
          out[b].push_back(i);
  }
  return out;
}

Status apply_schedule(ir::Graph const& graph, plan::Plan const& plan, Program& program) {
  if (plan.order.empty()) return Status::ok();
  Context c{graph, plan, program, {}, {}, {}, {}};
  c.compute.resize(graph.num_ops());
  c.position.resize(graph.num_ops());
  for (std::size_t o = 0; o < graph.num_ops(); ++o) {
    c.compute[o].resize(plan.ops[o].devices.size());
    c.position[o].resize(plan.ops[o].devices.size());
  }
  for (TaskId i = 0; i < program.tasks.size(); ++i)
    if (program.tasks[i].kind == TaskKind::compute)
      c.compute[program.tasks[i].op.value()][program.tasks[i].piece] = i;
  for (auto const& order : plan.order)
    for (std::size_t k = 0; k < order.size(); ++k)
      c.position[order[k].op][order[k].piece] = k;
  Program scheduled;
  if (plan.swaps.empty()) {
    scheduled = program;
  } else {
    c.readers.resize(program.tasks.size());
    for (TaskId i = 0; i < program.tasks.size(); ++i)
      for (TaskId d : program.tasks[i].deps)
        c.readers[d].push_back(i);
    c.initial_readers = initial_readers(graph, program);
    std::vector<Resolved> resolved;
    for (auto const& s : plan.swaps) {
      CLEAVE_TRY(Resolved r, resolve(c, s));
      resolved.push_back(std::move(r));
    }
    CLEAVE_CHECK_OK(assign_out_in(c, resolved));
    CLEAVE_CHECK_OK(assign_from_host(c, resolved));
    scheduled = with_swaps(c, resolved);
    CLEAVE_CHECK_OK(check_periodic(c, scheduled));
  }
  // Compute tasks keep their relative places: their new ids from the old ones.
  std::vector<TaskId> now;
  for (TaskId i = 0; i < scheduled.tasks.size(); ++i)
    if (scheduled.tasks[i].kind == TaskKind::compute) now.push_back(i);
  std::vector<TaskId> renumber(program.tasks.size(), 0);
  std::size_t k = 0;
  for (TaskId i = 0; i < program.tasks.size(); ++i)
    if (program.tasks[i].kind == TaskKind::compute) renumber[i] = now[k++];
  for (auto const& order : plan.order)
    for (std::size_t j = 1; j < order.size(); ++j)
      scheduled.ordering.push_back(
          {renumber[c.task_of(order[j])], renumber[c.task_of(order[j - 1])]});
  CLEAVE_CHECK_OK(check_acyclic(graph, scheduled));
  program = std::move(scheduled);
  return Status::ok();
}

}  // namespace cleave::lower
