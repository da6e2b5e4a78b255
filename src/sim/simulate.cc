#include "sim/simulate.h"

#include <algorithm>
#include <limits>
#include <queue>
#include <span>

#include "support/assert.h"

namespace cleave::sim {
namespace {

class Loop {
 public:
  // `checkpoints`: whether the run records them, for a later run to resume from (delta
  // simulation). Each holds every resource's state, so all of them together grow with devices
  // squared (issue 21): a plain simulation does without.
  Loop(lower::Program const& program, Timings const& timings,
       std::vector<Resource> const& resources, bool checkpoints, double stop_above)
      : program_(program), n_(program.tasks.size()), nodes_(n_ + program.collectives.size()),
        checkpoints_(checkpoints), stop_above_(stop_above) {
    // From the collectives' member lists: far less to read than every task.
    node_of_.resize(n_);
    for (lower::TaskId t = 0; t < n_; ++t)
      node_of_[t] = t;
    for (std::size_t c = 0; c < program.collectives.size(); ++c)
      for (auto m : program.collectives[c].members)
        node_of_[m] = static_cast<NodeId>(n_ + c);
    CLEAVE_ASSERT(timings.tasks.size() == n_, "one timing per task");
    CLEAVE_ASSERT(timings.collectives.size() == program.collectives.size(),
                  "one timing per collective");
    // Every node's duration and resources, copied into flat lists in one pass: taking a node
    // read them through its TaskTiming's own list, two cache misses in a row per node.
    seconds_.resize(nodes_);
    first_resource_.assign(nodes_ + 1, 0);
    resources_.reserve(2 * nodes_);
    key_.resize(nodes_);
    total_.assign(resources.size(), 0.0);
    for (NodeId v = 0; v < nodes_; ++v) {
      if (is_node(v)) {
        TaskTiming const& t = v < n_ ? timings.tasks[v] : timings.collectives[v - n_];
        seconds_[v] = t.seconds;
        for (auto res : t.resources) {
          resources_.push_back(res);
          total_[res] += t.seconds;
        }
        key_[v] = key_of(v);
      }
      first_resource_[v + 1] = static_cast<std::uint32_t>(resources_.size());
    }
    run_.result.busy_seconds.assign(resources.size(), 0.0);
    free_at_.assign(resources.size(), 0.0);
  }

  Run run(Prefix const& prefix, Dependencies const* deps, std::vector<Resource> const& resources) {
    auto const& tasks = program_.tasks;
    std::vector<bool> taken(nodes_, false);
    run_.ready.assign(nodes_, 0.0);
    run_.result.spans.resize(n_);
    node_end_.assign(nodes_, 0.0);
    restore(prefix, taken);
    for (ResourceId r = 0; r < free_at_.size(); ++r)
      check_bound(r);
    if (run_.stopped) return std::move(run_);

    // Edges between nodes; a collective's members' dependencies on each other are inside it.
    // The tasks' dependency lists are read once (after a delta's restart most of the loop's time
    // went to walking them) into each node's dependents. Two walks, one to count and one to fill,
    // instead of a list of the edges to group: that list was a tenth of the simulation's peak
    // (issue 21).
    std::vector<std::uint32_t> waiting(nodes_, 0);
    std::vector<std::uint32_t> first(nodes_ + 1, 0);
    auto each_edge = [&](auto&& f) {  // f(dependent, dependency), neither taken
      auto edge = [&](NodeId u, lower::TaskId d) {
        NodeId v = node_of_[d];
        if (u == v) return;
        if (taken[v])
          run_.ready[u] = std::max(run_.ready[u], node_end_[v]);
        else
          f(u, v);
      };
      for (lower::TaskId i = 0; i < n_; ++i) {
        NodeId u = node_of_[i];
        if (taken[u]) continue;
        if (deps) {
          for (auto k = deps->first[i]; k < deps->first[i + 1]; ++k)
            edge(u, deps->deps[k]);
        } else {
          for (auto d : tasks[i].deps)
            edge(u, d);
        }
      }
      // Ordering-only edges (the plan's per-device orders and swap points) wait like any other.
      for (auto const& e : program_.ordering)
        if (!taken[node_of_[e.task]]) edge(node_of_[e.task], e.after);
    };
    each_edge([&](NodeId u, NodeId v) {
      ++waiting[u];
      ++first[v + 1];
    });
    for (std::size_t v = 0; v < nodes_; ++v)
      first[v + 1] += first[v];
    std::vector<NodeId> dependents(first.back());
    {
      std::vector<std::uint32_t> fill(first.begin(), first.end() - 1);
      each_edge([&](NodeId u, NodeId v) { dependents[fill[v]++] = u; });
    }

    auto later = [this](Entry const& x, Entry const& y) {
      if (x.first != y.first) return x.first > y.first;
      return before(y.second, x.second);
    };
    std::priority_queue<Entry, std::vector<Entry>, decltype(later)> ready(later);
    for (NodeId v = 0; v < nodes_; ++v)
      if (!taken[v] && is_node(v) && waiting[v] == 0) ready.emplace(run_.ready[v], v);
    while (!ready.empty() && !run_.stopped) {
      auto [at, v] = ready.top();
      ready.pop();
      take(v, at, start_of(v, at));
      for (auto k = first[v]; k < first[v + 1]; ++k) {
        NodeId u = dependents[k];
        run_.ready[u] = std::max(run_.ready[u], node_end_[v]);
        if (--waiting[u] == 0) ready.emplace(run_.ready[u], u);
      }
    }
    if (!run_.stopped) finish(resources);
    return std::move(run_);
  }

