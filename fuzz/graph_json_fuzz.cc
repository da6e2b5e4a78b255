// libFuzzer target: cleave.graph/1 text through graph_from_json with the built-in ops' semantics,
// then what a loaded graph must allow: writing it back gives the same graph and text
// (graph_json.h), and every op binds and its whole iteration space is analysed (FLOPs and bytes
// with checked arithmetic). Seeds: written by `cleave export-graph` (scripts/fuzz_seeds.sh); the
// mutator is fuzz/json_mutator.h. Built with -DCLEAVE_FUZZ=ON and clang; scripts/fuzz.sh runs it.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/json_mutator.h"
#include "ir/graph_json.h"
#include "ops/op_registry.h"
#include "tdl/piece.h"

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  using namespace cleave;
  static auto const registry = ops::OpRegistry::with_builtins();
  auto graph =
      ir::graph_from_json(std::string_view(reinterpret_cast<char const*>(data), size), *registry);
  if (!graph) return 0;
  std::string const text = ir::graph_to_json(*graph);
  auto again = ir::graph_from_json(text, *registry);
  fuzz::require(again.has_value(), "a written graph loads");
  fuzz::require(*again == *graph && ir::graph_to_json(*again) == text, "the graph round-trips");
  for (std::size_t i = 0; i < graph->num_ops(); ++i) {
    auto bound = registry->bind(*graph, ir::OpId(static_cast<ir::OpId::value_type>(i)));
    if (bound) (void)tdl::analyze_piece(**bound, tdl::full_box(**bound));
  }
  return 0;
}
