#include <gtest/gtest.h>
#include <numeric>

#include "cluster/presets.h"
#include "cost/collective.h"

namespace cleave::cost {
namespace {

std::vector<cluster::DeviceId> first(std::size_t n) {
  std::vector<cluster::DeviceId> g;
  for (std::size_t i = 0; i < n; ++i)
    g.push_back(cluster::DeviceId(static_cast<cluster::DeviceId::value_type>(i)));
  return g;
}

cluster::Cluster preset(std::string const& spec) {
  auto c = cluster::load_cluster(spec);
  EXPECT_TRUE(c.has_value()) << spec;
  return std::move(*c);
}

constexpr std::int64_t gib = std::int64_t{1} << 30;

TEST(CollectiveCost, GroupOfOneIsFree) {
  auto c = preset("dgx-a100");
  auto g = first(1);
  auto cost = collective_cost(c, CollectiveKind::all_reduce, Bytes(gib), g);
  EXPECT_EQ(cost.time.value(), 0);
  EXPECT_TRUE(cost.channel_bytes.empty());
}

// Inside an NVSwitch node every ring hop has its GPU's whole NVSwitch bandwidth, so a large
// all-reduce's bus bandwidth approaches the per-GPU link bandwidth NCCL reaches: 0.8 of the
// 300 GB/s line rate on DGX A100, 240 GB/s (published: ~230 GB/s).
TEST(CollectiveCost, RingInsideNvSwitchNodeRunsAtLinkBandwidth) {
  auto c = preset("dgx-a100");
  auto g = first(8);
  auto cost = collective_cost(c, CollectiveKind::all_reduce, Bytes(gib), g);
  EXPECT_EQ(cost.algorithm, CollectiveAlgorithm::ring);
  double bus = bus_bandwidth(CollectiveKind::all_reduce, Bytes(gib), 8, cost.time).value();
  EXPECT_GT(bus, 0.99 * 240e9);
  EXPECT_LE(bus, 240e9);
  // Hand calculation: 2 (n-1) steps of (latency + (S/n) / B), latency = two NVSwitch hops.
  auto route = c.route(g[0], g[1]);
  double expected = 14 * (route.latency.value() + static_cast<double>(gib) / 8 / (0.8 * 300e9));
  EXPECT_NEAR(cost.time.value(), expected, 1e-12);
}

// With every efficiency at 1 the ring runs at the links' line rate.
TEST(CollectiveCost, EfficiencyOneGivesLineRate) {
  auto c = preset("dgx-a100");
  auto g = first(8);
  CollectiveOptions line_rate{/*nvlink_efficiency=*/1, /*infiniband_efficiency=*/1,
                              /*other_efficiency=*/1};
  auto cost = collective_cost(c, CollectiveKind::all_gather, Bytes(gib), g, line_rate);
  double bus = bus_bandwidth(CollectiveKind::all_gather, Bytes(gib), 8, cost.time).value();
  EXPECT_GT(bus, 0.99 * 300e9);
  EXPECT_LE(bus, 300e9);
}

// Every ring hop carries (n-1)/n of the buffer per pass: reduce-scatter once, all-reduce twice.
TEST(CollectiveCost, RingBytesPerLinkDirection) {
  auto c = preset("dgx-a100");
  auto g = first(4);
  auto rs = collective_cost(c, CollectiveKind::reduce_scatter, Bytes(4000), g);
  auto ar = collective_cost(c, CollectiveKind::all_reduce, Bytes(4000000), g);
  ASSERT_EQ(rs.channel_bytes.size(), 8u);  // each member's uplink and downlink to the switch
  for (auto [channel, bytes] : rs.channel_bytes)
    EXPECT_EQ(bytes.value(), 3000) << channel;
  for (auto [channel, bytes] : ar.channel_bytes)
    EXPECT_EQ(bytes.value(), 6000000) << channel;
}

// Across two nodes the ring crosses the InfiniBand NICs, the bottleneck: 400 Gb/s = 50 GB/s, of
// which NCCL moves 0.94 (47 GB/s); inside a node NVLink's 0.8 of 450 GB/s.
TEST(CollectiveCost, HierarchyShowsAcrossNodes) {
  // Two DGX H100s: NCCL runs one ring per NIC (8), so the NICs together (8 x 47 GB/s) keep up
  // with NVLink (360 GB/s effective) and the 16-GPU bus bandwidth stays near the 8-GPU one
  // (nccl-tests#212/#290: about 370 GB/s); with 100 Gb/s NICs the network is the bottleneck:
  // 8 x 12.5 GB/s x 0.94.
  auto inside = first(8);
  auto across = first(16);
  auto bus = [&](std::string const& spec, std::vector<cluster::DeviceId> const& g) {
    auto c = preset(spec);
    auto cost = collective_cost(c, CollectiveKind::all_gather, Bytes(gib), g);
    return bus_bandwidth(CollectiveKind::all_gather, Bytes(gib), g.size(), cost.time).value();
  };
  double bus_in = bus("h100-2x8", inside);
  EXPECT_GT(bus_in, 0.99 * 360e9);
  EXPECT_LE(bus_in, 360e9);
  double bus_out = bus("h100-2x8", across);
  EXPECT_GT(bus_out, 0.95 * 360e9);  // the network adds latency per step
  EXPECT_LE(bus_out, 360e9);
  double slow = bus("h100-2x8:network=100Gb/s", across);
  EXPECT_GT(slow, 0.98 * 8 * 12.5e9 * 0.94);
  EXPECT_LE(slow, 8 * 12.5e9 * 0.94);
}

// For a tiny buffer latency dominates: the tree's 2 log2(n) latencies beat the ring's 2 (n-1).
TEST(CollectiveCost, SmallAllReduceTakesTheTree) {
  auto c = preset("h100-2x8");
  auto g = first(16);
  auto small = collective_cost(c, CollectiveKind::all_reduce, Bytes(8), g);
  auto large = collective_cost(c, CollectiveKind::all_reduce, Bytes(gib), g);
  EXPECT_EQ(small.algorithm, CollectiveAlgorithm::tree);
  EXPECT_EQ(large.algorithm, CollectiveAlgorithm::ring);
  // All-gather and reduce-scatter are rings whatever their size (NCCL has no tree for them).
  EXPECT_EQ(collective_cost(c, CollectiveKind::all_gather, Bytes(8), g).algorithm,
            CollectiveAlgorithm::ring);
}

// Two ring hops that share a link direction share its bandwidth: a ring 0 -> 8 -> 1 -> 9 over
// two nodes crosses the network four times and is slower than the ring 0..15 that crosses twice.
// Across nodes the rings visit each node's members together, whatever order the group lists
// them in: interleaving the two nodes' GPUs does not make the rings cross the network 16 times.
TEST(CollectiveCost, RingsAcrossNodesGoNodeByNode) {
  auto c = preset("h100-2x8");
  std::vector<cluster::DeviceId> interleaved;
  for (int i = 0; i < 8; ++i) {
    interleaved.push_back(cluster::DeviceId(static_cast<cluster::DeviceId::value_type>(i)));
    interleaved.push_back(cluster::DeviceId(static_cast<cluster::DeviceId::value_type>(i + 8)));
  }
  auto blocked = first(16);
  auto a = collective_cost(c, CollectiveKind::reduce_scatter, Bytes(gib), interleaved);
  auto b = collective_cost(c, CollectiveKind::reduce_scatter, Bytes(gib), blocked);
  EXPECT_DOUBLE_EQ(a.time.value(), b.time.value());
  // Every NIC carries traffic: 8 rings leave each node through 8 different GPUs.
  int infiniband = 0;
  for (auto [channel, bytes] : b.channel_bytes)
    if (c.links()[channel / 2].kind == cluster::LinkKind::infiniband && bytes.value() > 0)
      ++infiniband;
  EXPECT_EQ(infiniband, 32);  // 16 NIC-switch links, both directions
}

TEST(CollectiveCost, BusBandwidthFactors) {
  EXPECT_DOUBLE_EQ(bus_bandwidth(CollectiveKind::all_reduce, Bytes(800), 8, Seconds(1)).value(),
                   1400);
  EXPECT_DOUBLE_EQ(bus_bandwidth(CollectiveKind::all_gather, Bytes(800), 8, Seconds(1)).value(),
                   700);
}

}  // namespace
}  // namespace cleave::cost
