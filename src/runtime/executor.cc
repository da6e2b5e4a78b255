#include "runtime/executor.h"

#include <malloc.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <limits>
#include <mutex>
#include <optional>
#include <queue>
#include <thread>
#include <tuple>

#include "lower/lifetime.h"
#include "runtime/collective_part.h"
#include "runtime/comm_backend.h"
#include "runtime/jobs.h"
#include "runtime/whole_op.h"
#include "support/assert.h"
#include "tdl/interpreter.h"

namespace cleave::runtime {

namespace {

// The device workers' threads, kept from step to step: thread i runs fn(i) for each step that
// asks for at least i + 1 of them. A fresh thread per device each step (as until issue 22's
// two-core work) also gave each step a fresh OpenMP team for oneDNN's and the loop kernels'
// parallel regions: on a loaded machine the scheduler started each new team thread only after
// other processes' time slices (START_DEBIT), and a two-thread ResNet-18 step's first parallel
// kernels waited 4-32 ms each, in one step in three or four; threads woken rather than created
// are scheduled at once. It also keeps each thread's oneDNN scratchpads and OpenMP team warm.
class WorkerPool {
 public:
  WorkerPool() = default;
  WorkerPool(WorkerPool const&) = delete;
  WorkerPool& operator=(WorkerPool const&) = delete;
  ~WorkerPool() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    start_.notify_all();
    if (pid_ != ::getpid()) forget_threads();
    for (auto& t : threads_)
      t.join();
  }

  // Runs fn(0) .. fn(n - 1), each on its own thread of the pool (started where it has fewer),
  // and returns once all have returned. One caller at a time (`in_use`).
  void run(std::size_t n, std::function<void(std::size_t)> const& fn) {
    std::unique_lock lock(mutex_);
    if (pid_ != ::getpid()) forget_threads();
    while (threads_.size() < n)
      threads_.emplace_back([this, i = threads_.size()] { loop(i); });
    fn_ = &fn;
    active_ = n;
    remaining_ = n;
    ++generation_;
    start_.notify_all();
    done_.wait(lock, [&] { return remaining_ == 0; });
    fn_ = nullptr;
  }

  std::mutex in_use;  // held by the step running on the pool

 private:
  // In a child forked after the pool started threads, which has none of them: leaves their
  // handles (neither joinable nor detachable there) and starts afresh.
  void forget_threads() {
    new std::vector<std::thread>(std::move(threads_));
    threads_.clear();
    pid_ = ::getpid();
  }

  void loop(std::size_t i) {
    std::uint64_t seen = 0;
    std::unique_lock lock(mutex_);
    while (true) {
      start_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      if (i >= active_) continue;
      auto const* fn = fn_;
      lock.unlock();
      (*fn)(i);
      lock.lock();
      if (--remaining_ == 0) done_.notify_one();
    }
  }

  std::mutex mutex_;
  std::condition_variable start_, done_;
  std::function<void(std::size_t)> const* fn_ = nullptr;
  std::uint64_t generation_ = 0;
  std::size_t active_ = 0, remaining_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;
  pid_t pid_ = ::getpid();  // the process that started threads_
};

}  // namespace

struct Executor::State {
  State(ir::Graph const& g, lower::Program p, std::vector<DeviceInfo> d)
      : graph(g), program(std::move(p)), devices(std::move(d)) {}
  ir::Graph const& graph;
  lower::Program program;
  std::vector<DeviceInfo> devices;
  std::vector<lower::OutputLifetime> lifetimes;
  std::vector<std::shared_ptr<tdl::BoundOp const>> bound;  // per op
  std::vector<std::optional<tdl::PieceInfo>> pieces;       // per task: compute tasks only
  Jobs jobs;
  std::vector<std::uint32_t> rank;              // per job: its task's canonical position
  std::vector<std::vector<JobId>> dependents;   // per job
  std::vector<std::uint32_t> per_device_count;  // jobs per device
  // Outputs of compute tasks, kept from step to step (BufferPool): up to 4 GiB.
  std::shared_ptr<BufferPool> buffers = std::make_shared<BufferPool>(std::size_t{4} << 30);
  // Per job: the next part in a collective on its device in the order common to all processes
  // (none: the last, or not a part); whether one comes before it (ExecOptions::devices).
  std::vector<JobId> next_part;
  std::vector<bool> has_previous_part;
  // Per compute task, the kernel that runs it, found once (KernelRegistry::find asks each kernel
  // in turn whether it handles the call: 0.7-0.9 ms of a 35 ms ResNet-18 step when asked every
  // step) for the registry whose id is `kernels_for` (the first one a step used; steps with
  // another registry ask theirs each time). Null: not yet asked.
  std::unique_ptr<std::atomic<Kernel const*>[]> kernel_of;
  mutable std::atomic<std::uint64_t> kernels_for{0};
  // The workers' threads (declared last: destroyed, joined, first).
  std::unique_ptr<WorkerPool> pool = std::make_unique<WorkerPool>();
};