 private:
  using Entry = std::pair<double, NodeId>;

  bool is_node(NodeId v) const { return v >= n_ || node_of_[v] == v; }
  std::span<ResourceId const> resources(NodeId v) const {
    return {resources_.data() + first_resource_[v], resources_.data() + first_resource_[v + 1]};
  }

  // The canonical order of nodes: tasks before collectives, each by content (by key_of first);
  // by id only where the contents are equal (never in a lowered program).
  bool before(NodeId a, NodeId b) const {
    if (key_[a] != key_[b]) return key_[a] < key_[b];
    if (a < n_) {  // then so is b: their keys are equal
      auto const& x = program_.tasks[a];
      auto const& y = program_.tasks[b];
      if (lower::canonical_less(x, y)) return true;
      if (lower::canonical_less(y, x)) return false;
    } else {
      auto const& x = program_.collectives[a - n_];
      auto const& y = program_.collectives[b - n_];
      if (lower::canonical_less(x, y)) return true;
      if (lower::canonical_less(y, x)) return false;
    }
    return a < b;
  }

  // A prefix of node v's place in the canonical order, in 64 bits: tasks before collectives;
  // then a task's kind, op and piece (saturated), a collective's kind and tensor. Nodes whose
  // keys differ are ordered by them without reading the tasks (ties in ready time are common).
  std::uint64_t key_of(NodeId v) const {
    if (v < n_) {
      auto const& t = program_.tasks[v];
      std::uint64_t piece = std::min<std::uint64_t>(t.piece, (std::uint64_t{1} << 28) - 1);
      return std::uint64_t{static_cast<std::uint8_t>(t.kind)} << 60 |
             std::uint64_t{t.op.value()} << 28 | piece;
    }
    auto const& c = program_.collectives[v - n_];
    return std::uint64_t{1} << 63 | std::uint64_t{static_cast<std::uint8_t>(c.kind)} << 32 |
           c.tensor.value();
  }

  double start_of(NodeId v, double at) const {
    double start = at;
    for (auto res : resources(v))
      start = std::max(start, free_at_[res]);
    return start;
  }

  void checkpoint() {
    if (!checkpoints_) return;
    auto pops = run_.order.size();
    if (pops % Run::checkpoint_every != 0) return;
    if (!run_.checkpoints.empty() && run_.checkpoints.back().pops >= pops) return;
    run_.checkpoints.push_back(
        {pops, free_at_, run_.result.busy_seconds, run_.result.step_seconds});
  }

  // Stops the run once resource r's bound on the step time exceeds stop_above_: it is free from
  // free_at_ on and has total_ - busy seconds of nodes left to run, one at a time.
  void check_bound(ResourceId r) {
    if (free_at_[r] + (total_[r] - run_.result.busy_seconds[r]) > stop_above_) run_.stopped = true;
  }

  // Takes node v, ready at `at`, from `start`: it holds its resources until it ends.
  void take(NodeId v, double at, double start) {
    checkpoint();
    double seconds = seconds_[v];
    double end = start + seconds;
    for (auto res : resources(v)) {
      free_at_[res] = end;
      run_.result.busy_seconds[res] += seconds;
      check_bound(res);
    }
    run_.ready[v] = at;
    node_end_[v] = end;
    run_.result.step_seconds = std::max(run_.result.step_seconds, end);
    if (end > stop_above_) run_.stopped = true;
    run_.order.push_back(v);
    if (v < n_) {
      run_.result.spans[v] = {start, end};
    } else {
      for (auto m : program_.collectives[v - n_].members)
        run_.result.spans[m] = {start, end};
    }
  }

