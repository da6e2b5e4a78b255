// The executor on small models: partitioned runs compute what the unpartitioned graph computes,
// blocks are freed after their last reader, and the workers' figures add up.
#include <algorithm>
#include <cmath>
#include <gtest/gtest.h>
#include <optional>

#include "lower/reference_run.h"
#include "runtime/synthetic_data.h"
#include "runtime_test_util.h"
#include "sim/predict.h"

namespace cleave::runtime {
namespace {

using namespace testing;

constexpr char const* mlp = "mlp:layers=2,hidden=6,input=5,classes=3,batch=4";

TEST(Executor, DataParallelMlpMatchesTheReference) {
  auto registry = ops::OpRegistry::with_builtins();
  auto g = training_graph(mlp, *registry);
  auto cluster = *cluster::load_cluster("cpu:devices=2");
  auto p = make_plan(g, *registry, cluster, "cpu:devices=2", "data-parallel", 4);
  ASSERT_TRUE(p.has_value()) << p.error().to_string();
  auto report = run_and_check(g, *p, *registry, cluster, /*steps=*/2);
  ASSERT_TRUE(report.has_value()) << report.error().to_string();
  EXPECT_TRUE(report->passed) << report->worst << " " << report->max_relative_error;
  EXPECT_GT(report->tensors.size(), 3u);
}

// The mlp's tofu plan on two CPU devices, ready to run (the graph outlives the executor).
class TofuMlpOnTwoDevices : public ::testing::Test {
 protected:
  void SetUp() override {
    auto p = make_plan(g, *registry, cluster, "cpu:devices=2", "tofu", 4);
    ASSERT_TRUE(p.has_value()) << p.error().to_string();
    auto made = executor_for(g, *p, *registry, cluster);
    ASSERT_TRUE(made.has_value()) << made.error().to_string();
    exec.emplace(std::move(*made));
  }

