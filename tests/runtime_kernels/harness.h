// Running one piece of one op through a kernel and through the reference interpreter, on the same
// random inputs: what every runtime kernel test compares.
#pragma once

#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ops/op_registry.h"
#include "runtime/kernels/kernel.h"
#include "tdl/interpreter.h"

namespace cleave::runtime::testing {

// A one-op graph with whole random input tensors.
struct OpCase {
  ir::Graph graph;
  ir::Op const* op = nullptr;
  std::shared_ptr<tdl::BoundOp const> bound;
  std::vector<tdl::TensorData> inputs;  // whole tensors
};

struct InputFill {
  double lo = -1, hi = 1;
  std::int64_t int_hi = 0;  // > 0: integers in [0, int_hi)
};

Expected<OpCase> make_case(ops::OpRegistry const& registry, std::string const& type,
                           std::vector<ir::TensorType> const& inputs, ir::Attrs const& attrs,
                           std::vector<InputFill> const& fills, std::mt19937_64& rng);

// The outcome of one piece.
struct PieceResult {
  std::string kernel;    // empty: no kernel handles it
  double max_error = 0;  // relative to max(1, |reference|)
  std::string message;   // a kernel or interpreter error
};

// Runs `iter_box` of the case through the registry's kernel (if any) and the interpreter (fp64)
// and compares.
PieceResult run_piece(KernelRegistry const& registry, OpCase const& c, tdl::Box const& iter_box);

// Only the kernel's output for the piece (no reference), or an error; for repeated runs.
Expected<std::vector<float>> kernel_output(KernelRegistry const& registry, OpCase const& c,
                                           tdl::Box const& iter_box);

// The whole iteration space, a few random grids of it (cuts on splittable dims), at most `limit`
// pieces in all.
std::vector<tdl::Box> random_pieces(tdl::BoundOp const& op, std::mt19937_64& rng,
                                    std::size_t limit);

}  // namespace cleave::runtime::testing
