// libFuzzer target: cleave.plan/2 (and /1) text through plan_from_json, the documented round trip
// (a loaded plan written and read back is the same text), then, so that validation and the
// lowering see hostile plans, the plan validated against a small fixed graph (fuzz/plan_graph.json,
// `cleave export-graph mlp:layers=1,hidden=8,input=8,classes=4,batch=4`; the plan's fingerprint is
// replaced by the graph's, else nearly every input would stop there) and, when valid, lowered.
// Seeds: `cleave plan` of that graph by each algorithm (scripts/fuzz_seeds.sh); the mutator is
// fuzz/json_mutator.h. Built with -DCLEAVE_FUZZ=ON and clang; scripts/fuzz.sh runs it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "cluster/cluster.h"
#include "fuzz/json_mutator.h"
#include "ir/graph_json.h"
#include "lower/program.h"
#include "plan/plan.h"
#include "plan/plan_json.h"

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  using namespace cleave;
  static auto const registry = ops::OpRegistry::with_builtins();
  static ir::Graph const graph = [] {
    auto g = ir::load_graph(CLEAVE_FUZZ_PLAN_GRAPH, *registry);
    if (!g) std::abort();
    return std::move(*g);
  }();
  static std::string const fingerprint = ir::graph_fingerprint(graph);

  auto plan = fuzz::read_and_round_trip(data, size, plan::plan_from_json, plan::plan_to_json,
                                        "a written plan reads back the same");
  if (!plan) return 0;

  plan->graph_fingerprint = fingerprint;
  if (!plan::validate(*plan, graph, *registry)) return 0;
  // The CLI and the API lower a plan only on a cluster with as many devices, and a cluster has at
  // most cluster::max_devices; a plan of 2^31 devices spent minutes in per-device tables here.
  if (static_cast<std::size_t>(plan->num_devices) > cluster::max_devices) return 0;
  (void)lower::lower(graph, *plan, *registry);
  return 0;
}
