// The versioned JSON form of a graph, "cleave.graph/1" (docs/formats.md). Round-trips exactly:
// graph_from_json(graph_to_json(g)) == g, and writing the result again gives the same text.
#pragma once

#include <string>
#include <string_view>

#include "ir/graph.h"
#include "support/progress_line.h"

namespace cleave::ir {

inline constexpr std::string_view graph_format = "cleave.graph/1";

std::string graph_to_json(Graph const& graph);
// Errors say what is wrong and where (byte offset for syntax, the tensor or op for content).
// `progress`, if given, is told each op read and when the graph is checked.
Expected<Graph> graph_from_json(std::string_view text, ShapeInference const& semantics,
                                WorkProgressFn const& progress = {});

// A stable identity of the graph's content: FNV-1a 64 of its JSON, as 16 hex digits. Plans record
// it so that loading a plan against another graph is an error.
std::string graph_fingerprint(Graph const& graph);

Status save_graph(Graph const& graph, std::string const& path);  // atomic
Expected<Graph> load_graph(std::string const& path, ShapeInference const& semantics,
                           WorkProgressFn const& progress = {});

}  // namespace cleave::ir