  std::unique_ptr<ops::OpRegistry> registry = ops::OpRegistry::with_builtins();
  ir::Graph g = training_graph(mlp, *registry);
  cluster::Cluster cluster = *cluster::load_cluster("cpu:devices=2");
  std::optional<Executor> exec;
};

// Several steps: the reference runs the last one from the state the partitioned run started it
// from, and a wrong value in the last step's results, or a different starting state, fails.
TEST_F(TofuMlpOnTwoDevices, TheCheckComparesTheLastStepFromTheSameState) {
  TrainingConfig config;
  config.steps = 3;
  InProcessBackend backend;
  config.exec.backend = &backend;
  config.exec.capture = checked_tensors(g, "loss");
  auto run = run_training(*exec, config);
  ASSERT_TRUE(run.has_value()) << run.error().to_string();
  auto check = [&](TrainingRun const& r) {
    auto report = check_against_reference(g, *registry, r, config, "loss", default_tolerance);
    EXPECT_TRUE(report.has_value()) << report.error().to_string();
    return *report;
  };
  EXPECT_TRUE(check(*run).passed);
  std::string gradient;
  for (auto const& t : g.tensors())
    if (t.role == ir::TensorRole::gradient && run->last.count(t.name)) gradient = t.name;
  ASSERT_FALSE(gradient.empty());
  TrainingRun wrong = *run;
  wrong.last[gradient][0] += 0.01f * (1.0f + std::abs(wrong.last[gradient][0]));
  auto report = check(wrong);
  EXPECT_FALSE(report.passed);
  EXPECT_EQ(report.worst, gradient);
  TrainingRun elsewhere = *run;
  for (auto& [name, values] : elsewhere.last_sources)
    if (g.tensor(*g.find_tensor(name)).role == ir::TensorRole::weight)
      for (auto& v : values)
        v *= 1.5f;
  EXPECT_FALSE(check(elsewhere).passed);
}

TEST_F(TofuMlpOnTwoDevices, StepFiguresAddUp) {
  auto step = run_one_step(*exec, synthetic_sources(g, 1));
  ASSERT_TRUE(step.has_value()) << step.error().to_string();
  EXPECT_GT(step->step_s, 0);
  ASSERT_EQ(step->spans.size(), exec->program().tasks.size());
  for (std::size_t i = 0; i < step->spans.size(); ++i) {
    EXPECT_LE(step->spans[i].start, step->spans[i].end);
    for (auto dep : exec->program().tasks[i].deps) {
      if (exec->program().tasks[i].collective == lower::no_collective ||
          exec->program().tasks[dep].collective != exec->program().tasks[i].collective) {
        EXPECT_LE(step->spans[dep].end, step->spans[i].start);
      }
    }
  }
  ASSERT_EQ(step->devices.size(), 2u);
  for (auto const& d : step->devices) {
    EXPECT_GT(d.peak.value(), 0);
    EXPECT_LE(d.compute_s + d.comm_s, step->step_s * 1.0001);
  }
  EXPECT_TRUE(step->values.count("loss"));
}

TEST(Executor, SyntheticDataIsDeterministicAndInRange) {
  auto registry = ops::OpRegistry::with_builtins();
  auto g = training_graph("gpt:layers=1,hidden=8,heads=2,seq=4,vocab=7,batch=2", *registry);
  auto a = synthetic_sources(g, 3), b = synthetic_sources(g, 3), c = synthetic_sources(g, 4);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  for (auto const& t : g.tensors()) {
    if (g.producer(t.id).valid() || ir::is_floating(t.type.dtype)) continue;
    for (float x : a.at(t.name)) {
      EXPECT_GE(x, 0);
      EXPECT_LT(x, 7);
      EXPECT_EQ(x, std::floor(x));
    }
  }
}

// Swaps: the program of a single-device plan with one activation swapped out after its producer
// and back in before its first reader (the readers then read the swapped-in copy). The runtime
// computes what lower::run_reference computes on the same program, and exactly what the program
// without swaps computes, within the same peak.
lower::Program with_swap(lower::Program const& p, lower::TaskId swapped) {
  using lower::TaskId;
  using lower::TaskKind;
  std::vector<TaskId> readers;
  for (TaskId i = 0; i < p.tasks.size(); ++i)
    for (TaskId d : p.tasks[i].deps)
      if (d == swapped) readers.push_back(i);
  lower::Program out = p;
  out.tasks.clear();
  std::vector<TaskId> renumber(p.tasks.size());
  TaskId swap_out = 0, swap_in = 0;
  for (TaskId i = 0; i < p.tasks.size(); ++i) {
    if (i == readers.front()) {
      lower::Task in = p.tasks[swapped];
      in.kind = TaskKind::swap_in;
      in.deps = {swap_out};
      in.collective = lower::no_collective;
      swap_in = static_cast<TaskId>(out.tasks.size());
      out.tasks.push_back(in);
    }
    lower::Task t = p.tasks[i];
    for (auto& d : t.deps)
      d = d == swapped && i >= readers.front() ? swap_in : renumber[d];
    renumber[i] = static_cast<TaskId>(out.tasks.size());
    out.tasks.push_back(t);
    if (i == swapped) {
      lower::Task o = p.tasks[i];
      o.kind = TaskKind::swap_out;
      o.deps = {renumber[i]};
      swap_out = static_cast<TaskId>(out.tasks.size());
      out.tasks.push_back(o);
    }
  }
  return out;
}

TEST(Executor, SwapsMatchTheReferenceRun) {
  auto registry = ops::OpRegistry::with_builtins();
  auto g = training_graph("mlp:layers=3,hidden=32,input=16,classes=3,batch=16", *registry);
  auto program = *lower::lower(g, plan::single_device_plan(g, *registry), *registry);
  // The first forward activation whose readers include the backward pass.
  lower::TaskId swapped = 0;
  while (g.tensor(program.tasks[swapped].tensor).name != "relu0")
    ++swapped;
  auto swapping = with_swap(program, swapped);
  ASSERT_EQ(swapping.tasks.size(), program.tasks.size() + 2);
  std::vector<DeviceInfo> one{{"cpu0", Bytes(1 << 30)}};
  auto plain = Executor::create(g, program, *registry, one);
  auto exec = Executor::create(g, swapping, *registry, one);
  ASSERT_TRUE(plain.has_value() && exec.has_value());
  Values sources = synthetic_sources(g, 5);
  ExecOptions options;
  options.threads_per_device = 1;
  auto a = run_one_step(*plain, sources, options), b = run_one_step(*exec, sources, options);
  ASSERT_TRUE(a.has_value()) << a.error().to_string();
  ASSERT_TRUE(b.has_value()) << b.error().to_string();
  EXPECT_LE(b->devices[0].peak, a->devices[0].peak);
  std::map<std::string, tdl::TensorData, std::less<>> whole;
  for (auto const& [name, v] : sources) {
    auto const& shape = g.tensor(*g.find_tensor(name)).type.shape;
    whole.emplace(name, tdl::TensorData::whole(shape, std::vector<double>(v.begin(), v.end())));
  }
  auto ref = lower::run_reference(g, swapping, *registry, whole);
  ASSERT_TRUE(ref.has_value()) << ref.error().to_string();
  for (auto const& t : g.tensors()) {
    if (!g.producer(t.id).valid() || !b->values.count(t.name) || !a->values.count(t.name)) continue;
    auto const& got = b->values.at(t.name);
    auto const& plain_value = a->values.at(t.name);
    auto const& want = (*ref)[t.id.value()].values;
    ASSERT_EQ(got.size(), want.size()) << t.name;
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i], want[i], 1e-5 * std::max(1.0, std::abs(want[i]))) << t.name;
      EXPECT_EQ(got[i], plain_value[i]) << t.name;
    }
  }
}