namespace {

// Blocks are heap buffers allocated and freed every step. With glibc's defaults a large buffer
// is mmap'ed on allocation and unmapped on free, so every step faults its pages in afresh (it
// doubled the step time of a 4-layer MLP). Raising the mmap threshold to glibc's maximum and
// never trimming keeps freed memory in the process for the next step; what an arena caps (the
// bytes of blocks a device holds) is unaffected.
void keep_freed_memory() {
  static bool const done = [] {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
    return true;
  }();
  (void)done;
}

constexpr JobId no_job = ~JobId{0};

// Executor::State::kernel_of's mark of a task that no kernel handles (the interpreter's).
class NoKernel final : public Kernel {
 public:
  std::string_view name() const override { return "none"; }
  bool handles(KernelCall const&) const override { return false; }
  Status run(KernelCall const&) const override {
    return Error(ErrorCode::unsupported, "no kernel handles the call");
  }
} const no_kernel;

// Each device's parts in collectives in one order that every process lowering the program
// computes alike: the jobs' topological order taking the lowest ready job first.
void order_parts(Executor::State& s) {
  auto const& jobs = s.jobs.jobs;
  std::vector<std::uint32_t> waiting(jobs.size());
  std::priority_queue<JobId, std::vector<JobId>, std::greater<>> ready;
  for (JobId j = 0; j < jobs.size(); ++j)
    if ((waiting[j] = static_cast<std::uint32_t>(jobs[j].deps.size())) == 0) ready.push(j);
  std::vector<JobId> last(s.devices.size(), no_job);
  s.next_part.assign(jobs.size(), no_job);
  s.has_previous_part.assign(jobs.size(), false);
  while (!ready.empty()) {
    JobId j = ready.top();
    ready.pop();
    if (jobs[j].kind == JobKind::collective) {
      JobId& before = last[static_cast<std::size_t>(jobs[j].device)];
      if (before != no_job) {
        s.next_part[before] = j;
        s.has_previous_part[j] = true;
      }
      before = j;
    }
    for (JobId u : s.dependents[j])
      if (--waiting[u] == 0) ready.push(u);
  }
}

using Clock = std::chrono::steady_clock;
using lower::Task;
using lower::TaskId;
using lower::TaskKind;

float reducer_identity_f(tdl::Reducer r) {
  return static_cast<float>(tdl::reducer_identity(r));
}

// One step: shared state of the workers.
class StepRun {
 public:
  StepRun(Executor::State const& s, ExecOptions const& options)
      : s_(s), options_(options), backend_(*options.backend), wake_(s.devices.size()),
        ready_(s.devices.size()), waiting_(s.jobs.jobs.size(), 0),
        queued_(std::make_unique<std::atomic<std::uint32_t>[]>(s.devices.size())),
        remaining_(s.program.tasks.size(), 0), spans_(s.program.tasks.size()),
        stats_(s.devices.size()), captured_(s.graph.num_tensors(), false),
        all_local_(options.devices.empty()), local_(s.devices.size(), all_local_),
        gated_(s.devices.size()),
        host_arena_("host", Bytes(std::numeric_limits<std::int64_t>::max())),
        host_(s.graph, host_arena_) {
    for (int d : options.devices)
      local_[static_cast<std::size_t>(d)] = true;
    for (auto const& d : s.devices)
      arenas_.push_back(std::make_unique<Arena>(d.name, d.capacity, d.pool));
    for (auto& a : arenas_)
      stores_.push_back(std::make_unique<BlockStore>(s.graph, *a, s.buffers));
    for (TaskId i = 0; i < s.program.tasks.size(); ++i)
      remaining_[i] = static_cast<int>(s.lifetimes[i].readers.size());
    for (JobId j = 0; j < s.jobs.jobs.size(); ++j) {
      if (!local(j)) continue;
      // Jobs of other processes' devices are waited for in the backend's calls.
      auto const& deps = s.jobs.jobs[j].deps;
      waiting_[j] = static_cast<std::uint32_t>(
          std::count_if(deps.begin(), deps.end(), [&](JobId d) { return local(d); }));
      if (!all_local_ && s.has_previous_part[j]) ++waiting_[j];
      if (waiting_[j] == 0) release(j);
    }
    for (auto t : options.capture)
      captured_[t.value()] = true;
  }

