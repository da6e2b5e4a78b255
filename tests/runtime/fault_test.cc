// Faults end a run with their error, never a hang or a crash: a plan that does not fit its
// devices' memory (the arena names the device, the block and the shortfall), an injected kernel
// failure on any device count, a failing or aborted communication backend, and a collective whose
// members are aborted. ctest runs this file's
// tests under a short TIMEOUT, so a hang fails them.
#include <gtest/gtest.h>
#include <thread>

#include "recording_backend.h"
#include "runtime/comm_backend.h"
#include "runtime/synthetic_data.h"
#include "runtime_test_util.h"

namespace cleave::runtime {
namespace {

using namespace testing;

constexpr char const* mlp = small_mlp;

TEST(Faults, APlanThatDoesNotFitIsAnOutOfMemoryError) {
  auto registry = ops::OpRegistry::with_builtins();
  auto g = training_graph(mlp, *registry);
  auto cluster = *cluster::load_cluster("cpu:devices=2");
  auto p = make_plan(g, *registry, cluster, "cpu:devices=2", "data-parallel", 8);
  ASSERT_TRUE(p.has_value()) << p.error().to_string();
  auto program = lower::lower(g, *p, *registry);
  ASSERT_TRUE(program.has_value());
  std::vector<DeviceInfo> small{{"cpu0", Bytes(4096)}, {"cpu1", Bytes(600)}};
  auto exec = Executor::create(g, std::move(*program), *registry, small);
  ASSERT_TRUE(exec.has_value());
  auto step = run_one_step(*exec, synthetic_sources(g, 0));
  ASSERT_FALSE(step.has_value());
  EXPECT_EQ(step.error().code(), ErrorCode::out_of_memory);
  std::string message = step.error().to_string();
  EXPECT_NE(message.find("device cpu1 is out of memory"), std::string::npos) << message;
  EXPECT_NE(message.find("tensor "), std::string::npos) << message;
  EXPECT_NE(message.find("bytes) short"), std::string::npos) << message;
  EXPECT_NE(message.find(" B"), std::string::npos) << message;  // human units
}

TEST(Faults, AnInjectedKernelFailureEndsTheRunOnEveryDeviceCount) {
  auto registry = ops::OpRegistry::with_builtins();
  auto g = training_graph(mlp, *registry);
  for (int devices : {1, 2, 4, 8}) {
    std::string spec = "cpu:devices=" + std::to_string(devices);
    auto cluster = *cluster::load_cluster(spec);
    for (char const* algo : {"data-parallel", "tofu"}) {
      auto p = make_plan(g, *registry, cluster, spec, algo, 8);
      ASSERT_TRUE(p.has_value()) << p.error().to_string();
      auto exec = executor_for(g, *p, *registry, cluster);
      ASSERT_TRUE(exec.has_value()) << exec.error().to_string();
      // Fail an op early in the step (the others wait for it) and one late.
      for (auto const* op : {&g.ops().front(), &g.ops()[g.num_ops() / 2]}) {
        ExecOptions options;
        options.fail_op = op->name;
        auto step = run_one_step(*exec, synthetic_sources(g, 0), options);
        ASSERT_FALSE(step.has_value()) << spec << " " << algo << " " << op->name;
        EXPECT_EQ(step.error().code(), ErrorCode::execution_failed);
        EXPECT_NE(step.error().to_string().find("injected kernel failure in op '" + op->name),
                  std::string::npos)
            << step.error().to_string();
      }
    }
  }
}

TEST(Faults, MissingSourcesAreErrors) {
  auto registry = ops::OpRegistry::with_builtins();
  auto g = training_graph(mlp, *registry);
  auto exec = data_parallel_executor(g, *registry);
  ASSERT_TRUE(exec.has_value()) << exec.error().to_string();
  auto step = run_one_step(*exec, {});
  ASSERT_FALSE(step.has_value());
  EXPECT_EQ(step.error().code(), ErrorCode::not_found);
}

// A failing backend call ends the run with its error, on whichever device and call it fails:
// the executor aborts the backend, which wakes the members that wait in a collective or for a
// message.
TEST(Faults, AFailingBackendCallEndsTheRunWithItsError) {
  auto registry = ops::OpRegistry::with_builtins();
  auto g = training_graph(mlp, *registry);
  auto cluster = *cluster::load_cluster("cpu:devices=2");
  int failed = 0;
  for (char const* algo : {"data-parallel", "tofu"}) {
    auto p = make_plan(g, *registry, cluster, "cpu:devices=2", algo, 8);
    ASSERT_TRUE(p.has_value()) << p.error().to_string();
    auto exec = executor_for(g, *p, *registry, cluster);
    ASSERT_TRUE(exec.has_value()) << exec.error().to_string();
    for (int device : {0, 1})
      for (int call : {1, 2, 5}) {
        RecordingBackend backend({device, call});
        ExecOptions options;
        options.backend = &backend;
        auto step = exec->run_step(synthetic_sources(g, 0), options);
        std::string where = std::string(algo) + " device " + std::to_string(device) + " call " +
                            std::to_string(call);
        if (step.has_value()) {  // the device makes fewer calls
          std::size_t made = 0;
          for (auto const& r : backend.records())
            made += r.device == device;
          EXPECT_LT(made, static_cast<std::size_t>(call)) << where;
          continue;
        }
        ++failed;
        std::string message = step.error().to_string();
        EXPECT_EQ(step.error().code(), ErrorCode::execution_failed) << where;
        EXPECT_NE(message.find("lost the connection to device " + std::to_string(device)),
                  std::string::npos)
            << where << ": " << message;
        EXPECT_NE(message.find("on device cpu" + std::to_string(device)), std::string::npos)
            << where << ": " << message;
      }
  }
  EXPECT_GE(failed, 6);
}

TEST(Faults, AnAbortedBackendEndsTheRun) {
  auto registry = ops::OpRegistry::with_builtins();
  auto g = training_graph(mlp, *registry);
  auto exec = data_parallel_executor(g, *registry);
  ASSERT_TRUE(exec.has_value()) << exec.error().to_string();
  InProcessBackend backend;
  backend.abort();  // a peer went away before the step
  ExecOptions options;
  options.backend = &backend;
  auto step = exec->run_step(synthetic_sources(g, 0), options);
  ASSERT_FALSE(step.has_value());
  EXPECT_NE(step.error().to_string().find("the communication backend was aborted"),
            std::string::npos)
      << step.error().to_string();
}

// Members' shares of unequal sizes, as a tensor's blocks may be.
TEST(Collectives, InProcessAllReduceAllGatherReduceScatter) {
  InProcessBackend backend;
  std::vector<int> group{0, 1, 2};
  std::vector<std::size_t> counts{1, 2, 3};
  std::vector<std::vector<float>> reduced(3), gathered(3), scattered(3);
  std::vector<Status> status(9, Status::ok());
  std::vector<std::thread> members;
  for (int d = 0; d < 3; ++d)
    members.emplace_back([&, d] {
      std::vector<float> mine{float(d), float(10 * d), 1, 2, 3, 4};
      reduced[d] = mine;
      status[3 * d] = backend.all_reduce({1, group, d, tdl::Reducer::sum, {}}, reduced[d]);
      gathered[d].resize(6);
      std::span<float const> share(mine.data(), counts[d]);
      status[3 * d + 1] =
          backend.all_gather({2, group, d, tdl::Reducer::sum, counts}, share, gathered[d]);
      scattered[d].resize(counts[d]);
      status[3 * d + 2] =
          backend.reduce_scatter({3, group, d, tdl::Reducer::max, counts}, mine, scattered[d]);
    });
  for (auto& m : members)
    m.join();
  for (auto const& st : status)
    EXPECT_TRUE(st.is_ok());
  for (int d = 0; d < 3; ++d) {
    EXPECT_EQ(reduced[d], (std::vector<float>{3, 30, 3, 6, 9, 12}));
    EXPECT_EQ(gathered[d], (std::vector<float>{0, 1, 10, 2, 20, 1}));
  }
  EXPECT_EQ(scattered[0], (std::vector<float>{2}));
  EXPECT_EQ(scattered[1], (std::vector<float>{20, 1}));
  EXPECT_EQ(scattered[2], (std::vector<float>{2, 3, 4}));
}

TEST(Collectives, AMessageArrivesWhicheverEndComesFirst) {
  InProcessBackend backend;
  auto data = std::make_shared<std::vector<float>>(std::vector<float>{1, 2, 3});
  std::vector<float> out(3);
  Status received = Status::ok();
  std::thread receiver([&] { received = backend.receive({4, 0, 1}, out); });
  ASSERT_TRUE(backend.send({4, 0, 1}, {{data->data(), data->size()}, data}).is_ok());
  receiver.join();
  EXPECT_TRUE(received.is_ok());
  EXPECT_EQ(out, *data);
  std::vector<float> small(2);
  ASSERT_TRUE(backend.send({5, 0, 1}, {{data->data(), data->size()}, data}).is_ok());
  auto st = backend.receive({5, 0, 1}, small);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.error().to_string().find("holds 3 elements, not the 2"), std::string::npos);
}

TEST(Collectives, AbortReleasesBlockedMembers) {
  InProcessBackend backend;
  std::vector<float> data(4, 1.0f), out(4);
  Status reduced = Status::ok(), received = Status::ok();
  // Whether they block before the abort or call after it, both fail and return.
  std::thread reducing([&] {
    reduced = backend.all_reduce({7, {0, 1}, 0, tdl::Reducer::sum, {}}, data);
  });
  std::thread receiving([&] { received = backend.receive({9, 0, 1}, out); });
  backend.abort();
  reducing.join();
  receiving.join();
  EXPECT_FALSE(reduced.is_ok());
  EXPECT_FALSE(received.is_ok());
  EXPECT_FALSE(backend.all_reduce({8, {0, 1}, 1, tdl::Reducer::sum, {}}, data).is_ok());
}

}  // namespace
}  // namespace cleave::runtime
