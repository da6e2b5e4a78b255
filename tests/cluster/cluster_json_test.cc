// cleave.cluster/1: exact round trips for every preset and after edits, errors that say what and
// where, and a fingerprint that follows the hardware.
#include <unistd.h>

#include <filesystem>
#include <gtest/gtest.h>

#include "cluster/cluster_json.h"
#include "cluster/presets.h"
#include "fuzz_regressions.h"
#include "support/file_io.h"

namespace cleave::cluster {
namespace {

Cluster preset(std::string const& spec) {
  auto c = PresetRegistry::with_builtins().build(spec);
  if (!c) ADD_FAILURE() << c.error().to_string();
  return std::move(c).value();
}

std::string replace_once(std::string text, std::string const& from, std::string const& to) {
  auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

std::string error_of(std::string const& text) {
  auto c = cluster_from_json(text);
  EXPECT_FALSE(c.has_value());
  return c ? "" : c.error().message();
}

TEST(ClusterJson, EveryPresetRoundTripsExactly) {
  for (auto const& name : PresetRegistry::with_builtins().names()) {
    Cluster c = preset(name);
    std::string text = cluster_to_json(c);
    auto back = cluster_from_json(text);
    ASSERT_TRUE(back.has_value()) << name << ": " << back.error().to_string();
    EXPECT_EQ(cluster_to_json(*back), text) << name;
    EXPECT_EQ(fingerprint(*back), fingerprint(c));
    EXPECT_EQ(back->name(), c.name());
    EXPECT_EQ(back->sources(), c.sources());
    for (std::uint32_t i = 0; i < c.num_devices(); ++i)
      for (std::uint32_t j = 0; j < c.num_devices(); ++j) {
        Route a = c.route(DeviceId(i), DeviceId(j)), b = back->route(DeviceId(i), DeviceId(j));
        ASSERT_TRUE(std::equal(a.hops.begin(), a.hops.end(), b.hops.begin(), b.hops.end()));
      }
  }
}

TEST(ClusterJson, FormatIsReadable) {
  std::string text = cluster_to_json(preset("v100x1"));
  EXPECT_EQ(text.rfind("{\"format\":\"cleave.cluster/1\",\n\"name\":\"v100x1:", 0), 0u) << text;
  EXPECT_NE(text.find("\n{\"name\":\"gpu0\",\"kind\":\"V100-SXM2-16GB\",\"node\":\"node0\","
                      "\"memory_bytes\":17179869184,\"memory_bandwidth_bytes_per_s\":9e+11,"
                      "\"peak_flops_per_s\":{\"fp32\":1.57e+13,\"fp16\":1.25e+14}}"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("{\"kind\":\"host\",\"a\":\"gpu0\",\"b\":\"node0/host\","
                      "\"bandwidth_bytes_per_s\":1.2e+10,\"latency_s\":2e-06}"),
            std::string::npos)
      << text;
}

TEST(ClusterJson, EditedFileLoadsAndRoundTrips) {
  Cluster c = preset("dgx-a100");
  std::string text = cluster_to_json(c);
  // Halve gpu3's memory and slow down its NVSwitch link, as a user editing the file would.
  std::string edited = replace_once(text,
                                    "\"name\":\"gpu3\",\"kind\":\"A100-SXM4-80GB\","
                                    "\"node\":\"node0\",\"memory_bytes\":85899345920",
                                    "\"name\":\"gpu3\",\"kind\":\"A100-SXM4-80GB\","
                                    "\"node\":\"node0\",\"memory_bytes\":42949672960");
  edited = replace_once(edited,
                        "{\"kind\":\"nvswitch\",\"a\":\"gpu3\",\"b\":\"nvswitch\","
                        "\"bandwidth_bytes_per_s\":3e+11",
                        "{\"kind\":\"nvswitch\",\"a\":\"gpu3\",\"b\":\"nvswitch\","
                        "\"bandwidth_bytes_per_s\":1.5e+11");
  auto path = std::filesystem::temp_directory_path() /
              ("cleave_cluster_test_" + std::to_string(::getpid()) + ".json");
  ASSERT_TRUE(write_file_atomic(path.string(), edited).is_ok());
  auto loaded = load_cluster(path.string());
  ASSERT_TRUE(loaded.has_value()) << loaded.error().to_string();
  EXPECT_EQ(loaded->device(DeviceId(3)).memory.value(), 40LL << 30);
  EXPECT_EQ(loaded->route(DeviceId(0), DeviceId(3)).bottleneck.value(), 150e9);
  EXPECT_EQ(loaded->route(DeviceId(0), DeviceId(2)).bottleneck.value(), 300e9);
  EXPECT_EQ(cluster_to_json(*loaded), edited);
  ASSERT_TRUE(save_cluster(*loaded, path.string()).is_ok());
  EXPECT_EQ(*read_file(path.string()), edited);
  std::filesystem::remove(path);
}

TEST(ClusterJson, FingerprintFollowsTheHardwareOnly) {
  Cluster c = preset("dgx-a100");
  EXPECT_EQ(fingerprint_hex(c).size(), 16u);
  EXPECT_EQ(fingerprint(preset("dgx-a100:memory=80GiB")), fingerprint(c));  // same hardware
  EXPECT_NE(fingerprint(preset("dgx-a100:nvswitch=299GB/s")), fingerprint(c));
  EXPECT_NE(fingerprint(preset("dgx-a100:host=24GB/s")), fingerprint(c));
  EXPECT_NE(fingerprint(preset("dgx-a100:memory=40GiB")), fingerprint(c));
  std::string text = cluster_to_json(c);
  auto renamed = cluster_from_json(replace_once(text, "\"name\":\"dgx-a100:", "\"name\":\"mine:"));
  ASSERT_TRUE(renamed.has_value());
  EXPECT_EQ(fingerprint(*renamed), fingerprint(c));
  auto slower = cluster_from_json(replace_once(text, "\"latency_s\":1e-06", "\"latency_s\":2e-06"));
  ASSERT_TRUE(slower.has_value());
  EXPECT_NE(fingerprint(*slower), fingerprint(c));
}

TEST(ClusterJson, ErrorsSayWhatAndWhere) {
  std::string text = cluster_to_json(preset("dgx-a100"));
  std::string gpu2 = "\"name\":\"gpu2\",\"kind\":\"A100-SXM4-80GB\",\"node\":\"node0\",";
  struct Case {
    std::string text, message;
  };
  Case cases[] = {
      {text.substr(0, text.size() / 2), "malformed JSON at byte"},
      {"", "malformed JSON at byte 0"},
      {"[1,2]", "not a cleave cluster"},
      {replace_once(text, "cleave.cluster/1", "cleave.cluster/2"),
       "format is \"cleave.cluster/2\" but cleave reads \"cleave.cluster/1\""},
      {replace_once(text, "\"memory_bytes\":85899345920,", ""),
       "device 0 ('gpu0'): missing key 'memory_bytes'"},
      {replace_once(text, gpu2 + "\"memory_bytes\":85899345920", gpu2 + "\"memory_bytes\":0"),
       "device 2 ('gpu2') has zero memory"},
      {replace_once(text, gpu2 + "\"memory_bytes\":85899345920",
                    gpu2 + "\"memory_bytes\":\"80GiB\""),
       "device 2 ('gpu2'), key 'memory_bytes': expected an integer number of bytes, found a "
       "string"},
      {replace_once(text, "\"fp32\":1.95e+13", "\"fp64\":1.95e+13"), "unknown dtype 'fp64'"},
      {replace_once(text, "\"node\":\"node0\",\"memory", "\"node\":\"node9\",\"memory"),
       "device 0 ('gpu0'), key 'node': no node is named 'node9'"},
      {replace_once(text, "{\"kind\":\"nvswitch\",\"a\":\"gpu0\"",
                    "{\"kind\":\"nvswitch\",\"a\":\"gpu99\""),
       "link 0, key 'a': no device, switch or host is named 'gpu99'"},
      {replace_once(text, "{\"kind\":\"nvswitch\",\"a\"", "{\"kind\":\"warp\",\"a\""),
       "unknown link kind 'warp'"},
      {replace_once(text, "\"kind\":\"nvswitch\",\"node\"", "\"kind\":\"router\",\"node\""),
       "unknown switch kind 'router'"},
      {replace_once(text, "\"latency_s\":1e-06}", "\"latency_s\":1e-06,\"colour\":\"red\"}"),
       "link 0: unknown key 'colour'; expected kind, a, b, bandwidth_bytes_per_s, latency_s"},
      {replace_once(text, "\"links\":[", "\"extra\":1,\"links\":["),
       "top level: unknown key 'extra'"},
  };
  for (auto const& c : cases) {
    std::string m = error_of(c.text);
    EXPECT_NE(m.find(c.message), std::string::npos) << "want: " << c.message << "\ngot: " << m;
  }
  // A topology split in two by an edit is named by two devices that cannot reach each other.
  ClusterBuilder b("two");
  NodeId n0 = b.add_node("node0", Bytes(1 << 30)), n1 = b.add_node("node1", Bytes(1 << 30));
  for (NodeId n : {n0, n1}) {
    Device d;
    d.name = "d" + std::to_string(n.value());
    d.kind = "k";
    d.node = n;
    d.memory = Bytes(1);
    d.peak[ir::DType::fp32] = FlopsPerSecond(1);
    d.memory_bandwidth = BytesPerSecond(1);
    b.add_host_link(b.add_device(d), BytesPerSecond(1), Seconds(0));
  }
  b.add_link(LinkKind::ethernet, DeviceId(0), DeviceId(1), BytesPerSecond(1), Seconds(0));
  auto joined = b.build();
  ASSERT_TRUE(joined.has_value()) << joined.error().to_string();
  std::string cut = cluster_to_json(*joined);
  cut = replace_once(cut,
                     ",\n{\"kind\":\"ethernet\",\"a\":\"d0\",\"b\":\"d1\","
                     "\"bandwidth_bytes_per_s\":1.0,\"latency_s\":0.0}",
                     "");
  EXPECT_NE(error_of(cut).find("device 0 ('d0') cannot reach device 1 ('d1')"), std::string::npos)
      << error_of(cut);
}

// Inputs fuzz/cluster_json_fuzz.cc found crashing (scripts/fuzz.sh), with the outcome each must
// now have.
TEST(ClusterJson, FuzzRegressionsGiveTheirOutcome) {
  testing::expect_fuzz_outcomes(
      CLEAVE_CLUSTER_FUZZ_REGRESSIONS,
      {
          // 2e125000000000000: nlohmann throws out_of_range, not parse_error; it was uncaught.
          {"number_beyond_double.json", "malformed JSON: number overflow parsing"},
      },
      [](std::string const& text) { return testing::status_of(cluster_from_json(text)); });
}

}  // namespace
}  // namespace cleave::cluster