  Expected<StepResult> run(Values const& sources) {
    for (auto const& b : s_.program.initial) {
      if (!local_[static_cast<std::size_t>(b.device)]) continue;
      ir::Tensor const& t = s_.graph.tensor(b.tensor);
      auto it = sources.find(t.name);
      if (it == sources.end())
        return Error(ErrorCode::not_found, "no value given for source tensor '" + t.name + "'");
      if (static_cast<std::int64_t>(it->second.size()) != ir::num_elements(t.type.shape))
        return Error(ErrorCode::shape_mismatch,
                     "the value given for '" + t.name + "' has the wrong number of elements");
      std::vector<float> data(static_cast<std::size_t>(tdl::box_volume(b.region)));
      copy_box(it->second.data(), tdl::whole_box(t.type.shape), data.data(), b.region, b.region);
      CLEAVE_CHECK_OK((b.on_host ? host_ : store(b.device))
                          .add(b.tensor, b.region, std::move(data), false, no_task));
    }
    int threads = options_.threads_per_device;
    if (threads <= 0) {
      int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
      threads = std::max(1, cores / std::max(1, s_.program.num_devices));
    }
    spin_ = static_cast<unsigned>(s_.program.num_devices) * static_cast<unsigned>(threads) <=
            std::thread::hardware_concurrency();
    std::vector<int> devices;
    for (int d = 0; d < s_.program.num_devices; ++d)
      if (local_[static_cast<std::size_t>(d)]) devices.push_back(d);
    start_ = Clock::now();
    std::function<void(std::size_t)> const each = [&](std::size_t i) { work(devices[i], threads); };
    // The executor's pool, unless another step of it is running (then threads of its own).
    if (std::unique_lock pool(s_.pool->in_use, std::try_to_lock); pool.owns_lock()) {
      s_.pool->run(devices.size(), each);
    } else {
      std::vector<std::thread> workers;
      for (std::size_t i = 0; i < devices.size(); ++i)
        workers.emplace_back(each, i);
      for (auto& w : workers)
        w.join();
    }
    double step_s = seconds_since_start();
    if (error_) return std::move(*error_);
    StepResult result;
    result.step_s = step_s;
    result.start = start_;
    result.spans = spans_;
    for (std::size_t d = 0; d < stats_.size(); ++d) {
      auto& st = stats_[d];
      st.idle_s = std::max(0.0, step_s - st.compute_s - st.comm_s);
      st.peak = arenas_[d]->peak();
      for (auto const& sample : arenas_[d]->samples())
        st.memory.push_back(
            {std::max(0.0, std::chrono::duration<double>(sample.at - start_).count()),
             sample.bytes});
      st.capacity = arenas_[d]->capacity();
    }
    result.devices = stats_;
    assemble(result);
    return result;
  }

 private:
  BlockStore& store(int device) { return *stores_[static_cast<std::size_t>(device)]; }
  bool local(JobId id) const { return local_[static_cast<std::size_t>(s_.jobs.jobs[id].device)]; }
  double seconds_since_start() const {
    return std::chrono::duration<double>(Clock::now() - start_).count();
  }

