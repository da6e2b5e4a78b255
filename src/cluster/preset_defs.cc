// The built-in cluster presets. Each constant appears once, here, with the source line that the
// preset records (shown by `cleave clusters` and in docs/clusters.md).
#include <string>

#include "cluster/presets.h"
#include "cluster/quantity_text.h"
#include "support/assert.h"

namespace cleave::cluster {
namespace {

constexpr double giga = 1e9, tera = 1e12;

// One GPU model: the vendors' public figures. fp16 / bf16 of 0 mean the GPU lacks them.
struct Gpu {
  char const* kind;
  double fp32, fp16, bf16;  // FLOP/s
  double memory_bandwidth;  // B/s
  char const* source;
};

constexpr Gpu k80_die = {
    "K80-GK210-12GB",
    4.37 * tera,
    0,
    0,
    240 * giga,
    "K80 (one GK210 die, as CUDA sees it): 4.37 TFLOP/s fp32, 240 GB/s: NVIDIA Tesla K80 "
    "datasheet, 8.73 TFLOP/s single precision with GPU Boost and 480 GB/s per board of two "
    "GK210 dies, halved; Kepler has no faster fp16 or bf16 path, so they are absent"};
constexpr Gpu p100 = {"P100-SXM2-16GB",
                      10.6 * tera,
                      21.2 * tera,
                      0,
                      732 * giga,
                      "P100 SXM2: 10.6 TFLOP/s fp32, 21.2 TFLOP/s fp16, 732 GB/s: NVIDIA Tesla "
                      "P100 datasheet (NVLink version); no bf16"};
constexpr Gpu v100 = {"V100-SXM2-16GB",
                      15.7 * tera,
                      125 * tera,
                      0,
                      900 * giga,
                      "V100 SXM2: 15.7 TFLOP/s fp32, 125 TFLOP/s fp16 (tensor cores), 900 GB/s: "
                      "NVIDIA Tesla V100 datasheet (SXM2); no bf16"};
constexpr Gpu v100_32 = {"V100-SXM3-32GB",
                         15.7 * tera,
                         125 * tera,
                         0,
                         900 * giga,
                         "V100 SXM3 32GB (DGX-2's part): 15.7 TFLOP/s fp32, 125 TFLOP/s fp16 "
                         "(tensor cores), 900 GB/s: NVIDIA Tesla V100 datasheet (SXM2 figures; "
                         "DGX-2 datasheet: 2 PFLOP/s tensor for 16 GPUs = 125 each); no bf16"};
constexpr Gpu a100 = {"A100-SXM4-80GB",
                      19.5 * tera,
                      312 * tera,
                      312 * tera,
                      2039 * giga,
                      "A100 SXM4 80GB: 19.5 TFLOP/s fp32 (TF32 tensor rate not used), 312 "
                      "TFLOP/s fp16 and bf16 (dense tensor cores), 2039 GB/s: NVIDIA A100 "
                      "datasheet"};
constexpr Gpu a100_40 = {"A100-SXM4-40GB",
                         19.5 * tera,
                         312 * tera,
                         312 * tera,
                         1555 * giga,
                         "A100 SXM4 40GB: 19.5 TFLOP/s fp32, 312 TFLOP/s fp16 and bf16, 1555 GB/s "
                         "(the 80 GB part's compute, slower HBM2): NVIDIA A100 datasheet"};
constexpr Gpu h100 = {"H100-SXM5-80GB",
                      67 * tera,
                      989 * tera,
                      989 * tera,
                      3350 * giga,
                      "H100 SXM5: 67 TFLOP/s fp32, 989 TFLOP/s fp16 and bf16 (dense tensor "
                      "cores; the datasheet's 1979 is with sparsity), 3.35 TB/s: NVIDIA H100 "
                      "datasheet (SXM)"};

// Latencies per link traversal. Only ParDNN states one (25 us); the others are nominal values of
// the order of NCCL's per-hop latencies (its tuning model: ~0.5-3.4 us over NVLink, ~1-6 us over
// PCIe, ~3-14 us over the network, by protocol).
constexpr double nvlink_latency = 1e-6, pcie_latency = 2e-6, network_latency = 5e-6;
constexpr char const* latency_source =
    "latencies 1 us per NVLink/NVSwitch link, 2 us per PCIe or host link, 5 us per network "
    "link: nominal, of the order of NCCL's per-hop latencies in its tuning model (not from the "
    "papers)";
constexpr char const* gpu_memory_note =
    "GPU memory in GiB: a vendor's \"16 GB\" GPU has 16 GiB of capacity (a little less is usable)";

Device make_device(Gpu const& gpu, std::string name, NodeId node, Bytes memory) {
  Device d;
  d.name = std::move(name);
  d.kind = gpu.kind;
  d.node = node;
  d.memory = memory;
  d.peak[ir::DType::fp32] = FlopsPerSecond(gpu.fp32);
  if (gpu.fp16 > 0) d.peak[ir::DType::fp16] = FlopsPerSecond(gpu.fp16);
  if (gpu.bf16 > 0) d.peak[ir::DType::bf16] = FlopsPerSecond(gpu.bf16);
  d.memory_bandwidth = BytesPerSecond(gpu.memory_bandwidth);
  return d;
}

PresetKey size_key(std::string name, std::string fallback, std::string doc) {
  return {std::move(name), KeyKind::size, std::move(fallback), std::move(doc)};
}
PresetKey bandwidth_key(std::string name, std::string fallback, std::string doc) {
  return {std::move(name), KeyKind::bandwidth, std::move(fallback),
          std::move(doc) + ", per direction"};
}
PresetKey count_key(std::string name, std::int64_t fallback, std::string doc, std::int64_t max) {
  return {std::move(name), KeyKind::integer, std::to_string(fallback), std::move(doc), 1, max};
}

std::string gpu_name(std::int64_t node, std::int64_t gpus_per_node, std::int64_t k) {
  return "gpu" + std::to_string(node * gpus_per_node + k);
}

// Nodes of GPUs behind one switch vertex each (NVSwitch or PCIe switch), with one NIC per
// `gpus_per_nic` GPUs linked to a network switch when there is more than one node.
struct SwitchedNodes {
  Gpu const* gpu;
  std::int64_t nodes, gpus_per_node;
  Bytes memory, host_memory;
  SwitchKind fabric;
  LinkKind fabric_link;
  BytesPerSecond fabric_bandwidth;
  Seconds fabric_latency;
  BytesPerSecond host_bandwidth;
  // Network (nodes > 1). nic_per_gpu: each GPU has its own NIC over PCIe (rail-optimised);
  // otherwise one NIC per node hangs off the node's fabric switch, which must then be PCIe.
  bool nic_per_gpu = false;
  LinkKind network_link = LinkKind::infiniband;
  BytesPerSecond network_bandwidth{0.0};
  BytesPerSecond nic_pcie_bandwidth{0.0};
};

void build_switched(ClusterBuilder& b, SwitchedNodes const& s) {
  SwitchId network;
  if (s.nodes > 1) network = b.add_switch("network", SwitchKind::network_switch);
  Seconds pcie(pcie_latency), net(network_latency);
  for (std::int64_t n = 0; n < s.nodes; ++n) {
    std::string suffix = s.nodes > 1 ? std::to_string(n) : "";
    NodeId node = b.add_node("node" + std::to_string(n), s.host_memory);
    SwitchId fabric =
        b.add_switch(std::string(s.fabric == SwitchKind::nvswitch ? "nvswitch" : "pcie") + suffix,
                     s.fabric, node);
    SwitchId node_nic;
    if (s.nodes > 1 && !s.nic_per_gpu) {
      node_nic = b.add_switch("nic" + suffix, SwitchKind::nic, node);
      b.add_link(LinkKind::pcie, node_nic, fabric, s.nic_pcie_bandwidth, pcie);
      b.add_link(s.network_link, node_nic, network, s.network_bandwidth, net);
    }
    for (std::int64_t k = 0; k < s.gpus_per_node; ++k) {
      std::string name = gpu_name(n, s.gpus_per_node, k);
      DeviceId d = b.add_device(make_device(*s.gpu, name, node, s.memory));
      b.add_link(s.fabric_link, d, fabric, s.fabric_bandwidth, s.fabric_latency);
      b.add_host_link(d, s.host_bandwidth, pcie);
      if (s.nodes > 1 && s.nic_per_gpu) {
        SwitchId nic = b.add_switch(name + "/nic", SwitchKind::nic, node);
        b.add_link(LinkKind::pcie, d, nic, s.nic_pcie_bandwidth, pcie);
        b.add_link(s.network_link, nic, network, s.network_bandwidth, net);
      }
    }
  }
}

PresetDef k80x8() {
  return {"k80x8",
          "Tofu's machine: AWS p2.8xlarge, 8 K80 GPU dies (12 GB each) on PCIe",
          {size_key("memory", "12GiB", "memory per GPU"),
           bandwidth_key("p2p", "21GB/s", "PCIe peer-to-peer bandwidth of each GPU"),
           bandwidth_key("host", "10GB/s", "GPU <-> host memory bandwidth"),
           size_key("host_memory", "488GiB", "host (CPU) memory of the node")},
          {k80_die.source, "12 GB per GPU, 8 per machine: Tofu (EuroSys'19) evaluation setup",
           "PCIe P2P 21 GB/s, CPU<->GPU 10 GB/s: Tofu evaluation setup (21 GB/s exceeds one "
           "direction of PCIe gen3 x16, so it is likely Tofu's both-ways figure; cleave applies "
           "it per direction as stated; override with p2p=)",
           "one PCIe switch vertex joining all 8 GPUs: the paper gives one P2P figure, no tree",
           "host memory 488 GiB: AWS EC2 p2.8xlarge instance specification", gpu_memory_note,
           latency_source},
          [](ClusterBuilder& b, PresetArgs const& a) {
            build_switched(b, {&k80_die, 1, 8, a.bytes("memory"), a.bytes("host_memory"),
                               SwitchKind::pcie_switch, LinkKind::pcie, a.bandwidth("p2p"),
                               Seconds(pcie_latency), a.bandwidth("host")});
          }};
}

PresetDef v100x1() {
  return {"v100x1",
          "SwapAdvisor's machine: one V100 16 GB, PCIe to host memory",
          {size_key("memory", "16GiB", "GPU memory"),
           bandwidth_key("host", "12GB/s", "GPU <-> host memory bandwidth"),
           size_key("host_memory", "256GiB", "host (CPU) memory")},
          {v100.source, "V100 16 GB: SwapAdvisor (ASPLOS'20) evaluation setup",
           "PCIe 12 GB/s one way: SwapAdvisor evaluation setup (it measured 20 GB/s both ways at "
           "once; cleave's directions are independent, so both ways at once here gives 24)",
           "host memory 256 GiB: nominal, not in PAPERS.md; enough for SwapAdvisor's largest "
           "model (193 GB)",
           gpu_memory_note, latency_source},
          [](ClusterBuilder& b, PresetArgs const& a) {
            NodeId node = b.add_node("node0", a.bytes("host_memory"));
            DeviceId d = b.add_device(make_device(v100, "gpu0", node, a.bytes("memory")));
            b.add_host_link(d, a.bandwidth("host"), Seconds(pcie_latency));
          }};
}

PresetDef p100_4x4() {
  return {"p100-4x4",
          "FlexFlow's P100 cluster: nodes of 4 P100 on NVLink, EDR InfiniBand between nodes",
          {count_key("nodes", 4, "number of nodes", 256),
           count_key("gpus_per_node", 4, "P100s per node (each has 4 NVLinks)", 4),
           size_key("memory", "16GiB", "memory per GPU"),
           bandwidth_key("nvlink", "20GB/s", "NVLink bandwidth between two GPUs of a node"),
           bandwidth_key("pcie", "12GB/s", "PCIe bandwidth GPU <-> node switch and NIC <-> switch"),
           bandwidth_key("network", "100Gb/s", "InfiniBand bandwidth of each node's NIC"),
           bandwidth_key("host", "12GB/s", "GPU <-> host memory bandwidth"),
           size_key("host_memory", "256GiB", "host (CPU) memory per node")},
          {p100.source,
           "4 nodes x 4 P100, NVLink in node, 100 Gb/s EDR InfiniBand between nodes: FlexFlow "
           "(SysML'19) evaluation setup",
           "NVLink 20 GB/s per direction: one NVLink 1.0 link (P100 has 4 x 20 GB/s per "
           "direction); modelled as a full mesh, one link per GPU pair",
           "PCIe 12 GB/s per direction: PCIe gen3 x16 effective rate (of 15.75 GB/s raw); the "
           "node's PCIe switch joins its GPUs, its host links and its NIC",
           "host memory 256 GiB: nominal, not in PAPERS.md", gpu_memory_note, latency_source},
          [](ClusterBuilder& b, PresetArgs const& a) {
            std::int64_t nodes = a.integer("nodes"), per = a.integer("gpus_per_node");
            build_switched(b, {&p100, nodes, per, a.bytes("memory"), a.bytes("host_memory"),
                               SwitchKind::pcie_switch, LinkKind::pcie, a.bandwidth("pcie"),
                               Seconds(pcie_latency), a.bandwidth("host"), false,
                               LinkKind::infiniband, a.bandwidth("network"), a.bandwidth("pcie")});
            // NVLink full mesh inside each node, added after the switched parts so that link ids
            // of the common structure do not depend on gpus_per_node.
            for (std::int64_t n = 0; n < nodes; ++n)
              for (std::int64_t i = 0; i < per; ++i)
                for (std::int64_t j = i + 1; j < per; ++j)
                  b.add_link(LinkKind::nvlink, DeviceId(static_cast<std::uint32_t>(n * per + i)),
                             DeviceId(static_cast<std::uint32_t>(n * per + j)),
                             a.bandwidth("nvlink"), Seconds(nvlink_latency));
          }};
}

PresetDef k80_16x4() {
  return {"k80-16x4",
          "FlexFlow's K80 cluster: nodes of 4 K80 GPUs on a PCIe switch, 56 Gb/s between nodes",
          {count_key("nodes", 16, "number of nodes", 256),
           count_key("gpus_per_node", 4, "K80 GPUs (dies) per node", 16),
           size_key("memory", "12GiB", "memory per GPU"),
           bandwidth_key("pcie", "12GB/s", "PCIe bandwidth GPU <-> node switch and NIC <-> switch"),
           bandwidth_key("network", "56Gb/s", "network bandwidth of each node's NIC"),
           bandwidth_key("host", "10GB/s", "GPU <-> host memory bandwidth"),
           size_key("host_memory", "256GiB", "host (CPU) memory per node")},
          {k80_die.source,
           "16 nodes x 4 K80 on PCIe switches, 56 Gb/s between nodes: FlexFlow (SysML'19) "
           "evaluation setup; 64 GPUs in all, so each 'K80 GPU' is one GK210 die",
           "network kind infiniband: 56 Gb/s is the FDR InfiniBand rate (the paper gives only "
           "the rate)",
           "PCIe 12 GB/s per direction: PCIe gen3 x16 effective rate (of 15.75 GB/s raw)",
           "host 10 GB/s: Tofu's CPU<->GPU figure for K80s, reused (FlexFlow gives none)",
           "host memory 256 GiB: nominal, not in PAPERS.md", gpu_memory_note, latency_source},
          [](ClusterBuilder& b, PresetArgs const& a) {
            build_switched(b, {&k80_die, a.integer("nodes"), a.integer("gpus_per_node"),
                               a.bytes("memory"), a.bytes("host_memory"), SwitchKind::pcie_switch,
                               LinkKind::pcie, a.bandwidth("pcie"), Seconds(pcie_latency),
                               a.bandwidth("host"), false, LinkKind::infiniband,
                               a.bandwidth("network"), a.bandwidth("pcie")});
          }};
}

PresetDef dgx2() {
  return {"dgx2",
          "ParDNN's machine: NVIDIA DGX-2, 16 V100 32 GB over NVSwitch",
          {size_key("memory", "32GiB", "memory per GPU"),
           bandwidth_key("nvswitch", "150GB/s", "NVSwitch bandwidth of each GPU"),
           {"latency", KeyKind::duration, "25us",
            "latency of one GPU -> NVSwitch -> GPU transfer (half on each link)"},
           bandwidth_key("host", "12GB/s", "GPU <-> host memory bandwidth"),
           size_key("host_memory", "1536GiB", "host (CPU) memory")},
          {v100_32.source, "16 x V100 32 GB over NVSwitch: ParDNN evaluation setup",
           "NVSwitch 150 GB/s per direction per GPU: 6 NVLink 2.0 links x 25 GB/s (NVIDIA DGX-2 "
           "datasheet: 300 GB/s bidirectional per GPU); the 12 NVSwitches form one non-blocking "
           "switch vertex",
           "latency 25 us per transfer: ParDNN's code (ceil(bytes / rate) + 25 us), 12.5 us on "
           "each of the 2 links",
           "host 12 GB/s: PCIe gen3 x16 effective rate",
           "host memory 1.5 TB: NVIDIA DGX-2 datasheet", gpu_memory_note,
           "host link latency 2 us: nominal, as for the other presets"},
          [](ClusterBuilder& b, PresetArgs const& a) {
            build_switched(b, {&v100_32, 1, 16, a.bytes("memory"), a.bytes("host_memory"),
                               SwitchKind::nvswitch, LinkKind::nvswitch, a.bandwidth("nvswitch"),
                               Seconds(a.seconds("latency").value() / 2), a.bandwidth("host")});
          }};
}

// A DGX A100 of either part: the 80 GB one (DGX A100 640 GB) or the 40 GB one (320 GB).
PresetDef dgx_a100_of(char const* name, Gpu const& gpu, char const* memory) {
  bool big = std::string(memory) == "80GiB";
  return {name,
          big ? "NVIDIA DGX A100: 8 A100 80 GB, NVLink 3 through NVSwitch"
              : "NVIDIA DGX A100 (320 GB): 8 A100 40 GB, NVLink 3 through NVSwitch",
          {size_key("memory", memory, "memory per GPU"),
           bandwidth_key("nvswitch", "300GB/s", "NVSwitch bandwidth of each GPU"),
           bandwidth_key("host", "25GB/s", "GPU <-> host memory bandwidth"),
           size_key("host_memory", big ? "2048GiB" : "1024GiB", "host (CPU) memory")},
          {gpu.source,
           "NVSwitch 300 GB/s per direction per GPU: 12 NVLink 3.0 links x 25 GB/s (NVIDIA A100 "
           "datasheet: 600 GB/s bidirectional); the 6 NVSwitches form one switch vertex",
           "host 25 GB/s: PCIe gen4 x16 effective rate",
           big ? "host memory 2 TB: NVIDIA DGX A100 (640 GB) datasheet"
               : "host memory 1 TB: NVIDIA DGX A100 (320 GB) datasheet",
           gpu_memory_note, latency_source},
          [g = &gpu](ClusterBuilder& b, PresetArgs const& a) {
            build_switched(b, {g, 1, 8, a.bytes("memory"), a.bytes("host_memory"),
                               SwitchKind::nvswitch, LinkKind::nvswitch, a.bandwidth("nvswitch"),
                               Seconds(nvlink_latency), a.bandwidth("host")});
          }};
}

PresetDef dgx_a100() {
  return dgx_a100_of("dgx-a100", a100, "80GiB");
}
PresetDef dgx_a100_40gb() {
  return dgx_a100_of("dgx-a100-40gb", a100_40, "40GiB");
}

PresetDef h100_2x8() {
  return {"h100-2x8",
          "two 8x H100 SXM nodes (DGX H100) over NDR InfiniBand, one NIC per GPU",
          {count_key("nodes", 2, "number of nodes", 128),
           count_key("gpus_per_node", 8, "H100s per node", 8),
           size_key("memory", "80GiB", "memory per GPU"),
           bandwidth_key("nvswitch", "450GB/s", "NVSwitch bandwidth of each GPU"),
           bandwidth_key("network", "400Gb/s", "InfiniBand bandwidth of each GPU's NIC"),
           bandwidth_key("pcie", "50GB/s", "PCIe bandwidth GPU <-> its NIC"),
           bandwidth_key("host", "50GB/s", "GPU <-> host memory bandwidth"),
           size_key("host_memory", "2048GiB", "host (CPU) memory per node")},
          {h100.source,
           "NVSwitch 450 GB/s per direction per GPU: 18 NVLink 4.0 links (NVIDIA H100 datasheet: "
           "900 GB/s bidirectional); the 4 NVSwitches form one switch vertex",
           "8 x 400 Gb/s NDR InfiniBand per node, one ConnectX-7 NIC per GPU: NVIDIA DGX H100 "
           "datasheet; the InfiniBand fabric is one non-blocking network switch vertex",
           "PCIe 50 GB/s per direction (GPU <-> NIC, GPU <-> host): PCIe gen5 x16 effective "
           "rate",
           "host memory 2 TB: NVIDIA DGX H100 datasheet", gpu_memory_note, latency_source},
          [](ClusterBuilder& b, PresetArgs const& a) {
            build_switched(b, {&h100, a.integer("nodes"), a.integer("gpus_per_node"),
                               a.bytes("memory"), a.bytes("host_memory"), SwitchKind::nvswitch,
                               LinkKind::nvswitch, a.bandwidth("nvswitch"), Seconds(nvlink_latency),
                               a.bandwidth("host"), true, LinkKind::infiniband,
                               a.bandwidth("network"), a.bandwidth("pcie")});
          }};
}

PresetDef cpu() {
  return {"cpu",
          "this machine's CPU cores as devices, sharing memory (nominal rates until calibrated)",
          {count_key("devices", 2, "number of cores used as devices", max_devices),
           size_key("memory", "4GiB", "memory cap of each device"),
           {"peak", KeyKind::flops_rate, "50GFLOP/s", "fp32 peak of each device"},
           {"memory_bandwidth", KeyKind::bandwidth, "10GB/s", "memory bandwidth of each device"},
           bandwidth_key("link", "10GB/s", "copy bandwidth between a device and shared memory"),
           {"latency", KeyKind::duration, "1us",
            "latency of each hop of a copy between devices (a transfer crosses two)"},
           size_key("host_memory", "16GiB", "host memory that swapping may use")},
          {"peak 50 GFLOP/s fp32, memory bandwidth 10 GB/s, link 10 GB/s and 1 us per hop: "
           "nominal placeholders; `cleave calibrate` measures them on this machine",
           "link = shared memory: each core has one host link to the node's memory, so a "
           "transfer between cores is a copy through it (2 hops)",
           "memory 4 GiB per device and host memory 16 GiB: nominal caps"},
          [](ClusterBuilder& b, PresetArgs const& a) {
            NodeId node = b.add_node("node0", a.bytes("host_memory"));
            for (std::int64_t k = 0; k < a.integer("devices"); ++k) {
              Device d;
              d.name = "cpu" + std::to_string(k);
              d.kind = "cpu-core";
              d.node = node;
              d.memory = a.bytes("memory");
              d.peak[ir::DType::fp32] = a.flops_rate("peak");
              d.memory_bandwidth = a.bandwidth("memory_bandwidth");
              b.add_host_link(b.add_device(std::move(d)), a.bandwidth("link"),
                              a.seconds("latency"));
            }
          }};
}

}  // namespace

void add_builtin_presets(PresetRegistry& registry) {
  for (PresetDef (*make)() :
       {k80x8, v100x1, p100_4x4, k80_16x4, dgx2, dgx_a100, dgx_a100_40gb, h100_2x8, cpu}) {
    auto st = registry.add(make());
    CLEAVE_ASSERT(st.is_ok(), "built-in preset names are distinct");
  }
}

}  // namespace cleave::cluster
