#include "sim/simulate.h"

#include <algorithm>
#include <queue>

#include "support/assert.h"

namespace cleave::sim {

SimResult simulate(lower::Program const& program, std::vector<TaskTiming> const& timings,
                   std::vector<Resource> const& resources) {
  auto const& tasks = program.tasks;
  CLEAVE_ASSERT(timings.size() == tasks.size(), "one timing per task");
  std::size_t n = tasks.size();
  std::vector<std::uint32_t> waiting(n, 0);
  std::vector<std::vector<lower::TaskId>> dependents(n);
  for (lower::TaskId i = 0; i < n; ++i) {
    waiting[i] = static_cast<std::uint32_t>(tasks[i].deps.size());
    for (auto d : tasks[i].deps)
      dependents[d].push_back(i);
  }
  // Tasks in the order they become ready (ties: lower id first), so each resource serves its
  // tasks first come, first served.
  using Entry = std::pair<double, lower::TaskId>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> ready;
  std::vector<double> ready_at(n, 0.0);
  for (lower::TaskId i = 0; i < n; ++i)
    if (waiting[i] == 0) ready.emplace(0.0, i);

  SimResult r;
  r.spans.resize(n);
  r.busy_seconds.assign(resources.size(), 0.0);
  std::vector<double> free_at(resources.size(), 0.0);
  while (!ready.empty()) {
    auto [at, i] = ready.top();
    ready.pop();
    TaskTiming const& t = timings[i];
    double start = at;
    for (auto res : t.resources)
      start = std::max(start, free_at[res]);
    double end = start + t.seconds;
    for (auto res : t.resources) {
      free_at[res] = end;
      r.busy_seconds[res] += t.seconds;
    }
    r.spans[i] = {start, end};
    r.step_seconds = std::max(r.step_seconds, end);
    for (auto j : dependents[i]) {
      ready_at[j] = std::max(ready_at[j], end);
      if (--waiting[j] == 0) ready.emplace(ready_at[j], j);
    }
  }
  r.compute_seconds.assign(static_cast<std::size_t>(program.num_devices), 0.0);
  for (std::size_t res = 0; res < resources.size(); ++res)
    if (resources[res].device >= 0)
      r.compute_seconds[static_cast<std::size_t>(resources[res].device)] += r.busy_seconds[res];
  r.idle_seconds.resize(r.compute_seconds.size());
  for (std::size_t d = 0; d < r.compute_seconds.size(); ++d)
    r.idle_seconds[d] = r.step_seconds - r.compute_seconds[d];
  return r;
}

}  // namespace cleave::sim