  // A worker runs its device's jobs as they become ready: first come, first served, ties by the
  // tasks' canonical order, the policy of the simulator's event loop (FIFO per resource), so that
  // measured and predicted steps take the same order.
  void work(int device, int threads) {
    omp_set_num_threads(threads);  // oneDNN's kernels use OpenMP
    auto d = static_cast<std::size_t>(device);
    for (std::uint32_t k = 0; k < s_.per_device_count[d]; ++k) {
      auto next = take(d);
      if (!next) return;
      JobId id = *next;
      Job const& job = s_.jobs.jobs[id];
      double start = seconds_since_start();
      Status st = Status::ok();
      try {
        st = execute(job);
      } catch (std::exception const& e) {
        st = Error(ErrorCode::execution_failed, std::string("worker exception: ") + e.what());
      }
      double end = seconds_since_start();
      for (TaskId t : job.completes)
        spans_[t] = {start, end};
      TaskKind kind = s_.program.tasks[job.task].kind;
      bool compute =
          job.kind == JobKind::task && (kind == TaskKind::compute || kind == TaskKind::reduce);
      (compute ? stats_[d].compute_s : stats_[d].comm_s) += end - start;
      if (!st) {
        fail(std::move(st).error().with_context(describe(id)));
        return;
      }
      finish(id);
    }
  }

  std::string device_name(int d) const { return s_.devices[static_cast<std::size_t>(d)].name; }

  // "in task 12 (receive of tensor x[0,4) from device cpu1) on device cpu0".
  std::string describe(JobId id) const {
    Job const& job = s_.jobs.jobs[id];
    Task const& t = s_.program.tasks[job.task];
    std::string block = block_name(s_.graph, t.tensor, t.region);
    std::string on = " on device " + device_name(job.device);
    if (job.kind == JobKind::send)
      return "in task " + std::to_string(job.task) + " (send of " + block + " to device " +
             device_name(t.device) + ")" + on;
    if (job.kind == JobKind::receive)
      return "in task " + std::to_string(job.task) + " (receive of " + block + " from device " +
             device_name(t.source_device) + ")" + on;
    if (job.kind == JobKind::collective) {
      auto const& col = s_.program.collectives[job.collective];
      return "in collective " + std::to_string(job.collective) + " (" +
             std::string(cost::collective_kind_name(col.kind)) + " of tensor " +
             s_.graph.tensor(col.tensor).name + ")" + on;
    }
    std::string what;
    switch (t.kind) {
    case TaskKind::compute:
      what = "compute task of op '" + s_.graph.op(t.op).name + "' piece " +
             tdl::box_to_string(t.iteration);
      break;
    case TaskKind::transfer:
      what = "transfer of " + block + " from device " + device_name(t.source_device);
      break;
    case TaskKind::reduce:
      what = "reduce task of " + block;
      break;
    case TaskKind::swap_out:
    case TaskKind::swap_in:
      what = "host copy of " + block;
      break;
    }
    return "in task " + std::to_string(job.task) + " (" + what + ")" + on;
  }

  // The device's next ready task, once there is one; nothing once the run failed. A worker with a
  // core of its own first polls for a while before it sleeps: waking a sleeping thread took 0.2 to
  // 0.5 ms on this machine's virtual cores (a halted vCPU is woken by the hypervisor), once per
  // dependency on another device that a worker waits for.
  std::optional<JobId> take(std::size_t device) {
    if (!all_local_) return take_polling(device);
    if (spin_) {
      auto until = Clock::now() + spin_limit;
      while (queued_[device].load(std::memory_order_acquire) == 0 &&
             !stopped_.load(std::memory_order_relaxed) && Clock::now() < until) {
      }
    }
    std::unique_lock lock(mutex_);
    wake_[device].wait(lock, [&] { return failed_ || !ready_[device].empty(); });
    if (failed_) return std::nullopt;
    JobId id = ready_[device].top().id;
    ready_[device].pop();
    queued_[device].fetch_sub(1, std::memory_order_relaxed);
    return id;
  }

