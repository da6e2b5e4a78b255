#include "sim/delta.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "support/assert.h"

namespace cleave::sim {
namespace {

constexpr NodeId no_node = std::numeric_limits<NodeId>::max();

// What the new run needs to know about the old program once the lowering has moved on.
struct OldProgram {
  std::size_t tasks = 0;
  std::vector<lower::CollectiveId> collective_of;  // per task
  std::vector<lower::CollectiveKind> kinds;        // per collective
  std::vector<std::size_t> sizes;                  // per collective: members
  std::vector<lower::TaskId> first_member;         // per collective
  std::vector<Bytes> bytes;                        // per collective
  std::vector<std::vector<int>> groups;            // per collective
};

void remember(lower::Program const& p, OldProgram& o) {
  o.tasks = p.tasks.size();
  o.collective_of.assign(p.tasks.size(), lower::no_collective);
  for (lower::CollectiveId c = 0; c < p.collectives.size(); ++c)
    for (auto m : p.collectives[c].members)
      o.collective_of[m] = c;
  o.kinds.clear();
  o.sizes.clear();
  o.first_member.clear();
  o.bytes.clear();
  o.groups.resize(p.collectives.size());
  for (std::size_t c = 0; c < p.collectives.size(); ++c) {
    auto const& col = p.collectives[c];
    o.kinds.push_back(col.kind);
    o.sizes.push_back(col.members.size());
    o.first_member.push_back(col.members.front());
    o.bytes.push_back(col.bytes);
    o.groups[c] = col.group;
  }
}

// Moves list[*prev[i]] to list[i] for every i < n that `maps`, within the list, and cuts it to n.
// The previous ids increase (the lowering keeps its parts and their tasks in order), so moving the
// ones bound for lower ids first, in order, then the others, last first, never overwrites one not
// yet moved; the first tasks, whose ids did not change, are not touched.
template <typename T, typename Maps>
void move_mapped(std::vector<T>& list, std::vector<std::optional<lower::TaskId>> const& prev,
                 std::size_t n, Maps const& maps) {
  if (list.size() < n) list.resize(n);
  for (lower::TaskId i = 0; i < n; ++i)
    if (prev[i] && *prev[i] > i && maps(i)) list[i] = std::move(list[*prev[i]]);
  for (auto i = static_cast<lower::TaskId>(n); i-- > 0;)
    if (prev[i] && *prev[i] < i && maps(i)) list[i] = std::move(list[*prev[i]]);
  list.resize(n);
}

}  // namespace

struct DeltaSimulator::Scratch {
  OldProgram old;
  Dependencies tail;  // the dependency lists from the first task whose id changed on
  std::vector<NodeId> old_of, new_of, node_of;
  std::vector<lower::TaskId> new_task;
  std::vector<double> bound;
  std::vector<double> left;  // per resource (surely_above)
  std::vector<bool> done;
  std::vector<lower::TaskId> fresh;
  Prefix prefix;
};

DeltaSimulator::DeltaSimulator(ir::Graph const& graph, lower::Lowering lowering,
                               cost::CostModel const& cost, std::int64_t samples_per_step)
    : graph_(&graph), lowering_(std::move(lowering)), cost_(&cost), samples_(samples_per_step),
      resources_(resources_of(cost.cluster())), scratch_(std::make_unique<Scratch>()) {}
DeltaSimulator::DeltaSimulator(DeltaSimulator&&) noexcept = default;
DeltaSimulator& DeltaSimulator::operator=(DeltaSimulator&&) noexcept = default;
DeltaSimulator::~DeltaSimulator() = default;

Expected<DeltaSimulator> DeltaSimulator::create(ir::Graph const& graph, plan::Plan plan,
                                                ops::OpRegistry const& registry,
                                                cost::CostModel const& cost,
                                                std::int64_t samples_per_step) {
  CLEAVE_TRY(auto lowering, lower::Lowering::create(graph, std::move(plan), registry));
  DeltaSimulator d(graph, std::move(lowering), cost, samples_per_step);
  d.simulate_all();
  return d;
}

void DeltaSimulator::simulate_all() {
  auto const& program = lowering_.program();
  costs_ = collective_costs(program, *graph_, *cost_);
  timings_ = timings_of(program, *graph_, *cost_, costs_);
  index_ = index_of(*graph_, program);
  run_ = run_event_loop(program, timings_, resources_, {}, &index_.deps);
  prediction_ = summarize(*graph_, program, *cost_, costs_, timings_, std::move(run_.result),
                          samples_, &index_);
  work_ = {program.tasks.size(), program.tasks.size() + program.collectives.size(),
           run_.order.size(), 0};
}

Expected<Prediction> DeltaSimulator::apply(ir::OpId op, plan::OpConfig config) {
  CLEAVE_TRY(auto p,
             apply_unless_above(op, std::move(config), std::numeric_limits<double>::infinity()));
  return *p;
}

Expected<Prediction const*> DeltaSimulator::apply_unless_above(ir::OpId op, plan::OpConfig config,
                                                               double step_above) {
  CLEAVE_ASSERT(!(kept_.valid && kept_.gave_up), "an apply that gave up is undone before another");
  remember(lowering_.program_in_flux(), scratch_->old);
  CLEAVE_CHECK_OK(lowering_.reconfigure(op, std::move(config)));
  // For undo(): the index is copied into the buffer kept from the last apply (its allocations
  // reused), since the steps below update it in place; the timings are rearranged in place and
  // undo() moves them back (map_tasks); the costs, run and prediction are replaced whole and kept
  // by moving them (rerun_from).
  kept_.valid = true;
  kept_.gave_up = false;
  kept_.index = index_;
  kept_.work = work_;
  work_ = {lowering_.program_in_flux().tasks.size(), 0, 0, 0};
  map_tasks();
  update_index();
  auto costs = reprice_collectives();
  double at = restart_time();
  if (!rerun_from(at, std::move(costs), step_above)) return nullptr;
  return &prediction_;
}

// Per task its node, and the nodes that are what they were (same content, same dependencies),
// both ways; the others are new in the new run or gone from the old one. Timings are updated in
// place: a task that maps to an old one, both in no collective, keeps the old one's; the others
// are priced (members take no timing of their own).
void DeltaSimulator::map_tasks() {
  Scratch& s = *scratch_;
  OldProgram const& old = s.old;
  auto const& p = lowering_.program_in_flux();
  auto const& prev = lowering_.previous_ids();
  std::size_t n = p.tasks.size();
  s.old_of.assign(n + p.collectives.size(), no_node);
  s.new_of.assign(old.tasks + old.kinds.size(), no_node);
  // The tasks themselves are read only where they are new.
  auto& node_of = s.node_of;
  node_of.resize(n);
  for (lower::TaskId i = 0; i < n; ++i)
    node_of[i] = i;
  for (std::size_t c = 0; c < p.collectives.size(); ++c)
    for (auto m : p.collectives[c].members)
      node_of[m] = static_cast<NodeId>(n + c);
  auto keeps_timing = [&](lower::TaskId i) {
    return node_of[i] == i && prev[i] && old.collective_of[*prev[i]] == lower::no_collective;
  };
  // For undo(), instead of a copy of every timing (each with its list on the heap): per old task
  // the new one that keeps its timing, and the old timings no new task keeps (the changed tasks';
  // members of collectives have none), moved out before the list is rearranged.
  auto& kept_by = kept_.timing_kept_by;
  kept_by.assign(old.tasks, std::nullopt);
  for (lower::TaskId i = 0; i < n; ++i)
    if (keeps_timing(i)) kept_by[*prev[i]] = i;
  kept_.dropped_timings.clear();
  for (lower::TaskId j = 0; j < old.tasks; ++j)
    if (!kept_by[j] && old.collective_of[j] == lower::no_collective)
      kept_.dropped_timings.emplace_back(j, std::move(timings_.tasks[j]));
  move_mapped(timings_.tasks, prev, n, keeps_timing);
  for (lower::TaskId i = 0; i < n; ++i) {
    if (keeps_timing(i)) {
      s.old_of[i] = *prev[i];
      s.new_of[*prev[i]] = i;
    } else if (node_of[i] != i) {
      timings_.tasks[i] = {};
    } else {
      timings_.tasks[i] = timing_of(p.tasks[i], *graph_, *cost_);
      ++work_.tasks_priced;
    }
  }
}

// The task index, in place: a task that maps to an old one has the old one's facts (but maybe
// another collective), and its dependency list renumbered where those map too (a dependency may
// be a task that now waits for others: then the task's own list is read). The tasks before the
// first whose id changed keep their lists as they are (their dependencies come before them, so
// they kept their ids too).
void DeltaSimulator::update_index() {
  Scratch& s = *scratch_;
  auto const& p = lowering_.program_in_flux();
  auto const& prev = lowering_.previous_ids();
  std::size_t n = p.tasks.size();
  auto& new_task = s.new_task;
  new_task.assign(s.old.tasks, no_node);
  for (lower::TaskId i = 0; i < n; ++i)
    if (prev[i]) new_task[*prev[i]] = i;
  lower::TaskId same = 0;
  while (same < n && prev[same] && *prev[same] == same)
    ++same;
  auto& deps = index_.deps;  // the old program's lists until they are cut at `same` below
  auto& tail = s.tail;       // the lists of the tasks from `same` on
  tail.first.assign(1, 0);
  tail.deps.clear();
  for (lower::TaskId i = same; i < n; ++i) {
    bool mapped = prev[i].has_value();
    for (auto k = mapped ? deps.first[*prev[i]] : 0; mapped && k < deps.first[*prev[i] + 1]; ++k) {
      mapped = new_task[deps.deps[k]] != no_node;
      tail.deps.push_back(new_task[deps.deps[k]]);
    }
    if (!mapped) {
      tail.deps.resize(tail.first.back());
      auto const& own = lowering_.current_deps(i);  // the program's may name old ids
      tail.deps.insert(tail.deps.end(), own.begin(), own.end());
    }
    tail.first.push_back(static_cast<std::uint32_t>(tail.deps.size()));
  }
  std::uint32_t kept_deps = deps.first[same];
  deps.deps.resize(kept_deps);
  deps.deps.insert(deps.deps.end(), tail.deps.begin(), tail.deps.end());
  deps.first.resize(same + 1);
  for (std::size_t k = 1; k < tail.first.size(); ++k)
    deps.first.push_back(kept_deps + tail.first[k]);
  auto& facts = index_.facts;
  move_mapped(facts, prev, n, [&](lower::TaskId i) { return prev[i].has_value(); });
  for (lower::TaskId i = 0; i < n; ++i) {
    if (!prev[i]) facts[i] = facts_of(*graph_, p.tasks[i]);
    facts[i].member = s.node_of[i] != i;
  }
}

// A collective that is what an old one was (same kind, group, bytes and member tasks) keeps its
// price; the others are priced anew.
std::vector<cost::CollectiveCost> DeltaSimulator::reprice_collectives() {
  Scratch& s = *scratch_;
  OldProgram const& old = s.old;
  auto const& p = lowering_.program_in_flux();
  auto const& prev = lowering_.previous_ids();
  std::size_t n = p.tasks.size();
  auto old_collective = [&](lower::Collective const& c) -> lower::CollectiveId {
    auto first = prev[c.members.front()];
    if (!first) return lower::no_collective;
    auto oc = old.collective_of[*first];
    if (oc == lower::no_collective || old.kinds[oc] != c.kind ||
        old.sizes[oc] != c.members.size() || old.bytes[oc] != c.bytes || old.groups[oc] != c.group)
      return lower::no_collective;
    for (auto m : c.members)
      if (!prev[m] || old.collective_of[*prev[m]] != oc) return lower::no_collective;
    return oc;
  };
  std::swap(timings_.collectives, kept_.collective_timings);  // for undo()
  timings_.collectives.clear();
  std::vector<cost::CollectiveCost> costs(p.collectives.size());
  for (std::size_t c = 0; c < p.collectives.size(); ++c) {
    auto oc = old_collective(p.collectives[c]);
    if (oc != lower::no_collective) {
      s.old_of[n + c] = static_cast<NodeId>(old.tasks + oc);
      s.new_of[old.tasks + oc] = static_cast<NodeId>(n + c);
      costs[c] = costs_[oc];  // kept for undo()
    } else {
      costs[c] = cost_of(p.collectives[c], p, *graph_, *cost_);
      ++work_.tasks_priced;
    }
    timings_.collectives.push_back(timing_of(costs[c], p.collectives[c], cost_->cluster()));
  }
  return costs;
}

// The restart time T: the old run's nodes that became ready before T are taken again exactly as
// before. T is at most the old ready time of every node that is gone, and at most a lower bound
// of the new ready time of every new node: the latest of its dependencies' lower bounds (new
// nodes) or old ready times (others; their old end where that is before a first bound).
double DeltaSimulator::restart_time() {
  Scratch& s = *scratch_;
  OldProgram const& old = s.old;
  auto const& p = lowering_.program_in_flux();
  std::size_t n = p.tasks.size();
  auto const& node_of = s.node_of;
  auto const& old_of = s.old_of;
  double gone = std::numeric_limits<double>::infinity();
  for (NodeId v = 0; v < s.new_of.size(); ++v) {
    bool is_node = v >= old.tasks || old.collective_of[v] == lower::no_collective;
    if (is_node && s.new_of[v] == no_node) gone = std::min(gone, run_.ready[v]);
  }
  // The tasks whose node is new, ascending (a new collective's first member only), so that a
  // node's new dependencies come before it.
  auto& fresh = s.fresh;
  auto& done = s.done;
  fresh.clear();
  done.assign(p.collectives.size(), false);
  for (lower::TaskId i = 0; i < n; ++i) {
    NodeId u = node_of[i];
    if (old_of[u] != no_node) continue;
    if (u >= n) {
      if (done[u - n]) continue;
      done[u - n] = true;
    }
    fresh.push_back(i);
  }
  auto& bound = s.bound;
  bound.assign(old_of.size(), 0.0);
  auto restart = [&](double first_bound) {
    double t = gone;
    auto dep_bound = [&](NodeId w) {
      if (old_of[w] == no_node) return bound[w];
      double ready = run_.ready[old_of[w]];
      return ready < first_bound ? old_span(old_of[w]).end : ready;
    };
    for (auto i : fresh) {
      NodeId u = node_of[i];
      // The index's lists (update_index), since the program's may name old ids
      // (Lowering::program_in_flux).
      auto const& deps = index_.deps;
      double b = 0;
      if (u < n) {
        for (auto k = deps.first[i]; k < deps.first[i + 1]; ++k)
          b = std::max(b, dep_bound(node_of[deps.deps[k]]));
      } else {
        for (auto m : p.collectives[u - n].members)
          for (auto k = deps.first[m]; k < deps.first[m + 1]; ++k)
            if (node_of[deps.deps[k]] != u) b = std::max(b, dep_bound(node_of[deps.deps[k]]));
      }
      bound[u] = b;
      t = std::min(t, b);
    }
    return t;
  };
  return restart(restart(-std::numeric_limits<double>::infinity()));
}

// The old run's span of node v (its result moved into prediction_).
TaskSpan DeltaSimulator::old_span(NodeId v) const {
  auto const& old = scratch_->old;
  auto const& spans = prediction_.sim.spans;
  return v < old.tasks ? spans[v] : spans[old.first_member[v - old.tasks]];
}

// Whether the new run's step is sure to exceed `step_above` before the loop is built: the bound
// the loop checks once it has restored checkpoint `from` (none: the start), per resource its free
// time there plus the durations of the nodes it runs after it, which are the old run's total
// (its busy time) less the checkpoint's, less the gone nodes' and plus the new nodes' durations.
bool DeltaSimulator::surely_above(Checkpoint const* from, double step_above) const {
  if (!(step_above < std::numeric_limits<double>::infinity())) return false;
  Scratch& s = *scratch_;
  OldProgram const& old = s.old;
  auto const& p = lowering_.program_in_flux();
  std::size_t n = p.tasks.size();
  auto& left = s.left;
  left = prediction_.sim.busy_seconds;
  auto add = [&](TaskTiming const& t, double sign) {
    for (auto r : t.resources)
      left[r] += sign * t.seconds;
  };
  // The gone nodes: the old tasks whose timings no new task kept (map_tasks), and collectives.
  for (auto const& [v, timing] : kept_.dropped_timings)
    add(timing, -1);
  for (std::size_t c = 0; c < old.kinds.size(); ++c)
    if (s.new_of[old.tasks + c] == no_node) add(kept_.collective_timings[c], -1);
  for (auto i : s.fresh) {
    NodeId u = s.node_of[i];
    add(u < n ? timings_.tasks[u] : timings_.collectives[u - n], 1);
  }
  for (std::size_t r = 0; r < left.size(); ++r) {
    double at = from ? from->free_at[r] - from->busy[r] : 0;
    if (at + left[r] > step_above) return true;
  }
  return false;
}

// Replays the old run's nodes that became ready before `at`, then runs the loop on from there;
// returns false, the old run and prediction left as they are, when the loop gave up above
// `step_above`.
bool DeltaSimulator::rerun_from(double at, std::vector<cost::CollectiveCost> costs,
                                double step_above) {
  Scratch& s = *scratch_;
  auto const& p = lowering_.program_in_flux();
  Prefix& prefix = s.prefix;
  prefix.taken.clear();
  prefix.ready.clear();
  prefix.spans.clear();
  for (NodeId v : run_.order) {
    if (!(run_.ready[v] < at)) break;
    CLEAVE_ASSERT(s.new_of[v] != no_node, "a node taken before the restart time has changed");
    prefix.taken.push_back(s.new_of[v]);
    prefix.ready.push_back(run_.ready[v]);
    prefix.spans.push_back(old_span(v));
  }
  work_.nodes_replayed = prefix.taken.size();
  std::size_t usable = 0;  // the checkpoints within the prefix (they are in order of pops)
  while (usable < run_.checkpoints.size() && run_.checkpoints[usable].pops <= prefix.taken.size())
    ++usable;
  Checkpoint const* from = usable > 0 ? &run_.checkpoints[usable - 1] : nullptr;
  if (surely_above(from, step_above)) {
    kept_.gave_up = true;
    work_.nodes = 0;
    return false;
  }
  // Only those the loop restores (copied into the scratch's lists, their allocations reused).
  prefix.checkpoints.assign(run_.checkpoints.begin(),
                            run_.checkpoints.begin() + static_cast<std::ptrdiff_t>(usable));
  auto run = run_event_loop(p, timings_, resources_, prefix, &index_.deps, step_above);
  work_.nodes = run.order.size();
  if (run.stopped) {
    kept_.gave_up = true;
    return false;
  }
  kept_.run = std::exchange(run_, std::move(run));
  kept_.costs = std::exchange(costs_, std::move(costs));
  kept_.prediction =
      std::exchange(prediction_, summarize(*graph_, p, *cost_, costs_, timings_,
                                           std::move(run_.result), samples_, &index_));
  return true;
}

void DeltaSimulator::undo() {
  CLEAVE_ASSERT(kept_.valid, "undo without an apply to undo");
  kept_.valid = false;
  lowering_.undo();
  // The timings map_tasks moved go back to their old tasks, those it dropped return, and the
  // old program's members of collectives have none again.
  auto const& kept_by = kept_.timing_kept_by;
  auto& tasks = timings_.tasks;
  move_mapped(tasks, kept_by, kept_by.size(),
              [&](lower::TaskId j) { return kept_by[j].has_value(); });
  for (lower::TaskId j = 0; j < kept_by.size(); ++j)
    if (!kept_by[j]) tasks[j] = {};
  for (auto& [j, timing] : kept_.dropped_timings)
    tasks[j] = std::move(timing);
  std::swap(timings_.collectives, kept_.collective_timings);
  std::swap(index_, kept_.index);
  std::swap(work_, kept_.work);
  if (kept_.gave_up) return;
  std::swap(costs_, kept_.costs);
  std::swap(run_, kept_.run);
  std::swap(prediction_, kept_.prediction);
}

}  // namespace cleave::sim
