// The executor's communication goes through the backend it is given (issue 14): a transfer is a
// send made by its source device's worker and a receive made by its destination's, and a
// collective is one backend call per member device, with the results the unpartitioned graph
// computes.
#include <gtest/gtest.h>
#include <map>
#include <set>
#include <thread>

#include "models/layers.h"
#include "recording_backend.h"
#include "runtime/jobs.h"
#include "runtime/synthetic_data.h"
#include "runtime_test_util.h"

namespace cleave::runtime {
namespace {

using namespace testing;
using Call = RecordingBackend::Call;

constexpr char const* mlp = small_mlp;

// A convolution with batch norm, whose statistics a data-parallel plan all-reduces.
ir::Graph small_cnn(ops::OpRegistry const& registry) {
  ops::OpBuilder b(registry);
  auto x = b.input("input", {4, 2, 6, 6});
  models::Conv c{.out_channels = 4, .kernel_h = 3, .kernel_w = 3, .pad_h = 1, .pad_w = 1};
  x = b.op("relu", {models::batch_norm(b, models::conv2d(b, x, c, "conv"), "bn")}, {}, "relu");
  models::classification_loss(b, models::linear(b, models::flatten(b, x, "flatten"), 3, "fc"));
  auto forward = b.finish();
  CLEAVE_ASSERT(forward.has_value(), "the test's cnn does not build");
  return *autodiff::build_training_graph(*forward, registry);
}

struct Recorded {
  lower::Program program;
  std::vector<RecordingBackend::Record> records;
};

// One checked step of `algo`'s plan for `model` on `devices` CPU devices, every backend call
// recorded.
Recorded run_recorded(char const* algo, int devices, bool batch_norm = false) {
  auto registry = ops::OpRegistry::with_builtins();
  auto g = batch_norm ? small_cnn(*registry) : training_graph(mlp, *registry);
  std::int64_t batch = batch_norm ? 4 : 8;
  std::string spec = "cpu:devices=" + std::to_string(devices);
  auto cluster = *cluster::load_cluster(spec);
  auto p = make_plan(g, *registry, cluster, spec, algo, batch);
  EXPECT_TRUE(p.has_value()) << p.error().to_string();
  RecordingBackend backend;
  auto report = run_and_check(g, *p, *registry, cluster, /*steps=*/1, &backend);
  EXPECT_TRUE(report.has_value()) << report.error().to_string();
  EXPECT_TRUE(report->passed) << algo << " " << report->worst << " " << report->max_relative_error;
  return {*lower::lower(g, *p, *registry), backend.records()};
}

std::size_t count(std::vector<RecordingBackend::Record> const& records, Call call,
                  std::uint64_t key, int device) {
  return static_cast<std::size_t>(std::count_if(records.begin(), records.end(), [&](auto const& r) {
    return r.call == call && r.key == key && r.device == device;
  }));
}

TEST(Comm, ATransferIsASendOnItsSourcesWorkerAndAReceiveOnItsDestinations) {
  auto [program, records] = run_recorded("tofu", 2);
  // Each device's calls come from one thread, its worker, and the two workers differ.
  std::map<int, std::set<std::thread::id>> threads;
  for (auto const& r : records)
    threads[r.device].insert(r.thread);
  ASSERT_EQ(threads.size(), 2u);
  EXPECT_EQ(threads[0].size(), 1u);
  EXPECT_EQ(threads[1].size(), 1u);
  EXPECT_NE(*threads[0].begin(), *threads[1].begin());
  std::size_t transfers = 0;
  for (lower::TaskId id = 0; id < program.tasks.size(); ++id) {
    auto const& t = program.tasks[id];
    if (t.kind != lower::TaskKind::transfer || t.collective != lower::no_collective) continue;
    ++transfers;
    EXPECT_EQ(count(records, Call::send, id, t.source_device), 1u) << "transfer " << id;
    EXPECT_EQ(count(records, Call::receive, id, t.device), 1u) << "transfer " << id;
  }
  EXPECT_GT(transfers, 0u) << "the plan should move regions point to point";
  auto of = [&](Call call) {
    return static_cast<std::size_t>(std::count_if(records.begin(), records.end(),
                                                  [&](auto const& r) { return r.call == call; }));
  };
  EXPECT_EQ(of(Call::send), transfers);
  EXPECT_EQ(of(Call::receive), transfers);
}

// The mlp's plans all-gather and reduce-scatter; a ResNet's data-parallel plan all-reduces its
// batch norms' statistics.
TEST(Comm, ACollectiveIsOneBackendCallPerMemberDevice) {
  struct Case {
    char const* algo;
    int devices;
    bool batch_norm;
  };
  std::set<lower::CollectiveKind> kinds;
  for (auto [algo, devices, batch_norm] :
       {Case{"data-parallel", 2, false}, Case{"data-parallel", 4, false}, Case{"tofu", 2, false},
        Case{"tofu", 4, false}, Case{"data-parallel", 4, true}}) {
    {
      auto [program, records] = run_recorded(algo, devices, batch_norm);
      std::size_t calls = 0;
      for (lower::CollectiveId c = 0; c < program.collectives.size(); ++c) {
        auto const& col = program.collectives[c];
        kinds.insert(col.kind);
        Call call = col.kind == lower::CollectiveKind::all_reduce   ? Call::all_reduce
                    : col.kind == lower::CollectiveKind::all_gather ? Call::all_gather
                                                                    : Call::reduce_scatter;
        for (int d : col.group)
          EXPECT_EQ(count(records, call, c, d), 1u) << algo << " collective " << c;
        calls += col.group.size();
      }
      std::size_t collective_calls = 0;
      for (auto const& r : records)
        if (r.call != Call::send && r.call != Call::receive) ++collective_calls;
      EXPECT_EQ(collective_calls, calls) << algo << " on " << devices;
      // No member moves its data alone.
      for (auto const& r : records) {
        if (r.call == Call::send || r.call == Call::receive) {
          EXPECT_EQ(program.tasks[r.key].collective, lower::no_collective);
        }
      }
    }
  }
  EXPECT_EQ(kinds.size(), 3u);
}

// The jobs behind it: a transfer's receive waits only for its send; a collective's parts, one
// per member device, wait for the same jobs (every outside dependency of its members) and
// complete exactly the members on their device; every task is completed by one job.
TEST(Comm, JobsSplitTransfersAndGroupCollectives) {
  auto registry = ops::OpRegistry::with_builtins();
  auto g = training_graph(mlp, *registry);
  auto p = make_plan(g, *registry, "cpu:devices=4", "tofu", 8);
  ASSERT_TRUE(p.has_value()) << p.error().to_string();
  auto program = *lower::lower(g, *p, *registry);
  Jobs jobs = expand(program);
  std::vector<int> completed(program.tasks.size(), 0);
  std::map<lower::CollectiveId, std::vector<JobId>> parts;
  for (JobId j = 0; j < jobs.jobs.size(); ++j) {
    Job const& job = jobs.jobs[j];
    for (JobId d : job.deps)
      EXPECT_LT(d, j);
    for (lower::TaskId t : job.completes) {
      ++completed[t];
      EXPECT_EQ(jobs.job_of[t], j);
      EXPECT_EQ(program.tasks[t].collective, job.collective);
    }
    lower::Task const& task = program.tasks[job.task];
    if (job.kind == JobKind::send) {
      EXPECT_EQ(job.device, task.source_device);
      EXPECT_TRUE(job.completes.empty());
    }
    if (job.kind == JobKind::receive) {
      EXPECT_EQ(job.device, task.device);
      ASSERT_EQ(job.deps.size(), 1u);
      EXPECT_EQ(jobs.jobs[job.deps[0]].kind, JobKind::send);
      EXPECT_EQ(jobs.jobs[job.deps[0]].task, job.task);
    }
    if (job.kind == JobKind::collective) parts[job.collective].push_back(j);
  }
  for (auto c : completed)
    EXPECT_EQ(c, 1);
  ASSERT_EQ(parts.size(), program.collectives.size());
  for (auto const& [c, ids] : parts) {
    std::vector<int> devices;
    for (JobId j : ids) {
      devices.push_back(jobs.jobs[j].device);
      EXPECT_EQ(jobs.jobs[j].deps, jobs.jobs[ids[0]].deps);
    }
    EXPECT_EQ(devices, program.collectives[c].group);
  }
}

TEST(Comm, AStepWithoutABackendIsAnError) {
  auto registry = ops::OpRegistry::with_builtins();
  auto g = training_graph(mlp, *registry);
  auto exec = data_parallel_executor(g, *registry);
  ASSERT_TRUE(exec.has_value()) << exec.error().to_string();
  auto step = exec->run_step(synthetic_sources(g, 0), {});
  ASSERT_FALSE(step.has_value());
  EXPECT_EQ(step.error().code(), ErrorCode::invalid_argument);
  EXPECT_NE(step.error().to_string().find("no communication backend"), std::string::npos);
}

}  // namespace
}  // namespace cleave::runtime