  // take() where other processes run some devices: while the device has gated jobs (a receive
  // whose message may not have arrived, a part in a collective whose members may not all have
  // joined), the worker polls the backend for them instead of sleeping; a busy poll at first,
  // then every 50 us, so that ranks sharing cores leave them to the ranks computing.
  std::optional<JobId> take_polling(std::size_t device) {
    auto idle_since = Clock::now();
    while (true) {
      std::vector<JobId> gated;
      {
        std::unique_lock lock(mutex_);
        if (gated_[device].empty())
          wake_[device].wait(
              lock, [&] { return failed_ || !ready_[device].empty() || !gated_[device].empty(); });
        if (failed_) return std::nullopt;
        if (!ready_[device].empty()) {
          JobId id = ready_[device].top().id;
          ready_[device].pop();
          queued_[device].fetch_sub(1, std::memory_order_relaxed);
          return id;
        }
        gated = gated_[device];
      }
      std::vector<JobId> open;
      for (JobId j : gated) {
        auto passed = passes_gate(j);
        if (!passed) {
          fail(std::move(passed).error().with_context(describe(j)));
          return std::nullopt;
        }
        if (*passed) open.push_back(j);
      }
      if (!open.empty()) {
        std::lock_guard lock(mutex_);
        auto& g = gated_[device];
        for (JobId j : open) {
          g.erase(std::find(g.begin(), g.end(), j));
          make_ready(j);
        }
        idle_since = Clock::now();
      } else if (Clock::now() - idle_since < spin_limit) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    }
  }

  bool gated(JobId id) const {
    Job const& job = s_.jobs.jobs[id];
    if (all_local_) return false;
    if (job.kind == JobKind::collective) return true;
    return job.kind == JobKind::receive &&
           !local_[static_cast<std::size_t>(s_.program.tasks[job.task].source_device)];
  }

  Expected<bool> passes_gate(JobId id) {
    Job const& job = s_.jobs.jobs[id];
    if (job.kind == JobKind::receive)
      return backend_.arrived(message(job.task, s_.program.tasks[job.task]));
    auto const& col = s_.program.collectives[job.collective];
    return backend_.joined({job.collective, col.group, job.device, tdl::Reducer::sum, {}});
  }

  // Called with the lock held (or before the workers start): the job's dependencies are done.
  void release(JobId id) {
    if (gated(id))
      gated_[static_cast<std::size_t>(s_.jobs.jobs[id].device)].push_back(id);
    else
      make_ready(id);
  }

  // Called with the lock held: the job's dependencies are done.
  void make_ready(JobId id) {
    auto d = static_cast<std::size_t>(s_.jobs.jobs[id].device);
    ready_[d].push({finished_, s_.rank[id], id});
    queued_[d].fetch_add(1, std::memory_order_release);
  }

  void fail(Error error) {
    {
      std::lock_guard lock(mutex_);
      if (!failed_) error_ = std::move(error);
      failed_ = true;
      stopped_ = true;
    }
    backend_.abort();
    for (auto& w : wake_)
      w.notify_all();
  }

  // Marks the job done, readies its dependents and frees the blocks whose last reader was a task
  // it completes.
  void finish(JobId id) {
    std::vector<TaskId> expired;
    std::vector<bool> woken(wake_.size(), false);
    {
      std::lock_guard lock(mutex_);
      ++finished_;
      auto waited_for = [&](JobId u) {
        if (!local(u) || --waiting_[u] != 0) return;
        release(u);
        woken[static_cast<std::size_t>(s_.jobs.jobs[u].device)] = true;
      };
      for (JobId u : s_.dependents[id])
        waited_for(u);
      if (!all_local_ && s_.next_part[id] != no_job) waited_for(s_.next_part[id]);
      for (TaskId done : s_.jobs.jobs[id].completes)
        for (TaskId dep : s_.program.tasks[done].deps)
          if (--remaining_[dep] == 0 && !s_.lifetimes[dep].swapped && s_.lifetimes[dep].allocates)
            expired.push_back(dep);
    }
    for (std::size_t d = 0; d < wake_.size(); ++d)
      if (woken[d]) wake_[d].notify_one();
    for (TaskId dep : expired) {
      Task const& t = s_.program.tasks[dep];
      if (captured_[t.tensor.value()] && !t.partial) capture(t);
      store(t.device).free_written(dep);
    }
  }

  // Keeps a copy of a block about to be freed, outside any arena.
  void capture(Task const& t) {
    for (auto& b : store(t.device).blocks_of(t.tensor)) {
      if (b.region != t.region) continue;
      std::lock_guard lock(mutex_);
      kept_.push_back(std::move(b));
      return;
    }
  }