// The arena frees blocks by the simulator's rule (lower::output_lifetimes), and a worker takes its
// tasks in the simulator's order (the next test), so on one device the measured peak is the
// predicted one to the byte, an RNN's interleaved time steps included.
TEST(Executor, OneDevicePeakIsThePredictedPeak) {
  auto registry = ops::OpRegistry::with_builtins();
  auto cluster = *cluster::load_cluster("cpu:devices=1");
  for (char const* spec : {mlp, "gpt:layers=1,hidden=8,heads=2,seq=4,vocab=7,batch=2",
                           "rnn:layers=1,hidden=6,steps=3,batch=4,vocab=7"}) {
    auto g = training_graph(spec, *registry);
    auto program = *lower::lower(g, plan::single_device_plan(g, *registry), *registry);
    auto predicted = sim::predict(g, program, cost::CostModel(cluster), 1);
    auto exec = Executor::create(g, program, *registry, devices_of(cluster));
    ASSERT_TRUE(exec.has_value());
    auto step = run_one_step(*exec, synthetic_sources(g, 0));
    ASSERT_TRUE(step.has_value()) << step.error().to_string();
    EXPECT_EQ(step->devices[0].peak.value(), predicted.peak_memory_bytes[0]) << spec;
  }
}

// The arena's samples are the measured memory over time (a report draws them beside the
// simulated): in time order within the step, reaching the arena's peak, here the predicted one.
TEST(Executor, MeasuredMemoryOverTimeReachesThePeak) {
  auto registry = ops::OpRegistry::with_builtins();
  auto cluster = *cluster::load_cluster("cpu:devices=1");
  auto g = training_graph(mlp, *registry);
  auto program = *lower::lower(g, plan::single_device_plan(g, *registry), *registry);
  auto predicted = sim::predict(g, program, cost::CostModel(cluster), 1);
  auto exec = Executor::create(g, program, *registry, devices_of(cluster));
  ASSERT_TRUE(exec.has_value());
  auto step = run_one_step(*exec, synthetic_sources(g, 0));
  ASSERT_TRUE(step.has_value()) << step.error().to_string();
  auto const& memory = step->devices[0].memory;
  // A sample per allocation and per release: every block of the program and the initial ones.
  ASSERT_GE(memory.size(), program.tasks.size());
  std::int64_t most = 0;
  for (std::size_t i = 0; i < memory.size(); ++i) {
    EXPECT_GE(memory[i].time_s, 0.0);
    EXPECT_LE(memory[i].time_s, step->step_s);
    if (i > 0) {
      EXPECT_GE(memory[i].time_s, memory[i - 1].time_s);
    }
    most = std::max(most, memory[i].bytes);
  }
  EXPECT_EQ(most, step->devices[0].peak.value());
  EXPECT_EQ(most, predicted.peak_memory_bytes[0]);
}

