#include "runtime/jobs.h"

#include <algorithm>

#include "support/assert.h"

namespace cleave::runtime {
namespace {

void add_dep(std::vector<JobId>& deps, JobId job) {
  if (std::find(deps.begin(), deps.end(), job) == deps.end()) deps.push_back(job);
}

}  // namespace

Jobs expand(lower::Program const& program) {
  auto const& tasks = program.tasks;
  Jobs out;
  out.job_of.assign(tasks.size(), 0);
  // The parts of each collective, by position in its group, created at its first member.
  std::vector<std::vector<JobId>> parts(program.collectives.size());
  auto add = [&](Job job) {
    out.jobs.push_back(std::move(job));
    return static_cast<JobId>(out.jobs.size() - 1);
  };
  for (lower::TaskId id = 0; id < tasks.size(); ++id) {
    lower::Task const& t = tasks[id];
    if (t.collective != lower::no_collective) {
      auto const& col = program.collectives[t.collective];
      auto& mine = parts[t.collective];
      if (mine.empty()) {
        // Its dependencies from outside: those of every member, all earlier than its first.
        std::vector<JobId> deps;
        for (lower::TaskId m : col.members)
          for (lower::TaskId d : tasks[m].deps)
            if (tasks[d].collective != t.collective) add_dep(deps, out.job_of[d]);
        for (int device : col.group)
          mine.push_back(add({JobKind::collective, device, id, t.collective, {}, deps}));
      }
      auto at = std::find(col.group.begin(), col.group.end(), t.device);
      CLEAVE_ASSERT(at != col.group.end(), "a collective's member on a device outside its group");
      JobId part = mine[static_cast<std::size_t>(at - col.group.begin())];
      out.jobs[part].completes.push_back(id);
      out.job_of[id] = part;
      continue;
    }
    std::vector<JobId> deps;
    for (lower::TaskId d : t.deps)
      add_dep(deps, out.job_of[d]);
    if (t.kind == lower::TaskKind::transfer) {
      JobId send = add({JobKind::send, t.source_device, id, lower::no_collective, {}, deps});
      out.job_of[id] = add({JobKind::receive, t.device, id, lower::no_collective, {id}, {send}});
    } else {
      out.job_of[id] = add({JobKind::task, t.device, id, lower::no_collective, {id}, deps});
    }
  }
  // Ordering edges (the plan's order): what starts the waiting task (a transfer's send, every part
  // of a collective, so that they still become ready together) waits for the job that ends the
  // other.
  for (auto const& e : program.ordering) {
    JobId after = out.job_of[e.after];
    lower::Task const& t = tasks[e.task];
    std::vector<JobId> starts{out.job_of[e.task]};
    if (t.collective != lower::no_collective)
      starts = parts[t.collective];
    else if (out.jobs[starts[0]].kind == JobKind::receive)
      starts = out.jobs[starts[0]].deps;  // its send
    for (JobId j : starts)
      if (j != after) add_dep(out.jobs[j].deps, after);
  }
  return out;
}

}  // namespace cleave::runtime
