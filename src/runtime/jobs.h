// The executor's units of work (docs/runtime.md): a lowered program's tasks as the device workers
// run them. A task in no collective is one job, except a transfer, which is two: the send on its
// source device (its worker hands the region it holds to the communication backend) and the
// receive on its destination (which waits for the send). A collective is one job per member
// device: that device's part of it, one backend call, which completes the collective's member
// tasks on that device. The program itself is unchanged (the simulator prices a transfer as one
// task and a collective as one node).
//
// Every job of a collective waits for every dependency its members have outside it, the
// simulator's rule for a collective node: so all its jobs become ready at the same moment, their
// workers take them in one order (a worker blocked in one collective waits only for collectives
// taken before it, never in a cycle), and no member waits in the backend for another's inputs.
#pragma once

#include <vector>

#include "lower/program.h"

namespace cleave::runtime {

using JobId = std::uint32_t;

enum class JobKind : std::uint8_t { task, send, receive, collective };

struct Job {
  JobKind kind = JobKind::task;
  int device = 0;  // the worker that runs it
  // task, send, receive: the task; collective: its first member, which ranks every part of it.
  lower::TaskId task = 0;
  lower::CollectiveId collective = lower::no_collective;
  std::vector<lower::TaskId> completes;  // the tasks done when the job ends
  std::vector<JobId> deps;               // distinct
};

struct Jobs {
  std::vector<Job> jobs;      // dependencies first, but for ordering edges (Program::ordering)
  std::vector<JobId> job_of;  // per task: the job that completes it
};

Jobs expand(lower::Program const& program);

}  // namespace cleave::runtime