  // Replays a previous run's prefix from its last checkpoint (the resources' state before it is
  // restored, the nodes after it taken again with their recorded spans).
  void restore(Prefix const& prefix, std::vector<bool>& taken) {
    std::size_t from = 0;
    for (auto const& c : prefix.checkpoints) {
      if (c.pops > prefix.taken.size()) break;
      run_.checkpoints.push_back(c);
      from = c.pops;
      free_at_ = c.free_at;
      run_.result.busy_seconds = c.busy;
      run_.result.step_seconds = c.step;
    }
    for (std::size_t p = 0; p < prefix.taken.size(); ++p) {
      NodeId v = prefix.taken[p];
      CLEAVE_ASSERT(is_node(v), "a replayed node is a member of a collective");
      taken[v] = true;
      if (p < from) {
        run_.order.push_back(v);
        run_.ready[v] = prefix.ready[p];
        node_end_[v] = prefix.spans[p].end;
        if (v < n_) {
          run_.result.spans[v] = prefix.spans[p];
        } else {
          for (auto m : program_.collectives[v - n_].members)
            run_.result.spans[m] = prefix.spans[p];
        }
        continue;
      }
      take(v, prefix.ready[p], prefix.spans[p].start);
      CLEAVE_ASSERT(node_end_[v] == prefix.spans[p].end, "a replayed node's duration changed");
    }
  }

  void finish(std::vector<Resource> const& resources) {
    std::size_t nodes = program_.collectives.size();
    for (NodeId t = 0; t < n_; ++t)
      nodes += node_of_[t] == t;
    CLEAVE_ASSERT(run_.order.size() == nodes, "the program's dependencies form a cycle");
    auto& r = run_.result;
    r.compute_seconds.assign(static_cast<std::size_t>(program_.num_devices), 0.0);
    // A program may use fewer devices than the cluster has; the others' streams stay idle.
    for (std::size_t res = 0; res < resources.size(); ++res)
      if (resources[res].device >= 0 && resources[res].device < program_.num_devices)
        r.compute_seconds[static_cast<std::size_t>(resources[res].device)] += r.busy_seconds[res];
    r.idle_seconds.resize(r.compute_seconds.size());
    for (std::size_t d = 0; d < r.compute_seconds.size(); ++d)
      r.idle_seconds[d] = r.step_seconds - r.compute_seconds[d];
  }

  lower::Program const& program_;
  std::size_t n_;
  std::size_t nodes_;
  bool checkpoints_;
  double stop_above_;
  std::vector<NodeId> node_of_;                // per task: its node (itself, or its collective's)
  std::vector<double> seconds_;                // per node
  std::vector<std::uint64_t> key_;             // per node, key_of
  std::vector<std::uint32_t> first_resource_;  // per node, into resources_
  std::vector<ResourceId> resources_;
  std::vector<double> free_at_;
  std::vector<double> total_;  // per resource: the durations of all its nodes
  std::vector<double> node_end_;
  Run run_;
};

}  // namespace

Run run_event_loop(lower::Program const& program, Timings const& timings,
                   std::vector<Resource> const& resources, Prefix const& prefix,
                   Dependencies const* deps, double stop_above) {
  CLEAVE_ASSERT(!deps || deps->first.size() == program.tasks.size() + 1,
                "one dependency range per task");
  return Loop(program, timings, resources, /*checkpoints=*/true, stop_above)
      .run(prefix, deps, resources);
}

SimResult simulate(lower::Program const& program, Timings const& timings,
                   std::vector<Resource> const& resources) {
  return Loop(program, timings, resources, /*checkpoints=*/false,
              std::numeric_limits<double>::infinity())
      .run({}, nullptr, resources)
      .result;
}

SimResult simulate(lower::Program const& program, Timings&& timings,
                   std::vector<Resource> const& resources) {
  Loop loop(program, timings, resources, /*checkpoints=*/false,
            std::numeric_limits<double>::infinity());
  timings = {};
  return loop.run({}, nullptr, resources).result;
}

}  // namespace cleave::sim
