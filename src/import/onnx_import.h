// Importing ONNX models (opsets 13-17) as cleave forward graphs: parse and check with libonnx, run
// ONNX shape inference, fold constant shape computations, map each ONNX op to cleave ops
// (docs/import.md has the table), and end the graph in a scalar loss so that autodiff can build
// the training step. Everything the user can get wrong comes back as an Error; no exception
// escapes (protobuf and libonnx throw, and are caught here).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ir/graph.h"
#include "ops/op_registry.h"
#include "support/progress_line.h"

namespace cleave::importer {

struct ImportOptions {
  // ONNX ops cleave has no mapping for become `opaque` ops (splittable on the batch only) instead
  // of an error.
  bool allow_opaque = false;
  // The scalar ONNX tensor to minimise. Empty: cross-entropy of the last graph output against an
  // int64 "labels" input, as the zoo's models end ("loss").
  std::string loss;
  // Told each stage after parsing (checking, inferring shapes) and each node converted; none: no
  // progress.
  WorkProgressFn progress;
};

// What the import did, for `cleave import` and the tests.
struct ImportStats {
  std::int64_t opset = 0;
  std::string producer;           // "pytorch 1.13.0"
  std::int64_t onnx_nodes = 0;    // nodes in the file
  std::int64_t initializers = 0;  // initializers in the file
  std::int64_t folded = 0;        // nodes evaluated at import (constant shape computations)
  std::int64_t fused = 0;         // decomposed patterns recognised (GELU, layer norm)
  std::int64_t opaque = 0;        // ops imported as opaque
  std::int64_t weights = 0;       // weight tensors in the graph (by use, after deduplication)
  std::int64_t parameters = 0;    // their elements
  // Wall time of each stage, seconds.
  double parse_s = 0, check_s = 0, infer_s = 0, convert_s = 0;
};

struct ImportResult {
  ir::Graph forward;
  ImportStats stats;
  std::int64_t batch = 1;  // the first dimension of the first graph input
  std::string loss;        // the name of the scalar loss tensor in `forward`
};

// Reads an .onnx file. The weights' values are not kept: cleave needs only their shapes, so large
// initializers drop their bytes right after the checker has seen them.
Expected<ImportResult> import_onnx_file(std::string const& path, ops::OpRegistry const& registry,
                                        ImportOptions const& options = {});
// The same from bytes in memory (the fuzz target, tests).
Expected<ImportResult> import_onnx_bytes(std::string_view bytes, std::string const& label,
                                         ops::OpRegistry const& registry,
                                         ImportOptions const& options = {});

}  // namespace cleave::importer
