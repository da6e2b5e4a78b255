#include "api/swap_fix.h"

#include <algorithm>
#include <fmt/format.h>
#include <unordered_map>

#include "lower/lifetime.h"
#include "lower/schedule.h"
#include "search/swapadvisor/swap_planner.h"
#include "support/format_bytes.h"

namespace cleave::api {

namespace {

namespace swapadvisor = search::swapadvisor;
using lower::TaskId;

// SwapAdvisor's default (swapadvisor_options' `idle`): a block idle for 2 pieces before it is
// evicted, so that its copy out has time to run.
constexpr int idle_pieces = 2;

// Per device, its compute pieces' tasks in the order they run: the plan's order, else the
// simulator's (by start; a piece's dependencies come earlier in the task list, which breaks ties).
std::vector<std::vector<TaskId>> device_orders(SwapInput const& ctx) {
  auto const& program = ctx.evaluation.program;
  auto const& spans = ctx.evaluation.prediction.sim.spans;
  std::vector<std::vector<TaskId>> out(static_cast<std::size_t>(program.num_devices));
  std::unordered_map<std::uint64_t, TaskId> task_of_piece;
  auto key = [](std::uint32_t op, std::uint32_t piece) {
    return (std::uint64_t{op} << 32) | piece;
  };
  for (TaskId i = 0; i < program.tasks.size(); ++i) {
    auto const& t = program.tasks[i];
    if (t.kind != lower::TaskKind::compute) continue;
    out[static_cast<std::size_t>(t.device)].push_back(i);
    task_of_piece[key(t.op.value(), t.piece)] = i;
  }
  if (!ctx.plan.order.empty()) {
    for (std::size_t d = 0; d < out.size(); ++d) {
      out[d].clear();
      for (auto const& p : ctx.plan.order[d])
        out[d].push_back(task_of_piece.at(key(p.op, p.piece)));
    }
    return out;
  }
  for (auto& tasks : out)
    std::stable_sort(tasks.begin(), tasks.end(),
                     [&](TaskId a, TaskId b) { return spans[a].start < spans[b].start; });
  return out;
}

// One device's pieces as the planner's step (one device, every op whole, swap_planner.h): the
// op at position i is the device's i-th piece, and the blocks held before the step that only its
// pieces read (weights, optimizer state) are the step's. A block the planner may not swap
// (another device, a reduce or a swap reads it, or it is a partial result) counts 0 bytes there,
// or is left out if held before the step, so it neither takes the room nor frees any; its memory
// is the device's beside the room.
struct DeviceStep {
  swapadvisor::StepModel model;
  std::vector<ir::OpId> schedule;      // positions in order
  std::vector<bool> movable;           // per position
  std::vector<plan::PieceRef> pieces;  // per position
  // The most the movable blocks take at once, each from its writer's position to its last
  // reader's, the blocks held before the step throughout: a room the planner needs no eviction in.
  std::int64_t most_live = 0;
};

std::int64_t block_bytes(ir::Graph const& graph, ir::TensorId tensor, tdl::Box const& region) {
  return tdl::box_volume(region) * ir::dtype_bytes(graph.tensor(tensor).type.dtype);
}

bool swapped_by_plan(plan::Plan const& plan, lower::InitialBlock const& b) {
  return std::any_of(plan.swaps.begin(), plan.swaps.end(), [&](plan::Swap const& s) {
    return s.device == b.device && s.tensor == b.tensor && s.region == b.region;
  });
}

// The device's blocks held before the step that only its own pieces read, as the step's blocks
// after its positions, each read by the positions of those pieces.
void add_held_blocks(SwapInput const& ctx, std::vector<std::vector<TaskId>> const& readers,
                     std::unordered_map<TaskId, TaskId> const& position, int device,
                     DeviceStep& s) {
  auto const& program = ctx.evaluation.program;
  auto& m = s.model;
  std::size_t n = s.schedule.size();
  for (std::size_t b = 0; b < program.initial.size(); ++b) {
    auto const& held = program.initial[b];
    if (held.device != device || readers[b].empty() || swapped_by_plan(ctx.plan, held) ||
        !std::all_of(readers[b].begin(), readers[b].end(),
                     [&](TaskId r) { return position.contains(r); }))
      continue;
    auto block = static_cast<std::uint32_t>(n + m.program.initial.size());
    m.program.initial.push_back(held);
    m.bytes.push_back(block_bytes(ctx.graph, held.tensor, held.region));
    m.held_before_step += m.bytes.back();
    for (TaskId r : readers[b])
      m.reads[position.at(r)].push_back(block);
  }
}

DeviceStep device_step(SwapInput const& ctx, std::vector<lower::OutputLifetime> const& lifetimes,
                       std::vector<std::vector<TaskId>> const& held_readers,
                       std::vector<TaskId> const& order, int device) {
  auto const& program = ctx.evaluation.program;
  auto on_device = [&](TaskId t) {
    auto const& task = program.tasks[t];
    return task.kind == lower::TaskKind::compute && task.device == device;
  };
  std::unordered_map<TaskId, TaskId> position;
  for (TaskId i = 0; i < order.size(); ++i)
    position[order[i]] = i;
  DeviceStep s;
  auto& m = s.model;
  std::size_t n = order.size();
  m.task_of_op.resize(n);
  m.bytes.resize(n);
  m.reads.resize(n);
  for (TaskId i = 0; i < n; ++i) {
    lower::Task const& t = program.tasks[order[i]];
    auto const& readers = lifetimes[order[i]].readers;
    bool movable = !t.partial && !lifetimes[order[i]].swapped && !readers.empty() &&
                   std::all_of(readers.begin(), readers.end(), on_device);
    lower::Task as_op;
    as_op.op = ir::OpId(i);
    as_op.tensor = t.tensor;
    as_op.region = t.region;
    m.program.tasks.push_back(std::move(as_op));
    m.task_of_op[i] = i;
    m.bytes[i] = movable ? block_bytes(ctx.graph, t.tensor, t.region) : 0;
    for (TaskId dep : t.deps)
      if (on_device(dep)) m.reads[i].push_back(position.at(dep));
    s.schedule.push_back(ir::OpId(i));
    s.movable.push_back(movable);
    s.pieces.push_back({t.op.value(), t.piece});
  }
  add_held_blocks(ctx, held_readers, position, device, s);
  for (auto& reads : m.reads) {
    std::sort(reads.begin(), reads.end());
    reads.erase(std::unique(reads.begin(), reads.end()), reads.end());
  }
  std::vector<TaskId> last(n);
  for (TaskId i = 0; i < n; ++i) {
    last[i] = i;
    for (TaskId d : m.reads[i])
      if (d < n) last[d] = std::max(last[d], i);
  }
  std::vector<std::int64_t> change(n + 1, 0);
  for (TaskId i = 0; i < n; ++i) {
    change[i] += m.bytes[i];
    change[last[i] + 1] -= m.bytes[i];
  }
  std::int64_t live = m.held_before_step;
  for (TaskId k = 0; k < n; ++k)
    s.most_live = std::max(s.most_live, live += change[k]);
  return s;
}

// The bytes live at the device's peak: those of blocks the planner may move in total, the
// others per role.
void peak_bytes(sim::MemoryUse const& use, DeviceStep const& step, std::vector<TaskId> const& order,
                DeviceSwaps& out) {
  std::unordered_map<TaskId, std::size_t> position;
  for (std::size_t i = 0; i < order.size(); ++i)
    position[order[i]] = i;
  auto const& held = step.model.program.initial;
  for (auto b : report::live_at_peak(use, out.device)) {
    auto const& block = use.blocks[b];
    auto it = position.find(block.task);
    bool movable = block.task == sim::held_before_step
                       ? std::any_of(held.begin(), held.end(),
                                     [&](lower::InitialBlock const& h) {
                                       return h.tensor == block.tensor && h.region == *block.region;
                                     })
                       : it != position.end() && step.movable[it->second];
    if (movable)
      out.movable_bytes += block.bytes;
    else
      out.unmovable[static_cast<std::size_t>(block.role)] += block.bytes;
  }
}

// The planner's swaps on one device for a room, its positions turned back into the device's
// pieces; those of blocks it may not move (0 bytes to the planner) left out.
Expected<std::vector<plan::Swap>> device_swaps(DeviceStep const& step, std::int64_t room,
                                               int device) {
  swapadvisor::SwapRequest request{step.model,
                                   step.schedule,
                                   /*allocation=*/nullptr,
                                   room,
                                   swapadvisor::Eviction::belady,
                                   idle_pieces,
                                   /*early_copy_in=*/true};
  CLEAVE_TRY(std::vector<plan::Swap> swaps, swapadvisor::plan_swaps(request));
  std::vector<plan::Swap> out;
  for (auto s : swaps) {
    auto const& tasks = step.model.program.tasks;
    auto const& held = step.model.program.initial;
    bool held_before = std::any_of(held.begin(), held.end(), [&](lower::InitialBlock const& h) {
      return h.tensor == s.tensor && h.region == s.region;
    });
    auto writer = std::find_if(tasks.begin(), tasks.end(), [&](lower::Task const& t) {
      return t.tensor == s.tensor && t.region == s.region;
    });
    // A block held before the step is the step's only if movable.
    if (!held_before && !step.movable[static_cast<std::size_t>(writer - tasks.begin())]) continue;
    s.device = device;
    if (s.out_after) s.out_after = step.pieces[s.out_after->op];
    if (s.in_before) s.in_before = step.pieces[s.in_before->op];
    if (s.in_after) s.in_after = step.pieces[s.in_after->op];
    if (s.out_before) s.out_before = step.pieces[s.out_before->op];
    out.push_back(std::move(s));
  }
  return out;
}

// The swaps for the least room the planner finds a plan for, from `want` (the room that takes
// the shortfall off) up to the step's most_live (no eviction), and that room. Bisection: a
// larger room never needs more evictions.
struct RoomSwaps {
  std::int64_t room = 0;
  std::vector<plan::Swap> swaps;
};
Expected<RoomSwaps> least_room_swaps(DeviceStep const& step, std::int64_t want, int device) {
  auto at_want = device_swaps(step, want, device);
  if (at_want) return RoomSwaps{want, std::move(*at_want)};
  CLEAVE_TRY(std::vector<plan::Swap> none, device_swaps(step, step.most_live, device));
  RoomSwaps best{step.most_live, std::move(none)};
  std::int64_t lo = want;  // no plan
  for (int i = 0; i < 16 && best.room - lo > 1; ++i) {
    std::int64_t mid = lo + (best.room - lo) / 2;
    if (auto swaps = device_swaps(step, mid, device))
      best = {mid, std::move(*swaps)};
    else
      lo = mid;
  }
  return best;
}

// One over-capacity device's planning: the room asked for and the swaps found.
struct DeviceTrial {
  DeviceSwaps figures;  // over, movable and unmovable bytes
  DeviceStep step;
  std::int64_t want = 0;  // the room asked for
  Expected<RoomSwaps> found = Error(ErrorCode::invalid_argument, "not planned");
};

void plan_device(DeviceTrial& t) {
  t.found = least_room_swaps(t.step, t.want, t.figures.device);
  if (t.found && t.found->swaps.empty())
    t.found = Error(ErrorCode::invalid_argument,
                    "the swap planner found no swaps for any room below " +
                        format_bytes(Bytes(t.step.most_live)) +
                        ", the most the blocks a swap may move (blocks only the device's own "
                        "pieces read: " +
                        format_bytes(Bytes(t.figures.movable_bytes)) +
                        " live at the peak) take at once: some piece has more of them in use or "
                        "idle for fewer than " +
                        std::to_string(idle_pieces) + " pieces");
}

plan::Plan with_swaps(plan::Plan p, std::vector<DeviceTrial> const& trials) {
  for (auto const& t : trials)
    if (t.found) p.swaps.insert(p.swaps.end(), t.found->swaps.begin(), t.found->swaps.end());
  return p;
}

// The planner's room at a device is what the blocks it may move take at each piece, not the
// device's peak, which also holds copies and blocks it may not move, and moves with the copies'
// timing: a device still over after evaluation asks for less room, by what it is over times 2,
// 4, 8... in successive rounds, because a smaller room lowers the peak by less than it shrinks
// (or by nothing where the copies' timing sets the peak): shrinking by the excess alone creeps.
constexpr int max_rounds = 10;

void replan_while_over(SwapInput const& ctx, plan::Plan const& ordered,
                       std::vector<DeviceTrial>& trials) {
  for (int round = 1; round < max_rounds; ++round) {
    auto e = sim::evaluate(
        {ctx.graph, ctx.registry, with_swaps(ordered, trials), ctx.cost, ctx.samples_per_step});
    if (!e) return;  // the caller says why, evaluating the same plan
    bool again = false;
    for (auto& t : trials) {
      auto const& m = e->devices[static_cast<std::size_t>(t.figures.device)].memory;
      if (!t.found || m.peak_bytes <= m.capacity_bytes || t.found->room == 0) continue;
      auto previous = std::move(t.found);
      std::int64_t over = m.peak_bytes - m.capacity_bytes;
      t.want = std::max<std::int64_t>(0, previous->room - over * (std::int64_t{1} << round));
      plan_device(t);
      if (!t.found || t.found->room >= previous->room)
        t.found = std::move(previous);
      else
        again = true;
    }
    if (!again) return;
  }
}

}  // namespace

DeviceSwapPlan plan_device_swaps(SwapInput const& ctx, sim::MemoryUse const& use) {
  auto const& program = ctx.evaluation.program;
  auto orders = device_orders(ctx);
  auto lifetimes = lower::output_lifetimes(program);
  auto held_readers = lower::initial_readers(ctx.graph, program);
  plan::Plan ordered = ctx.plan;
  ordered.order.assign(orders.size(), {});
  for (std::size_t d = 0; d < orders.size(); ++d)
    for (TaskId t : orders[d])
      ordered.order[d].push_back({program.tasks[t].op.value(), program.tasks[t].piece});
  std::vector<DeviceTrial> trials;
  for (auto const& v : ctx.evaluation.violations) {
    auto const& order = orders[static_cast<std::size_t>(v.device)];
    DeviceTrial t{{}, device_step(ctx, lifetimes, held_readers, order, v.device)};
    t.figures.device = v.device;
    t.figures.over_bytes = v.over_bytes;
    peak_bytes(use, t.step, order, t.figures);
    t.want = std::max<std::int64_t>(0, t.figures.movable_bytes - v.over_bytes);
    plan_device(t);
    trials.push_back(std::move(t));
  }
  replan_while_over(ctx, ordered, trials);
  DeviceSwapPlan out{with_swaps(ordered, trials), ctx.plan.order.empty(), {}};
  for (auto& t : trials) {
    auto& d = t.figures;
    if (!t.found) {
      d.why_not = t.found.error().message();
    } else {
      d.room = t.found->room;
      d.swaps = std::move(t.found->swaps);
      for (auto const& s : d.swaps)
        d.swapped_bytes +=
            tdl::box_volume(s.region) * ir::dtype_bytes(ctx.graph.tensor(s.tensor).type.dtype);
    }
    out.devices.push_back(std::move(d));
  }
  return out;
}

Expected<report::PlanChange> swap_fix(report::FixContext const& ctx, sim::MemoryUse const& use) {
  auto planned = plan_device_swaps(ctx, use);
  report::PlanChange change{std::move(planned.plan), {}, {}};
  for (auto const& d : planned.devices) {
    if (d.swaps.empty()) {
      change.unchanged[d.device] = d.why_not;
      continue;
    }
    change.changed[d.device] = fmt::format(
        "{} blocks ({}) copied to the host and back by SwapAdvisor's swap planner (Belady, idle "
        "{} pieces), which holds the blocks a swap may move (blocks only the device's own pieces "
        "read: {} live at the peak) to {} at every piece; every device's "
        "order fixed as {}",
        d.swaps.size(), format_bytes(Bytes(d.swapped_bytes)), idle_pieces,
        format_bytes(Bytes(d.movable_bytes)), format_bytes(Bytes(d.room)),
        planned.simulated_order ? "simulated" : "the plan's");
  }
  return change;
}

}  // namespace cleave::api