  Status execute(Job const& job) {
    TaskId id = job.task;
    Task const& task = s_.program.tasks[id];
    switch (job.kind) {
    case JobKind::send:
      return send(id, task);
    case JobKind::receive: {
      std::vector<float> data(static_cast<std::size_t>(tdl::box_volume(task.region)));
      CLEAVE_CHECK_OK(backend_.receive(message(id, task), data));
      return store(task.device).add(task.tensor, task.region, std::move(data), task.partial, id);
    }
    case JobKind::collective:
      return run_collective_part(
          {s_.graph, s_.program, job.collective, job.device, store(job.device), backend_});
    case JobKind::task:
      break;
    }
    switch (task.kind) {
    case TaskKind::compute:
      return compute(id, task);
    case TaskKind::transfer:
      CLEAVE_ASSERT(false, "a transfer runs as a send and a receive");
      break;
    case TaskKind::reduce: {
      std::optional<std::vector<float>> out;  // the first part, then combined with the others
      for (TaskId dep : task.deps) {
        CLEAVE_TRY(auto part, store(task.device).read_written(dep, task.region));
        if (out)
          combine_into(out->data(), part.data(), out->size(), task.reducer);
        else
          out = std::move(part);
      }
      if (!out)
        out.emplace(static_cast<std::size_t>(tdl::box_volume(task.region)),
                    reducer_identity_f(task.reducer));
      return store(task.device).add(task.tensor, task.region, std::move(*out), false, id);
    }
    case TaskKind::swap_out: {
      CLEAVE_TRY(auto data, store(task.device).gather(task.tensor, task.region));
      // A block swapped out again replaces the copy its earlier swap-out left on the host.
      host_.free_inside(task.tensor, task.region);
      CLEAVE_CHECK_OK(host_.add(task.tensor, task.region, std::move(data), false, id));
      store(task.device).free_inside(task.tensor, task.region);
      return Status::ok();
    }
    case TaskKind::swap_in: {
      auto data = host_.gather(task.tensor, task.region);
      if (!data)
        return Error(ErrorCode::execution_failed,
                     "the host holds no copy of " + block_name(s_.graph, task.tensor, task.region) +
                         " to swap in");
      return store(task.device).add(task.tensor, task.region, std::move(*data), false, id);
    }
    }
    return Status::ok();
  }

  static Message message(TaskId id, Task const& task) {
    return {id, task.source_device, task.device};
  }

  // Hands the region to the backend: in place where the source holds it contiguously, else a
  // copy (a partial result: the part of the block its computing task wrote).
  Status send(TaskId id, Task const& task) {
    BlockStore& from = store(task.source_device);
    auto volume = static_cast<std::size_t>(tdl::box_volume(task.region));
    if (!task.partial)
      if (auto v = from.view(task.tensor, task.region))
        return backend_.send(message(id, task), {{v->data, volume}, v->block});
    auto data = std::make_shared<std::vector<float>>();
    if (task.partial) {
      CLEAVE_TRY(*data, from.read_written(task.deps.at(0), task.region));
    } else {
      CLEAVE_TRY(*data, from.gather(task.tensor, task.region));
    }
    return backend_.send(message(id, task), {{data->data(), data->size()}, data});
  }

  Status compute(TaskId id, Task const& task) {
    ir::Op const& op = s_.graph.op(task.op);
    if (!options_.fail_op.empty() && op.name == options_.fail_op)
      return Error(ErrorCode::execution_failed, "injected kernel failure in op '" + op.name + "'");
    tdl::BoundOp const& bound = *s_.bound[task.op.value()];
    tdl::PieceInfo const& info = *s_.pieces[id];
    // Inputs are read in place where a block holds them contiguously, else gathered.
    std::vector<BlockStore::View> views(op.inputs.size());
    std::vector<std::vector<float>> gathered(op.inputs.size());
    std::vector<float> out =
        s_.buffers->take(static_cast<std::size_t>(tdl::box_volume(info.output)));
    KernelCall call{&s_.graph, &op, &bound, &info, {}, {out.data(), info.output}};
    for (std::size_t i = 0; i < op.inputs.size(); ++i) {
      float const* data = nullptr;
      if (!info.inputs[i].empty()) {
        if (auto v = store(task.device).view(op.inputs[i], info.inputs[i].box)) {
          views[i] = std::move(*v);
          data = views[i].data;
        } else {
          CLEAVE_TRY(gathered[i], store(task.device).gather(op.inputs[i], info.inputs[i].box));
          data = gathered[i].data();
        }
      }
      call.inputs.push_back({data, info.inputs[i].box});
    }
    auto& stats = stats_[static_cast<std::size_t>(task.device)];
    Kernel const* kernel = find_kernel(id, call);
    if (kernel) {
      Status st = kernel->run(call);
      if (!st)
        return std::move(st).error().with_context("in kernel " + std::string(kernel->name()));
      ++stats.kernel_tasks;
    } else {
      CLEAVE_TRY(out, interpret_piece(s_.graph, op, bound, info, task.iteration, call.inputs));
      ++stats.interpreted_tasks;
    }
    return store(task.device).add(task.tensor, info.output, std::move(out), task.partial, id);
  }