namespace cleave::runtime {
namespace {

// ExecOptions::devices, as two MPI ranks would use it but in one process: two executors of one
// program, each running two of its four devices, share an in-process backend (their receives
// wait for messages to arrive, their collectives for every member to join). Together they
// compute what one executor running every device does: each tensor's parts (StepResult::coverage)
// put together.
TEST(Comm, DevicesSplitBetweenTwoExecutorsComputeWhatOneComputes) {
  auto registry = ops::OpRegistry::with_builtins();
  auto g = testing::training_graph(small_mlp, *registry);
  auto cluster = *cluster::load_cluster("cpu:devices=4");
  auto sources = synthetic_sources(g, /*seed=*/3);
  for (char const* algo : {"tofu", "data-parallel", "optcnn"}) {
    auto p = testing::make_plan(g, *registry, cluster, "cpu:devices=4", algo, 8);
    ASSERT_TRUE(p.has_value()) << p.error().to_string();
    auto whole = testing::executor_for(g, *p, *registry, cluster);
    ASSERT_TRUE(whole.has_value()) << whole.error().to_string();
    auto expected = testing::run_one_step(*whole, sources);
    ASSERT_TRUE(expected.has_value()) << expected.error().to_string();

    InProcessBackend shared;
    std::vector<Expected<StepResult>> parts(2, Error(ErrorCode::execution_failed, "not run"));
    std::vector<Expected<Executor>> executors;
    for (int k = 0; k < 2; ++k)
      executors.push_back(testing::executor_for(g, *p, *registry, cluster));
    std::vector<std::thread> processes;
    for (int k = 0; k < 2; ++k)
      processes.emplace_back([&, k] {
        ExecOptions options;
        options.backend = &shared;
        options.devices = {2 * k, 2 * k + 1};
        parts[static_cast<std::size_t>(k)] =
            executors[static_cast<std::size_t>(k)]->run_step(sources, options);
      });
    for (auto& t : processes)
      t.join();
    for (auto const& part : parts)
      ASSERT_TRUE(part.has_value()) << algo << ": " << part.error().to_string();
    for (auto const& [name, value] : expected->values) {
      std::vector<float> merged(value.size(), 0.0f);
      std::vector<bool> held(value.size(), false);
      for (auto const& part : parts) {
        auto v = part->values.find(name);
        if (v == part->values.end()) continue;
        auto c = part->coverage.find(name);
        for (std::size_t i = 0; i < value.size(); ++i)
          if (c == part->coverage.end() || c->second[i] != 0) {
            merged[i] = v->second[i];
            held[i] = true;
          }
      }
      for (std::size_t i = 0; i < value.size(); ++i) {
        ASSERT_TRUE(held[i]) << algo << ": " << name << "[" << i << "] is held by neither";
        EXPECT_NEAR(merged[i], value[i], 1e-5 * std::max(1.0f, std::abs(value[i])))
            << algo << ": " << name << "[" << i << "]";
      }
    }
  }
}

// A device outside the program is the caller's error.
TEST(Comm, DevicesOutsideTheProgramAreAnError) {
  auto registry = ops::OpRegistry::with_builtins();
  auto g = testing::training_graph(small_mlp, *registry);
  auto exec = testing::data_parallel_executor(g, *registry);
  ASSERT_TRUE(exec.has_value());
  ExecOptions options;
  options.devices = {2};
  auto step = testing::run_one_step(*exec, synthetic_sources(g, 0), options);
  ASSERT_FALSE(step.has_value());
  EXPECT_NE(step.error().message().find("names device 2 of a program with 2 devices"),
            std::string::npos)
      << step.error().to_string();
}

}  // namespace
}  // namespace cleave::runtime
