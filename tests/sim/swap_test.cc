// Host copies (swap-out to the node's host, swap-in back) in hand-built programs: they run on the
// device's host route beside its computation, free and allocate device memory, and contend only
// where they share a link direction.
#include <gtest/gtest.h>

#include "cluster/presets.h"
#include "ops/op_builder.h"
#include "sim/predict.h"

namespace cleave::sim {
namespace {

struct Names {
  ir::TensorId x1, x2, y, z, u, v;
};

ir::Graph build(ops::OpRegistry const& registry, Names& n) {
  ops::OpBuilder b(registry);
  n.x1 = b.input("x1", {256, 256});    // 256 KiB
  n.x2 = b.input("x2", {4096, 1024});  // 16 MiB
  n.y = b.op("relu", {n.x1}, {}, "y");
  // Not element-wise, so that a GPU does not fuse z into u (cost/gpu_compute.h): their kernels
  // give the swap-out of y its window.
  n.z = b.op("softmax", {n.x2}, {}, "z");
  n.u = b.op("softmax", {n.z}, {}, "u");
  n.v = b.op("relu", {n.y}, {}, "v");
  return *b.finish();
}

struct Fixture : Names {
  std::unique_ptr<ops::OpRegistry> registry = ops::OpRegistry::with_builtins();
  ir::Graph graph = build(*registry, *this);
  cluster::Cluster cluster = *cluster::load_cluster("h100-2x8");
  cost::CostModel cost{cluster};

  Bytes bytes(ir::TensorId t) const {
    return Bytes(ir::num_elements(graph.tensor(t).type.shape) * 4);
  }
  tdl::Box whole(ir::TensorId t) const { return tdl::whole_box(graph.tensor(t).type.shape); }
  lower::Task compute(ir::TensorId out, int device, std::vector<lower::TaskId> deps) const {
    lower::Task t;
    t.kind = lower::TaskKind::compute;
    t.device = device;
    t.op = graph.producer(out);
    t.tensor = out;
    t.region = whole(out);
    t.deps = std::move(deps);
    t.bytes = Bytes(2 * bytes(out).value());  // relu and softmax read and write their size
    return t;
  }
  lower::Task swap(lower::TaskKind kind, ir::TensorId t, int device,
                   std::vector<lower::TaskId> deps) const {
    lower::Task task;
    task.kind = kind;
    task.device = device;
    task.tensor = t;
    task.region = whole(t);
    task.bytes = bytes(t);
    task.deps = std::move(deps);
    return task;
  }
  lower::Program program(std::vector<lower::Task> tasks) const {
    lower::Program p;
    p.num_devices = 2;
    p.initial = {{x1, whole(x1), 0}, {x2, whole(x2), 0}};
    p.tasks = std::move(tasks);
    return p;
  }
};

TEST(Swap, SwapOutOverlapsComputeAndLowersPeakMemory) {
  Fixture f;
  using K = lower::TaskKind;
  // y, then z and u while y is on the host, then y back for v.
  auto with = f.program({f.compute(f.y, 0, {}), f.swap(K::swap_out, f.y, 0, {0}),
                         f.compute(f.z, 0, {}), f.compute(f.u, 0, {2}),
                         f.swap(K::swap_in, f.y, 0, {1, 3}), f.compute(f.v, 0, {4})});
  auto without = f.program({f.compute(f.y, 0, {}), f.compute(f.z, 0, {}), f.compute(f.u, 0, {1}),
                            f.compute(f.v, 0, {0, 2})});
  Prediction p = predict(f.graph, with, f.cost, 1);
  Prediction q = predict(f.graph, without, f.cost, 1);
  auto const& s = p.sim.spans;
  double host = f.cost.host_transfer(f.bytes(f.y), cluster::DeviceId(0)).value();
  EXPECT_EQ(s[1].start, s[0].end);  // the swap-out starts when y is computed ...
  EXPECT_EQ(s[2].start, s[0].end);  // ... and z computes meanwhile
  EXPECT_EQ(s[1].end - s[1].start, host);
  EXPECT_LT(s[1].end, s[3].start);  // y has left the device before u allocates
  EXPECT_EQ(q.peak_memory_bytes[0] - p.peak_memory_bytes[0], f.bytes(f.y).value());
  EXPECT_EQ(p.swap_bytes, 2 * f.bytes(f.y).value());
  EXPECT_EQ(p.comm_bytes, 0);
  EXPECT_EQ(p.device_compute_s[0], q.device_compute_s[0]);  // copies are not compute
  // The host link carries y once each way.
  auto route = f.cluster.host_route(cluster::DeviceId(0));
  ASSERT_EQ(route.hops.size(), 1u);
  EXPECT_EQ(p.link_bytes.size(), 2u);
  for (auto const& [name, bytes] : p.link_bytes)
    EXPECT_EQ(bytes, f.bytes(f.y).value()) << name;
}

TEST(Swap, HostCopiesContendOnlyOnSharedLinkDirections) {
  Fixture f;
  using K = lower::TaskKind;
  // Device 0 swaps out x2 twice (one link direction: the second waits) and swaps it in once (the
  // other direction: no wait); device 1 swaps out at the same time over its own host link.
  auto p = f.program({f.swap(K::swap_out, f.x2, 0, {}), f.swap(K::swap_out, f.x2, 0, {}),
                      f.swap(K::swap_in, f.x2, 0, {}), f.swap(K::swap_out, f.x2, 1, {})});
  auto r = predict(f.graph, p, f.cost, 1);
  double host = f.cost.host_transfer(f.bytes(f.x2), cluster::DeviceId(0)).value();
  auto const& s = r.sim.spans;
  EXPECT_EQ(s[0].start, 0);
  EXPECT_EQ(s[1].start, host);
  EXPECT_EQ(s[2].start, 0);
  EXPECT_EQ(s[3].start, 0);
  EXPECT_EQ(r.step_time_s, 2 * host);
}

// On devices that copy on their compute stream (CPU cores) a host copy runs there, one at a time
// with the computation, as the runtime's worker runs it inline: the same program as the first
// test's, on cpu:devices=2, computes z only after y's swap-out.
TEST(Swap, OnCpuCoresHostCopiesRunOnTheComputeStream) {
  Fixture f;
  cluster::Cluster cpu = *cluster::load_cluster("cpu:devices=2");
  cost::CostModel cost(cpu);
  using K = lower::TaskKind;
  auto with = f.program({f.compute(f.y, 0, {}), f.swap(K::swap_out, f.y, 0, {0}),
                         f.compute(f.z, 0, {}), f.compute(f.u, 0, {2}),
                         f.swap(K::swap_in, f.y, 0, {1, 3}), f.compute(f.v, 0, {4})});
  Prediction p = predict(f.graph, with, cost, 1);
  auto const& s = p.sim.spans;
  double host = cost.host_transfer(f.bytes(f.y), cluster::DeviceId(0)).value();
  EXPECT_NEAR(s[1].end - s[1].start, host, host * 1e-9);
  // Every pair of the device's tasks runs one after the other.
  for (std::size_t a = 0; a < s.size(); ++a)
    for (std::size_t b = a + 1; b < s.size(); ++b)
      EXPECT_TRUE(s[a].end <= s[b].start || s[b].end <= s[a].start) << a << " " << b;
  EXPECT_GE(p.device_compute_s[0], 2 * host);  // the stream's busy time includes the copies
}

}  // namespace
}  // namespace cleave::sim
