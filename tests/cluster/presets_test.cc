// The presets: each builds and verifies with the devices, memory and rates of its paper, routes
// take the paths the hardware has, and bad specs give errors that list what is accepted.
#include <gtest/gtest.h>

#include "cluster/cluster_json.h"
#include "cluster/presets.h"

namespace cleave::cluster {
namespace {

constexpr std::int64_t gib = std::int64_t{1} << 30;

Cluster preset(std::string const& spec) {
  auto c = PresetRegistry::with_builtins().build(spec);
  EXPECT_TRUE(c.has_value()) << spec << ": " << c.error().to_string();
  if (!c) std::abort();
  return std::move(c).value();
}

std::vector<LinkKind> kinds(Cluster const& c, Route r) {
  std::vector<LinkKind> out;
  for (Hop h : r.hops)
    out.push_back(c.link(h.link).kind);
  return out;
}

struct Expect {
  std::string name;
  std::size_t devices, nodes;
  std::int64_t memory;
  double fp32;
  std::optional<double> bf16;
};

TEST(Presets, EachBuildsWithItsPapersFigures) {
  Expect cases[] = {
      {"k80x8", 8, 1, 12 * gib, 4.37e12, std::nullopt},
      {"v100x1", 1, 1, 16 * gib, 15.7e12, std::nullopt},
      {"p100-4x4", 16, 4, 16 * gib, 10.6e12, std::nullopt},
      {"k80-16x4", 64, 16, 12 * gib, 4.37e12, std::nullopt},
      {"dgx2", 16, 1, 32 * gib, 15.7e12, std::nullopt},
      {"dgx-a100", 8, 1, 80 * gib, 19.5e12, 312e12},
      {"dgx-a100-40gb", 8, 1, 40 * gib, 19.5e12, 312e12},
      {"h100-2x8", 16, 2, 80 * gib, 67e12, 989e12},
      {"cpu", 2, 1, 4 * gib, 50e9, std::nullopt},
  };
  auto registry = PresetRegistry::with_builtins();
  EXPECT_EQ(registry.names().size(), std::size(cases));
  for (auto const& e : cases) {
    Cluster c = preset(e.name);
    EXPECT_EQ(c.num_devices(), e.devices) << e.name;
    EXPECT_EQ(c.nodes().size(), e.nodes) << e.name;
    for (auto const& d : c.devices()) {
      EXPECT_EQ(d.memory.value(), e.memory) << e.name;
      EXPECT_EQ(d.peak_for(ir::DType::fp32)->value(), e.fp32) << e.name;
      auto bf16 = d.peak_for(ir::DType::bf16);
      EXPECT_EQ(bf16.has_value(), e.bf16.has_value()) << e.name;
      if (bf16 && e.bf16) {
        EXPECT_EQ(bf16->value(), *e.bf16) << e.name;
      }
    }
    // Every device's host route is its host link.
    for (std::uint32_t d = 0; d < c.num_devices(); ++d)
      EXPECT_EQ(kinds(c, c.host_route(DeviceId(d))), std::vector{LinkKind::host}) << e.name;
    EXPECT_FALSE(c.sources().empty()) << e.name;
    EXPECT_EQ(c.name().rfind(e.name, 0), 0u) << c.name();
    EXPECT_FALSE(registry.find(e.name)->sources.empty());
  }
}

// The 40 GB part is its own device kind (a profile of one does not price the other) with its
// slower HBM.
TEST(Presets, TheA100sTwoPartsDifferInKindAndBandwidth) {
  Cluster big = preset("dgx-a100"), small = preset("dgx-a100-40gb");
  EXPECT_EQ(big.devices()[0].kind, "A100-SXM4-80GB");
  EXPECT_EQ(small.devices()[0].kind, "A100-SXM4-40GB");
  EXPECT_EQ(big.devices()[0].memory_bandwidth.value(), 2039e9);
  EXPECT_EQ(small.devices()[0].memory_bandwidth.value(), 1555e9);
}

TEST(Presets, NvswitchNodeRoutesThroughTheSwitch) {
  Cluster c = preset("dgx-a100");
  for (std::uint32_t to = 1; to < 8; ++to) {
    Route r = c.route(DeviceId(0), DeviceId(to));
    EXPECT_EQ(kinds(c, r), (std::vector{LinkKind::nvswitch, LinkKind::nvswitch}));
    EXPECT_EQ(r.bottleneck.value(), 300e9);
    EXPECT_EQ(c.vertex(c.link(r.hops[0].link).b).kind, VertexKind::switch_);
  }
  // ParDNN's 25 us per transfer on the DGX-2.
  Route r = preset("dgx2").route(DeviceId(3), DeviceId(12));
  EXPECT_EQ(r.hops.size(), 2u);
  EXPECT_DOUBLE_EQ(r.latency.value(), 25e-6);
  EXPECT_EQ(r.bottleneck.value(), 150e9);
}

TEST(Presets, AcrossNodesThroughNicsAndInfiniband) {
  Cluster c = preset("h100-2x8");
  EXPECT_FALSE(c.same_node(DeviceId(0), DeviceId(8)));
  EXPECT_TRUE(c.same_node(DeviceId(8), DeviceId(15)));
  Route r = c.route(DeviceId(0), DeviceId(9));
  EXPECT_EQ(kinds(c, r), (std::vector{LinkKind::pcie, LinkKind::infiniband, LinkKind::infiniband,
                                      LinkKind::pcie}));
  EXPECT_EQ(r.bottleneck.value(), 50e9);  // 400 Gb/s
  // Rail-optimised: each GPU leaves through its own NIC and enters through the target's.
  EXPECT_EQ(c.vertex_name(c.link(r.hops[0].link).b), "gpu0/nic");
  EXPECT_EQ(c.vertex_name(c.link(r.hops[3].link).b), "gpu9/nic");
  EXPECT_EQ(kinds(c, c.route(DeviceId(0), DeviceId(7))),
            (std::vector{LinkKind::nvswitch, LinkKind::nvswitch}));

  Cluster p = preset("p100-4x4");
  EXPECT_EQ(kinds(p, p.route(DeviceId(0), DeviceId(3))), std::vector{LinkKind::nvlink});
  Route across = p.route(DeviceId(1), DeviceId(14));
  EXPECT_EQ(across.hops.size(), 6u);
  EXPECT_EQ(kinds(p, across)[2], LinkKind::infiniband);
  EXPECT_EQ(across.bottleneck.value(), 12e9);  // PCIe gen3 under 12.5 GB/s EDR
}

TEST(Presets, K80NodesArePcieOnly) {
  Cluster c = preset("k80-16x4");
  Route in_node = c.route(DeviceId(0), DeviceId(3));
  EXPECT_EQ(kinds(c, in_node), (std::vector{LinkKind::pcie, LinkKind::pcie}));
  EXPECT_EQ(in_node.bottleneck.value(), 12e9);  // the switch, not the 10 GB/s host path
  Route across = c.route(DeviceId(0), DeviceId(63));
  EXPECT_EQ(kinds(c, across), (std::vector{LinkKind::pcie, LinkKind::pcie, LinkKind::infiniband,
                                           LinkKind::infiniband, LinkKind::pcie, LinkKind::pcie}));
  EXPECT_EQ(across.bottleneck.value(), 7e9);  // 56 Gb/s
  for (auto const& l : c.links())
    EXPECT_NE(l.kind, LinkKind::nvlink);
  Route tofu = preset("k80x8").route(DeviceId(0), DeviceId(7));
  EXPECT_EQ(tofu.bottleneck.value(), 21e9);
  // cpu: cores copy through shared memory.
  Cluster cpu = preset("cpu:devices=3");
  EXPECT_EQ(kinds(cpu, cpu.route(DeviceId(0), DeviceId(2))),
            (std::vector{LinkKind::host, LinkKind::host}));
}

TEST(Presets, KeysOverrideDefaults) {
  Cluster c = preset("dgx-a100:memory=40GiB,nvswitch=250GB/s");
  EXPECT_EQ(c.device(DeviceId(5)).memory.value(), 40 * gib);
  EXPECT_EQ(c.route(DeviceId(0), DeviceId(1)).bottleneck.value(), 250e9);
  EXPECT_EQ(c.name(), "dgx-a100:memory=40GiB,nvswitch=250GB/s,host=25GB/s,host_memory=2048GiB");
  EXPECT_NE(c.sources().back().find("given in the cluster spec"), std::string::npos);
  Cluster h = preset("h100-2x8:nodes=4,gpus_per_node=4,network=200Gb/s");
  EXPECT_EQ(h.num_devices(), 16u);
  EXPECT_EQ(h.route(DeviceId(0), DeviceId(15)).bottleneck.value(), 25e9);
  EXPECT_EQ(preset("cpu:devices=6,memory=1e9").device(DeviceId(5)).memory.value(), 1'000'000'000);
  EXPECT_EQ(preset("k80x8:memory=12GB").device(DeviceId(0)).memory.value(), 12'000'000'000);
}

TEST(Presets, DeterministicRoutes) {
  for (auto const& name : PresetRegistry::with_builtins().names()) {
    Cluster a = preset(name), b = preset(name);
    ASSERT_EQ(a.num_devices(), b.num_devices());
    for (std::uint32_t i = 0; i < a.num_devices(); ++i)
      for (std::uint32_t j = 0; j < a.num_devices(); ++j) {
        Route ra = a.route(DeviceId(i), DeviceId(j)), rb = b.route(DeviceId(i), DeviceId(j));
        ASSERT_TRUE(std::equal(ra.hops.begin(), ra.hops.end(), rb.hops.begin(), rb.hops.end()))
            << name << " " << i << "->" << j;
        // Every route leaves the source and ends at the target, each hop continuing the last.
        VertexId at = a.device_vertex(DeviceId(i));
        for (Hop h : ra.hops) {
          Link const& l = a.link(h.link);
          ASSERT_EQ(h.direction == Direction::a_to_b ? l.a : l.b, at);
          at = h.direction == Direction::a_to_b ? l.b : l.a;
        }
        EXPECT_EQ(at, a.device_vertex(DeviceId(j)));
      }
    EXPECT_EQ(fingerprint(a), fingerprint(b));
  }
}

TEST(Presets, BadSpecsListWhatIsAccepted) {
  auto registry = PresetRegistry::with_builtins();
  struct Bad {
    std::string spec, message;
  };
  Bad cases[] = {
      {"dgx3", "unknown cluster 'dgx3'; the presets are k80x8, v100x1, p100-4x4"},
      {"dgx-a100:memroy=40GiB", "has no key 'memroy'; accepted keys:\n  memory (default 80GiB)"},
      {"dgx-a100:memory=40 gigs", "memory=40 gigs is malformed"},
      {"dgx-a100:memory=0GiB", "must be more than 0 bytes"},
      {"dgx-a100:nvswitch=fast", "is not a bandwidth; write e.g. 300GB/s"},
      {"h100-2x8:gpus_per_node=9", "is outside 1..8"},
      {"cpu:devices=two", "is not an integer"},
      {"cpu:devices=2,devices=3", "key 'devices' is given twice"},
      {"cpu:devices", "'devices' is not key=value"},
      {":devices=2", "has no name"},
  };
  for (auto const& c : cases) {
    auto r = registry.build(c.spec);
    ASSERT_FALSE(r.has_value()) << c.spec;
    EXPECT_NE(r.error().message().find(c.message), std::string::npos) << c.spec << "\n"
                                                                      << r.error().message();
  }
  auto file = load_cluster("/nonexistent/cluster.json");
  ASSERT_FALSE(file.has_value());
  EXPECT_NE(file.error().to_string().find("in cluster file '/nonexistent/cluster.json'"),
            std::string::npos);
  EXPECT_TRUE(load_cluster("v100x1").has_value());
}

}  // namespace
}  // namespace cleave::cluster
