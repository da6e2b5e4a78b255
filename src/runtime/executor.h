// The executor (DESIGN.md "Runtime"): runs one training step of a lowered program with one worker
// thread per device. The program's tasks run as jobs (runtime/jobs.h): a transfer as a send on its
// source's worker and a receive on its destination's, a collective as one call of the
// communication backend by each member device's worker. Each worker runs its device's jobs as they
// become ready (everything they wait for has ended: their dependencies and their ordering edges,
// which carry the plan's order of each device's pieces, Program::ordering), first come first
// served, ties broken by content (the simulator's FIFO policy, so measured and simulated steps
// take the same order), host copies inline like every other task (the simulator puts them on the
// compute stream of such devices); compute tasks run a kernel from the registry or, where none
// handles them, the TDL reference interpreter; reduce tasks are plain loops; swaps move blocks to
// and from a host pool. Every block is charged to its device's arena and freed after its last
// reader (lower::output_lifetimes, the simulator's rule). The data movement rules are
// lower::run_reference's, the oracle this executor must match.
//
// Errors end the run: the first failing job's error is returned, the backend is aborted, and every
// worker wakes and exits (none waits on a dependency, a message or a collective that will never
// come).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lower/program.h"
#include "memory/pool.h"
#include "ops/op_registry.h"
#include "runtime/kernels/kernel.h"

namespace cleave::runtime {

struct DeviceInfo {
  std::string name;
  Bytes capacity;
  memory::Pool pool = {};  // the plan's pool for every block the device holds (plan.h); none: empty
};

class CommBackend;

struct ExecOptions {
  // How the workers exchange data (runtime/comm_backend.h); required. A backend whose run was
  // aborted stays so: give every step that may fail a fresh one.
  CommBackend* backend = nullptr;
  KernelRegistry const* kernels = nullptr;  // null: the interpreter runs every compute task
  int threads_per_device = 0;               // OpenMP threads per worker; 0: max(1, cores/devices)
  // Tensors whose values the result keeps even where their blocks are freed during the step
  // (the check compares gradients, which the update frees).
  std::vector<ir::TensorId> capture;
  // Fault injection (tests): the compute tasks of the op with this name fail.
  std::string fail_op;
  // The devices this process runs (an MPI rank's, runtime/mpi); empty: every device. The others
  // run in other processes that lowered the same program: a job never waits here for one of
  // theirs (the backend's calls wait for their data), a receive from one of them is taken once
  // its message has arrived and a part in a collective once every member has joined it
  // (CommBackend::arrived, joined), and each device takes its parts in collectives in one order
  // common to all processes (a topological order of the jobs), as MPI asks of the members of a
  // communicator.
  std::vector<int> devices;
};

// Whole fp32 values by tensor name.
using Values = std::map<std::string, std::vector<float>, std::less<>>;

using lower::TaskSpan;

// The bytes a device's arena holds from a time on, in seconds from the step's start.
struct MemorySample {
  double time_s = 0;
  std::int64_t bytes = 0;
};

struct DeviceStats {
  double compute_s = 0;  // compute and reduce tasks
  double comm_s = 0;     // sends, receives, parts in collectives and host copies
  double idle_s = 0;     // the rest of the step
  Bytes peak;            // the arena's peak
  // The arena over the step: a sample per allocation and release (blocks held before the step
  // at 0), in order.
  std::vector<MemorySample> memory;
  Bytes capacity;
  std::int64_t kernel_tasks = 0;       // compute tasks a kernel ran
  std::int64_t interpreted_tasks = 0;  // compute tasks the interpreter ran
};

struct StepResult {
  double step_s = 0;
  // When the step began: the origin of `spans` (processes on one machine share this clock, so
  // runtime/mpi sets their spans on one time line).
  std::chrono::steady_clock::time_point start;
  // Per task: a transfer's is its receive's (where the bytes are copied in), a collective
  // member's its device's part in the collective.
  std::vector<TaskSpan> spans;
  std::vector<DeviceStats> devices;
  // Every produced tensor held whole at the end of the step (blocks on devices and the host),
  // and every captured one. A run of some devices only (ExecOptions::devices) also keeps those it
  // holds in part, zeros elsewhere, with `coverage` 1 for each element held and 0 elsewhere.
  Values values;
  Values coverage;  // per tensor of `values` held in part
};

class Executor {
 public:
  // Binds every op and analyses every compute piece once; `devices` gives each device of the
  // program its name and memory capacity.
  static Expected<Executor> create(ir::Graph const& graph, lower::Program program,
                                   ops::OpRegistry const& registry,
                                   std::vector<DeviceInfo> devices);
  Executor(Executor&&) noexcept;
  Executor& operator=(Executor&&) noexcept;
  ~Executor();

  // One step from `sources` (every source tensor's whole value by name).
  Expected<StepResult> run_step(Values const& sources, ExecOptions const& options) const;

  lower::Program const& program() const;
  ir::Graph const& graph() const;

  struct State;  // opaque: what create() prepares for every step

 private:
  explicit Executor(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace cleave::runtime
