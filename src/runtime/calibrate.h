// `cleave calibrate` (issue 6): measures this machine's CPU cores as cleave devices and writes
// what the cost model needs to predict them: the rates of the `cpu` cluster preset (peak FLOP/s
// from the runtime's matmul kernel, memory bandwidth from a streaming element-wise kernel, copy
// bandwidth between two devices' buffers, the launch overhead of a kernel), and a
// `cleave.profile/1` table: one exact entry per distinct piece the runtime ran in measured steps
// of the given plans (FlexFlow's measure-each-configuration-once), and per op type the
// efficiency those pieces reached (for pieces the table does not hold).
#pragma once

#include <string>
#include <vector>

#include "cost/profile_table.h"
#include "lower/program.h"
#include "ops/op_registry.h"
#include "runtime/comm_backend.h"
#include "runtime/executor.h"
#include "runtime/kernels/kernel.h"
#include "runtime/whole_op.h"
#include "support/units.h"

namespace cleave::runtime {

struct CalibrateOptions {
  int devices = 2;
  int threads_per_device = 0;  // OpenMP threads per device; 0: max(1, cores / devices)
  int repeats = 7;             // timed calls per micro-benchmark, after warm-up calls
};

struct MachineRates {
  FlopsPerSecond peak{0};              // fp32 matmul, the best of a few sizes
  BytesPerSecond memory_bandwidth{0};  // element-wise add: bytes read and written per second
  BytesPerSecond copy_bandwidth{0};    // a copy between two buffers; fit_transfers refines it
  Seconds hop_latency{1e-6};           // per hop of a transfer (two); fit_transfers measures it
  Seconds launch{0};                   // an element-wise kernel on one element
  int threads_per_device = 1;
};

int threads_per_device(CalibrateOptions const& options);

// What one run of the piece takes on the calling thread: the median of `repeats` timed runs after
// two warm-up runs (primitive creation, first touch of the buffers).
Expected<double> seconds_per_call(PieceRun const& piece, int repeats);

// Runs the micro-benchmarks with the kernels of `kernels` (each on `threads_per_device` threads).
Expected<MachineRates> measure_machine(KernelRegistry const& kernels,
                                       ops::OpRegistry const& registry,
                                       CalibrateOptions const& options);

// The `cpu` preset with the measured rates: "cpu:devices=2,peak=87.1GFLOP/s,...".
std::string calibrated_cluster_spec(MachineRates const& rates, int devices);

// Durations of one program's tasks over several measured steps (seconds, per step per task).
struct MeasuredSteps {
  ir::Graph const* graph = nullptr;
  lower::Program const* program = nullptr;
  std::vector<std::vector<TaskSpan>> spans;  // [step][task], seconds since the step began
  std::vector<double> step_seconds;          // per step
};

// Refines the copy bandwidth and measures the hop latency from the point-to-point transfers of
// measured steps, as the runtime does them (the source's worker hands the region over once it is
// written, the destination's worker copies it in: a transfer's span is its receive's): the
// latency is half of (the median duration of small transfers, under 64 KiB, plus the median
// hand-off: how long after its source was written a transfer's receive started on a worker that
// was waiting for it); the bandwidth is the median of bytes / (duration - copy latency) over
// transfers of 1 MiB or more. Collectives' members are left out (their spans are their device's
// whole part in the collective). What is not measured (no such transfers) keeps its value.
void fit_transfers(MachineRates& rates, std::vector<MeasuredSteps> const& measured);

// Runs warmup_steps + steps training steps of the executor's program with `kernels` (the first
// ones warm the kernels up: primitive creation, the conv kernels' timed layout choice; they are
// not kept) and records every task's duration and each step's time; the workers exchange data
// through `backend`.
constexpr int warmup_steps = 2;
Expected<MeasuredSteps> measure_steps(Executor const& executor, KernelRegistry const& kernels,
                                      CommBackend& backend, int steps);

// Adds an exact entry per distinct compute and reduce piece of the programs (the median of every
// measured duration of a piece of that key, over all programs; a key the table holds already
// keeps its entry; a collective's reduce members are not timed alone), and the device kind's
// calibration: per op type, the median efficiency flops / (peak * seconds) of its
// entries, clamped to (0, 1], and the launch overhead.
Status add_measurements(cost::ProfileTable& table, std::vector<MeasuredSteps> const& measured,
                        MachineRates const& rates, std::string const& device_kind);

}  // namespace cleave::runtime
