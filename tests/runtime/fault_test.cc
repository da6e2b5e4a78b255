// Faults end a run with their error, never a hang or a crash: a plan that does not fit its
// devices' memory (the arena names the device, the block and the shortfall), an injected kernel
// failure on any device count, and a collective whose members are aborted. ctest runs this file's
// tests under a short TIMEOUT, so a hang fails them.
#include <gtest/gtest.h>
#include <thread>

#include "runtime/comm_backend.h"
#include "runtime/synthetic_data.h"
#include "runtime_test_util.h"

namespace cleave::runtime {
namespace {

using namespace testing;

constexpr char const* mlp = "mlp:layers=2,hidden=6,input=5,classes=3,batch=8";

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
  auto step = exec->run_step(synthetic_sources(g, 0), {});
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
        auto step = exec->run_step(synthetic_sources(g, 0), options);
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
  auto cluster = *cluster::load_cluster("cpu:devices=2");
  auto p = make_plan(g, *registry, cluster, "cpu:devices=2", "data-parallel", 8);
  ASSERT_TRUE(p.has_value());
  auto exec = executor_for(g, *p, *registry, cluster);
  ASSERT_TRUE(exec.has_value());
  auto step = exec->run_step({}, {});
  ASSERT_FALSE(step.has_value());
  EXPECT_EQ(step.error().code(), ErrorCode::not_found);
}

TEST(Collectives, InProcessAllReduceAllGatherReduceScatter) {
  InProcessBackend backend({});
  std::vector<int> group{0, 1, 2};
  std::vector<std::vector<float>> reduced(3), gathered(3), scattered(3);
  std::vector<std::thread> members;
  for (int d = 0; d < 3; ++d)
    members.emplace_back([&, d] {
      std::vector<float> mine{float(d), float(10 * d), 1, 2, 3, 4};
      reduced[d] = mine;
      ASSERT_TRUE(backend.all_reduce({1, group, d, tdl::Reducer::sum}, reduced[d]).is_ok());
      gathered[d].resize(18);
      ASSERT_TRUE(backend.all_gather({2, group, d, tdl::Reducer::sum}, mine, gathered[d]).is_ok());
      scattered[d].resize(2);
      ASSERT_TRUE(
          backend.reduce_scatter({3, group, d, tdl::Reducer::max}, mine, scattered[d]).is_ok());
    });
  for (auto& m : members)
    m.join();
  for (int d = 0; d < 3; ++d) {
    EXPECT_EQ(reduced[d], (std::vector<float>{3, 30, 3, 6, 9, 12}));
    EXPECT_EQ(gathered[d][6], 1);
    EXPECT_EQ(gathered[d][7], 10);
  }
  EXPECT_EQ(scattered[0], (std::vector<float>{2, 20}));
  EXPECT_EQ(scattered[1], (std::vector<float>{1, 2}));
  EXPECT_EQ(scattered[2], (std::vector<float>{3, 4}));
}

TEST(Collectives, AbortReleasesBlockedMembers) {
  InProcessBackend backend({});
  std::vector<float> data(4, 1.0f);
  Status st = Status::ok();
  std::thread waiting([&] { st = backend.all_reduce({7, {0, 1}, 0, tdl::Reducer::sum}, data); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  backend.abort();
  waiting.join();
  EXPECT_FALSE(st.is_ok());
  EXPECT_FALSE(backend.all_reduce({8, {0, 1}, 1, tdl::Reducer::sum}, data).is_ok());
}

}  // namespace
}  // namespace cleave::runtime
