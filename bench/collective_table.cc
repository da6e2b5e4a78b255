// Collectives beside nccl-tests (issue 4): cost::collective_cost's time and bus bandwidth for
// all-reduce, all-gather and reduce-scatter at several sizes on the presets, and the published
// bus bandwidth for the same hardware where one was found, with the ratio. Prints Markdown;
// bench/run.sh writes it to bench/results/collectives.md and docs/cost_model.md explains it.
#include <cstdio>
#include <string>
#include <vector>

#include "cluster/presets.h"
#include "cost/collective.h"

namespace {

using namespace cleave;
using cost::CollectiveKind;

// A published peak bus bandwidth (large buffers) and where it comes from.
struct Published {
  char const* cluster;
  std::size_t members;
  CollectiveKind kind;
  double bus_gb_s;
  char const* source;
};

// [1] NCCL maintainer, NVIDIA/nccl-tests#149: A100 NVLink ~20 of 25 GB/s per link effective,
//     12 links ~240 GB/s, "other bottlenecks limit it to ~230GB/s" (all_reduce_perf up to 8 GB).
// [2] NCCL maintainer, NVIDIA/nccl-tests#212: H100 NVLink 450 GB/s line rate, ~370 GB/s effective
//     "BusBw when running non-allreduce operations, or when running with NCCL_ALGO=RING"; the
//     default all-reduce uses NVLink SHARP and peaks at ~480 GB/s busbw on 8 GPUs.
// [3] NCCL maintainer, NVIDIA/nccl-tests#290: NDR 400 Gb/s "you should see 46-48GB/s per NIC";
//     DGX H100 has 8 NICs per node, so a two-node ring over all of them is NIC-bound near
//     8 x 47 = 376 GB/s (and NVLink-bound at ~370).
std::vector<Published> const published = {
    {"dgx-a100", 8, CollectiveKind::all_reduce, 230, "[1]"},
    {"h100-2x8", 8, CollectiveKind::all_reduce, 370, "[2] ring"},
    {"h100-2x8", 8, CollectiveKind::all_gather, 370, "[2]"},
    {"h100-2x8", 8, CollectiveKind::reduce_scatter, 370, "[2]"},
    {"h100-2x8", 16, CollectiveKind::all_reduce, 370, "[3] ring"},
};

struct Setup {
  char const* cluster;
  std::size_t members;
};

std::string size_text(std::int64_t bytes) {
  constexpr std::int64_t mib = std::int64_t{1} << 20;
  return bytes >= 1024 * mib ? std::to_string(bytes / (1024 * mib)) + " GiB"
                             : std::to_string(bytes / mib) + " MiB";
}

}  // namespace

int main() {
  std::vector<Setup> const setups = {
      {"dgx-a100", 8}, {"dgx2", 16}, {"h100-2x8", 8}, {"h100-2x8", 16}, {"p100-4x4", 16}};
  std::vector<std::int64_t> const sizes = {std::int64_t{1} << 20, std::int64_t{32} << 20,
                                           std::int64_t{1} << 30, std::int64_t{8} << 30};
  std::printf("| cluster | GPUs | collective | size | algorithm | time (us) | bus bandwidth (GB/s) "
              "| published busbw (GB/s) | predicted/published |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  for (auto const& s : setups) {
    auto cluster = cluster::load_cluster(s.cluster);
    if (!cluster) {
      std::fprintf(stderr, "%s\n", cluster.error().to_string().c_str());
      return 1;
    }
    std::vector<cluster::DeviceId> group;
    for (std::size_t i = 0; i < s.members; ++i)
      group.push_back(cluster::DeviceId(static_cast<cluster::DeviceId::value_type>(i)));
    for (auto kind :
         {CollectiveKind::all_reduce, CollectiveKind::all_gather, CollectiveKind::reduce_scatter})
      for (auto bytes : sizes) {
        auto c = cost::collective_cost(*cluster, kind, Bytes(bytes), group);
        double bus = cost::bus_bandwidth(kind, Bytes(bytes), s.members, c.time).value() / 1e9;
        std::string theirs = "", ratio = "";
        // Published figures are peaks, reached at the largest sizes only.
        for (auto const& p : published)
          if (bytes == sizes.back() && p.cluster == std::string(s.cluster) &&
              p.members == s.members && p.kind == kind) {
            char buf[64];
            std::snprintf(buf, sizeof buf, "%.0f %s", p.bus_gb_s, p.source);
            theirs = buf;
            std::snprintf(buf, sizeof buf, "%.2f", bus / p.bus_gb_s);
            ratio = buf;
          }
        std::printf("| %s | %zu | %s | %s | %s | %.1f | %.1f | %s | %s |\n", s.cluster, s.members,
                    std::string(cost::collective_kind_name(kind)).c_str(), size_text(bytes).c_str(),
                    std::string(cost::collective_algorithm_name(c.algorithm)).c_str(),
                    c.time.value() * 1e6, bus, theirs.c_str(), ratio.c_str());
      }
  }
  std::printf("\n[1] NVIDIA/nccl-tests#149 (NCCL maintainer): ~230 GB/s all-reduce busbw on 8 "
              "A100 SXM4 over NVSwitch.\n"
              "[2] NVIDIA/nccl-tests#212 (NCCL maintainer): ~370 GB/s busbw on 8 H100 SXM for "
              "ring algorithms (all-gather, reduce-scatter, all-reduce with NCCL_ALGO=RING); "
              "~480 GB/s for all-reduce with NVLink SHARP, which cleave does not model.\n"
              "[3] NVIDIA/nccl-tests#290 (NCCL maintainer): 46-48 GB/s per 400 Gb/s NDR NIC; "
              "8 NICs per DGX H100 node, so ~370 GB/s on two nodes.\n");
  return 0;
}