// A worker takes its tasks as they become ready, ties broken by content: the simulator's policy.
// On one device the order is then the simulated order whatever the durations (a task's ready time
// is its last dependency's end, which on one stream is its position), and it does not depend on
// where a task sits in the list: a program listed in another topological order runs the same.
TEST(Executor, OneDeviceRunsTasksInTheSimulatedOrder) {
  auto registry = ops::OpRegistry::with_builtins();
  auto cluster = *cluster::load_cluster("cpu:devices=1");
  for (char const* spec : {mlp, "gpt:layers=1,hidden=8,heads=2,seq=4,vocab=7,batch=2"}) {
    auto g = training_graph(spec, *registry);
    auto program = *lower::lower(g, plan::single_device_plan(g, *registry), *registry);
    auto predicted = sim::predict(g, program, cost::CostModel(cluster), 1);
    auto by_start = [](auto const& spans, auto start) {
      std::vector<lower::TaskId> order(spans.size());
      for (lower::TaskId i = 0; i < order.size(); ++i)
        order[i] = i;
      std::stable_sort(order.begin(), order.end(),
                       [&](auto a, auto b) { return start(spans[a]) < start(spans[b]); });
      return order;
    };
    auto simulated = by_start(predicted.sim.spans, [](auto const& s) { return s.start; });

    // The same program listed backwards wherever the dependencies allow (a task is placed as
    // late as possible), its ids renumbered.
    auto const& tasks = program.tasks;
    std::vector<std::vector<lower::TaskId>> readers(tasks.size());
    std::vector<std::size_t> unplaced(tasks.size(), 0);
    for (lower::TaskId i = 0; i < tasks.size(); ++i)
      for (auto d : tasks[i].deps)
        readers[d].push_back(i), ++unplaced[i];
    std::vector<lower::TaskId> listed;  // old ids in the new list's order
    std::vector<lower::TaskId> ready;
    for (lower::TaskId i = 0; i < tasks.size(); ++i)
      if (unplaced[i] == 0) ready.push_back(i);
    while (!ready.empty()) {
      auto at = std::max_element(ready.begin(), ready.end());
      lower::TaskId t = *at;
      ready.erase(at);
      listed.push_back(t);
      for (auto r : readers[t])
        if (--unplaced[r] == 0) ready.push_back(r);
    }
    ASSERT_EQ(listed.size(), tasks.size());
    EXPECT_NE(listed, simulated) << spec << ": the relisted program should differ";
    std::vector<lower::TaskId> new_id(tasks.size());
    for (lower::TaskId k = 0; k < listed.size(); ++k)
      new_id[listed[k]] = k;
    lower::Program relisted = program;
    for (lower::TaskId k = 0; k < listed.size(); ++k) {
      relisted.tasks[k] = tasks[listed[k]];
      for (auto& d : relisted.tasks[k].deps)
        d = new_id[d];
    }

    for (auto const* p : {&program, &relisted}) {
      auto exec = Executor::create(g, *p, *registry, devices_of(cluster));
      ASSERT_TRUE(exec.has_value());
      auto step = run_one_step(*exec, synthetic_sources(g, 0));
      ASSERT_TRUE(step.has_value()) << step.error().to_string();
      auto ran = by_start(step->spans, [](auto const& s) { return s.start; });
      if (p == &relisted)
        for (auto& id : ran)
          id = listed[id];
      EXPECT_EQ(ran, simulated) << spec << (p == &relisted ? " (relisted)" : "");
    }
  }
}

}  // namespace
}  // namespace cleave::runtime