  // The kernel of the registry that runs the call of task `id`, or nullptr (the interpreter).
  Kernel const* find_kernel(TaskId id, KernelCall const& call) {
    KernelRegistry const* registry = options_.kernels;
    if (registry == nullptr) return nullptr;
    std::uint64_t owner = 0;
    if (!s_.kernels_for.compare_exchange_strong(owner, registry->id()) && owner != registry->id())
      return registry->find(call);
    auto& slot = s_.kernel_of[id];
    Kernel const* kernel = slot.load(std::memory_order_acquire);
    if (kernel == nullptr) {
      kernel = registry->find(call);
      slot.store(kernel ? kernel : &no_kernel, std::memory_order_release);
    }
    return kernel == &no_kernel ? nullptr : kernel;
  }

  // Whole values of produced and captured tensors, from every device, the host and the captures;
  // where some devices run elsewhere, also those held in part.
  void assemble(StepResult& result) {
    Values& values = result.values;
    for (auto const& t : s_.graph.tensors()) {
      bool produced = s_.graph.producer(t.id).valid();
      if (!produced && !captured_[t.id.value()]) continue;
      tdl::Box all = tdl::whole_box(t.type.shape);
      auto volume = static_cast<std::size_t>(tdl::box_volume(all));
      std::vector<float> out(volume, 0.0f);
      std::vector<float> mask(volume, 0.0f);
      auto add = [&](Block const& b) {
        copy_box(b.data.data(), b.region, out.data(), all, b.region);
        std::vector<float> ones(b.data.size(), 1.0f);
        copy_box(ones.data(), b.region, mask.data(), all, b.region);
      };
      for (auto const& st : stores_)
        for (auto const& b : st->blocks_of(t.id))
          add(b);
      for (auto const& b : host_.blocks_of(t.id))
        add(b);
      for (auto const& b : kept_)
        if (b.tensor == t.id) add(b);
      if (std::all_of(mask.begin(), mask.end(), [](float m) { return m != 0; })) {
        values.emplace(t.name, std::move(out));
      } else if (!all_local_ &&
                 std::any_of(mask.begin(), mask.end(), [](float m) { return m != 0; })) {
        values.emplace(t.name, std::move(out));
        result.coverage.emplace(t.name, std::move(mask));
      }
    }
    for (auto const& st : stores_)
      st->clear();
    host_.clear();
  }

  Executor::State const& s_;
  ExecOptions const& options_;
  CommBackend& backend_;
  // A ready job: the number of jobs finished when it became ready, then its canonical rank.
  struct Ready {
    std::uint64_t seq;
    std::uint32_t rank;
    JobId id;
    bool operator>(Ready const& o) const { return std::tie(seq, rank) > std::tie(o.seq, o.rank); }
  };
  using ReadyQueue = std::priority_queue<Ready, std::vector<Ready>, std::greater<>>;

