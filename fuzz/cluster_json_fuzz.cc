// libFuzzer target: cleave.cluster/1 text through cluster_from_json (and so Cluster::create's
// checks and route computation), then the documented round trip: writing a loaded cluster and
// reading it back gives byte-identical text and the same fingerprint (cluster_json.h). Seeds:
// written by `cleave clusters --export` (scripts/fuzz_seeds.sh); the mutator is
// fuzz/json_mutator.h. Built with -DCLEAVE_FUZZ=ON and clang; scripts/fuzz.sh runs it.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "cluster/cluster_json.h"
#include "fuzz/json_mutator.h"

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  using namespace cleave;
  auto cluster =
      cluster::cluster_from_json(std::string_view(reinterpret_cast<char const*>(data), size));
  if (!cluster) return 0;
  std::string const text = cluster::cluster_to_json(*cluster);
  auto again = cluster::cluster_from_json(text);
  fuzz::require(again.has_value(), "a written cluster loads");
  fuzz::require(cluster::cluster_to_json(*again) == text, "the cluster round-trips");
  fuzz::require(cluster::fingerprint(*again) == cluster::fingerprint(*cluster),
                "the fingerprint survives the round trip");
  return 0;
}
