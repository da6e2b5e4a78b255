// The cluster data model: verification (every error names what to fix) and routing on small
// hand-built topologies.
#include <cmath>
#include <gtest/gtest.h>

#include "cluster/cluster_builder.h"

namespace cleave::cluster {
namespace {

constexpr double gb = 1e9;

Device gpu(std::string name, NodeId node, std::int64_t memory = 16'000'000'000) {
  Device d;
  d.name = std::move(name);
  d.kind = "test-gpu";
  d.node = node;
  d.memory = Bytes(memory);
  d.peak[ir::DType::fp32] = FlopsPerSecond(1e13);
  d.memory_bandwidth = BytesPerSecond(900 * gb);
  return d;
}

// Two devices on one node, joined by a direct link, each with a host link.
ClusterBuilder pair() {
  ClusterBuilder b("pair");
  NodeId n = b.add_node("node0", Bytes(1 << 30));
  DeviceId a = b.add_device(gpu("a", n));
  DeviceId c = b.add_device(gpu("c", n));
  b.add_link(LinkKind::nvlink, a, c, BytesPerSecond(20 * gb), Seconds(1e-6));
  b.add_host_link(a, BytesPerSecond(10 * gb), Seconds(2e-6));
  b.add_host_link(c, BytesPerSecond(10 * gb), Seconds(2e-6));
  return b;
}

std::string error_of(ClusterParts parts) {
  auto c = Cluster::create(std::move(parts));
  EXPECT_FALSE(c.has_value());
  return c ? "" : c.error().message();
}

TEST(Cluster, PairBuildsAndRoutes) {
  auto c = pair().build();
  ASSERT_TRUE(c.has_value()) << c.error().to_string();
  EXPECT_EQ(c->num_devices(), 2u);
  EXPECT_EQ(c->num_vertices(), 3u);
  EXPECT_EQ(c->vertex_name(c->host_vertex(NodeId(0))), "node0/host");
  Route r = c->route(DeviceId(0), DeviceId(1));
  ASSERT_EQ(r.hops.size(), 1u);
  EXPECT_EQ(r.hops[0].link, LinkId(0));
  EXPECT_EQ(r.hops[0].direction, Direction::a_to_b);
  EXPECT_EQ(r.bottleneck.value(), 20 * gb);
  EXPECT_DOUBLE_EQ(r.latency.value(), 1e-6);
  Route back = c->route(DeviceId(1), DeviceId(0));
  ASSERT_EQ(back.hops.size(), 1u);
  EXPECT_EQ(back.hops[0].direction, Direction::b_to_a);
  EXPECT_NE(r.hops[0].channel(), back.hops[0].channel());  // full duplex: separate resources
  Route self = c->route(DeviceId(1), DeviceId(1));
  EXPECT_TRUE(self.hops.empty());
  EXPECT_TRUE(std::isinf(self.bottleneck.value()));
  EXPECT_EQ(self.latency.value(), 0);
  Route host = c->host_route(DeviceId(1));
  ASSERT_EQ(host.hops.size(), 1u);
  EXPECT_EQ(c->link(host.hops[0].link).kind, LinkKind::host);
  EXPECT_EQ(host.bottleneck.value(), 10 * gb);
  EXPECT_TRUE(c->same_node(DeviceId(0), DeviceId(1)));
  EXPECT_EQ(c->device(DeviceId(0)).peak_for(ir::DType::fp32)->value(), 1e13);
  EXPECT_FALSE(c->device(DeviceId(0)).peak_for(ir::DType::bf16).has_value());
}

// Among routes of equal hop count the one with the higher bottleneck wins; among equal
// bottlenecks the lowest link id; a longer route never wins however fast.
TEST(Cluster, RoutingPrefersFewestHopsThenBandwidthThenLowestId) {
  ClusterBuilder b("choices");
  NodeId n = b.add_node("node0", Bytes(1 << 30));
  DeviceId d0 = b.add_device(gpu("d0", n)), d1 = b.add_device(gpu("d1", n));
  DeviceId d2 = b.add_device(gpu("d2", n));
  SwitchId slow = b.add_switch("slow", SwitchKind::pcie_switch, n);
  SwitchId fast = b.add_switch("fast", SwitchKind::pcie_switch, n);
  SwitchId fast2 = b.add_switch("fast2", SwitchKind::pcie_switch, n);
  for (DeviceId d : {d0, d1, d2})
    b.add_host_link(d, BytesPerSecond(1 * gb), Seconds(0));  // via host: 2 hops at 1 GB/s
  for (SwitchId s : {slow, fast, fast2}) {
    double bw = s == slow ? 5 * gb : 50 * gb;
    b.add_link(LinkKind::pcie, d0, s, BytesPerSecond(bw), Seconds(1e-6));
    b.add_link(LinkKind::pcie, s, d1, BytesPerSecond(bw), Seconds(1e-6));
  }
  // d0 - d2 over 3 hops at 1000 GB/s loses to 2 hops via the host.
  SwitchId x = b.add_switch("x", SwitchKind::nvswitch, n),
           y = b.add_switch("y", SwitchKind::nvswitch, n);
  b.add_link(LinkKind::nvlink, d0, x, BytesPerSecond(1000 * gb), Seconds(0));
  b.add_link(LinkKind::nvlink, x, y, BytesPerSecond(1000 * gb), Seconds(0));
  b.add_link(LinkKind::nvlink, y, d2, BytesPerSecond(1000 * gb), Seconds(0));
  auto c = b.build();
  ASSERT_TRUE(c.has_value()) << c.error().to_string();
  Route r = c->route(d0, d1);
  ASSERT_EQ(r.hops.size(), 2u);
  // Links 3..8 are slow, fast, fast2 (two each); "fast" (links 5, 6) has the lower ids.
  EXPECT_EQ(r.hops[0].link, LinkId(5));
  EXPECT_EQ(r.hops[1].link, LinkId(6));
  EXPECT_EQ(r.bottleneck.value(), 50 * gb);
  EXPECT_DOUBLE_EQ(r.latency.value(), 2e-6);
  Route r2 = c->route(d0, d2);
  ASSERT_EQ(r2.hops.size(), 2u);
  EXPECT_EQ(c->link(r2.hops[0].link).kind, LinkKind::host);
  EXPECT_EQ(r2.bottleneck.value(), 1 * gb);
  // The reverse direction takes the same links the other way.
  Route back = c->route(d1, d0);
  ASSERT_EQ(back.hops.size(), 2u);
  EXPECT_EQ(back.hops[0].link, LinkId(6));
  EXPECT_EQ(back.hops[0].direction, Direction::b_to_a);
}

TEST(Cluster, Errors) {
  {
    ClusterParts p = pair().finish();
    p.devices[1].memory = Bytes(0);
    std::string m = error_of(p);
    EXPECT_NE(m.find("device 1 ('c') has zero memory"), std::string::npos) << m;
  }
  {
    ClusterParts p = pair().finish();
    p.links.erase(p.links.begin());  // no direct link; the host links still join them
    EXPECT_TRUE(Cluster::create(p).has_value());
  }
  {
    ClusterBuilder b("split");
    NodeId n0 = b.add_node("node0", Bytes(1 << 30)), n1 = b.add_node("node1", Bytes(1 << 30));
    DeviceId a = b.add_device(gpu("a", n0)), c = b.add_device(gpu("c", n1));
    b.add_host_link(a, BytesPerSecond(gb), Seconds(0));
    b.add_host_link(c, BytesPerSecond(gb), Seconds(0));
    std::string m = error_of(b.finish());
    EXPECT_NE(m.find("disconnected: device 0 ('a') cannot reach device 1 ('c')"), std::string::npos)
        << m;
  }
  struct Case {
    std::function<void(ClusterParts&)> edit;
    std::string message;
  };
  Case cases[] = {
      {[](ClusterParts& p) { p.devices.clear(); }, "has no devices"},
      {[](ClusterParts& p) { p.devices[1].name = "a"; }, "the name 'a' is used twice"},
      {[](ClusterParts& p) { p.devices[1].name = "node0/host"; }, "'node0/host' is used twice"},
      {[](ClusterParts& p) { p.devices[0].memory = Bytes(-5); }, "negative memory"},
      {[](ClusterParts& p) { p.devices[0].peak.clear(); }, "has no peak FLOP/s"},
      {[](ClusterParts& p) { p.devices[0].peak[ir::DType::fp16] = FlopsPerSecond(0); },
       "peak 0.000000 FLOP/s for fp16"},
      {[](ClusterParts& p) { p.devices[0].peak[ir::DType::int32] = FlopsPerSecond(1); },
       "peaks are for fp32, fp16 or bf16"},
      {[](ClusterParts& p) { p.devices[0].memory_bandwidth = BytesPerSecond(0); },
       "memory bandwidth"},
      {[](ClusterParts& p) { p.devices[0].node = NodeId(7); }, "is in node 7 but there are 1"},
      {[](ClusterParts& p) { p.devices[0].kind.clear(); }, "empty kind"},
      {[](ClusterParts& p) { p.links[0].bandwidth = BytesPerSecond(0); },
       "link 0 (nvlink a - c) has bandwidth 0"},
      {[](ClusterParts& p) { p.links[0].bandwidth = BytesPerSecond(NAN); }, "has bandwidth nan"},
      {[](ClusterParts& p) { p.links[0].latency = Seconds(-1); }, "must be >= 0"},
      {[](ClusterParts& p) { p.links[0].b = VertexId(99); }, "endpoint out of range"},
      {[](ClusterParts& p) { p.links[0].b = p.links[0].a; }, "connects a vertex to itself"},
      {[](ClusterParts& p) { p.links.pop_back(); }, "device 1 ('c') has no host link"},
      {[](ClusterParts& p) { p.links[0].kind = LinkKind::host; }, "is a host link but"},
      {[](ClusterParts& p) { p.nodes[0].host_memory = Bytes(0); }, "host_memory_bytes > 0"},
      {[](ClusterParts& p) {
         p.switches.push_back({"s", SwitchKind::nic, NodeId(3)});
       },
       "switch 0 ('s') is in node 3"},
  };
  for (auto const& c : cases) {
    ClusterParts p = pair().finish();
    c.edit(p);
    std::string m = error_of(p);
    EXPECT_NE(m.find(c.message), std::string::npos) << "want: " << c.message << "\ngot: " << m;
  }
}

TEST(Cluster, KindNamesRoundTrip) {
  for (auto k : {LinkKind::nvlink, LinkKind::pcie, LinkKind::nvswitch, LinkKind::infiniband,
                 LinkKind::ethernet, LinkKind::host})
    EXPECT_EQ(parse_link_kind(link_kind_name(k)), k);
  for (auto k :
       {SwitchKind::nvswitch, SwitchKind::pcie_switch, SwitchKind::nic, SwitchKind::network_switch})
    EXPECT_EQ(parse_switch_kind(switch_kind_name(k)), k);
  EXPECT_FALSE(parse_link_kind("carrier-pigeon").has_value());
}

}  // namespace
}  // namespace cleave::cluster