  std::mutex mutex_;
  std::vector<std::condition_variable> wake_;  // per device
  std::vector<ReadyQueue> ready_;              // per device
  std::vector<std::uint32_t> waiting_;         // per job: dependencies not yet done
  std::uint64_t finished_ = 0;
  // Polling before sleeping (take()): only where every worker has a core of its own.
  static constexpr auto spin_limit = std::chrono::microseconds(500);
  bool spin_ = false;
  std::unique_ptr<std::atomic<std::uint32_t>[]> queued_;  // per device: ready_'s size
  std::atomic<bool> stopped_{false};
  std::vector<int> remaining_;
  bool failed_ = false;
  std::optional<Error> error_;
  std::vector<TaskSpan> spans_;
  std::vector<DeviceStats> stats_;
  std::vector<bool> captured_;
  std::vector<Block> kept_;
  bool all_local_;
  std::vector<bool> local_;                // per device: run by this process
  std::vector<std::vector<JobId>> gated_;  // per device: waiting for the backend (take_polling)
  std::vector<std::unique_ptr<Arena>> arenas_;
  std::vector<std::unique_ptr<BlockStore>> stores_;
  Arena host_arena_;
  BlockStore host_;
  Clock::time_point start_;
};

}  // namespace

Executor::Executor(std::unique_ptr<State> state) : state_(std::move(state)) {}
Executor::Executor(Executor&&) noexcept = default;
Executor& Executor::operator=(Executor&&) noexcept = default;
Executor::~Executor() = default;

Expected<Executor> Executor::create(ir::Graph const& graph, lower::Program program,
                                    ops::OpRegistry const& registry,
                                    std::vector<DeviceInfo> devices) {
  if (static_cast<std::size_t>(program.num_devices) != devices.size())
    return Error(ErrorCode::invalid_argument,
                 "the program uses " + std::to_string(program.num_devices) + " devices but " +
                     std::to_string(devices.size()) + " are given");
  keep_freed_memory();
  auto state = std::make_unique<State>(graph, std::move(program), std::move(devices));
  auto const& tasks = state->program.tasks;
  state->lifetimes = lower::output_lifetimes(state->program);
  state->kernel_of = std::make_unique<std::atomic<Kernel const*>[]>(tasks.size());
  state->bound.resize(graph.num_ops());
  state->pieces.resize(tasks.size());
  std::vector<TaskId> by_content(tasks.size());
  for (TaskId id = 0; id < tasks.size(); ++id)
    by_content[id] = id;
  std::sort(by_content.begin(), by_content.end(), [&](TaskId a, TaskId b) {
    return lower::canonical_less(tasks[a], tasks[b]) ||
           (!lower::canonical_less(tasks[b], tasks[a]) && a < b);
  });
  std::vector<std::uint32_t> task_rank(tasks.size());
  for (std::uint32_t k = 0; k < by_content.size(); ++k)
    task_rank[by_content[k]] = k;
  state->jobs = expand(state->program);
  auto const& jobs = state->jobs.jobs;
  state->rank.resize(jobs.size());
  state->dependents.resize(jobs.size());
  state->per_device_count.assign(state->devices.size(), 0);
  for (JobId j = 0; j < jobs.size(); ++j) {
    CLEAVE_ASSERT(jobs[j].device >= 0 && jobs[j].device < state->program.num_devices,
                  "a task on a device the program does not have");
    state->rank[j] = task_rank[jobs[j].task];
    ++state->per_device_count[static_cast<std::size_t>(jobs[j].device)];
    for (JobId dep : jobs[j].deps)
      state->dependents[dep].push_back(j);
  }
  order_parts(*state);
  for (TaskId id = 0; id < tasks.size(); ++id) {
    Task const& t = tasks[id];
    if (t.kind != TaskKind::compute) continue;
    auto& bound = state->bound[t.op.value()];
    if (!bound) {
      CLEAVE_TRY(bound, registry.bind(graph, t.op));
    }
    CLEAVE_TRY(state->pieces[id], tdl::analyze_piece(*bound, t.iteration));
  }
  return Executor(std::move(state));
}

Expected<StepResult> Executor::run_step(Values const& sources, ExecOptions const& options) const {
  if (!options.backend)
    return Error(ErrorCode::invalid_argument,
                 "no communication backend given to run the step (ExecOptions::backend)");
  for (int d : options.devices)
    if (d < 0 || d >= state_->program.num_devices)
      return Error(ErrorCode::invalid_argument, "ExecOptions::devices names device " +
                                                    std::to_string(d) + " of a program with " +
                                                    std::to_string(state_->program.num_devices) +
                                                    " devices");
  return StepRun(*state_, options).run(sources);
}

lower::Program const& Executor::program() const {
  return state_->program;
}
ir::Graph const& Executor::graph() const {
  return state_->graph;
}

}  // namespace cleave::runtime
