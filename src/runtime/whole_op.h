// One op run whole by a runtime kernel, outside any plan: a graph of just that op with inputs of
// the given shapes, its single piece, filled input buffers and an output buffer. What calibration
// (runtime/calibrate.h) and the kernel benchmark (bench/runtime_kernels.cc) time.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ops/op_registry.h"
#include "runtime/kernels/kernel.h"

namespace cleave::runtime {

struct WholeOp {
  explicit WholeOp(ir::Graph g) : graph(std::move(g)) {}
  ir::Graph graph;
  std::shared_ptr<tdl::BoundOp const> bound;
  tdl::PieceInfo piece;
  std::vector<std::vector<float>> inputs;  // uniform in [-1, 1), from the seed
  std::vector<float> output;
  KernelCall call;
  Kernel const* kernel = nullptr;  // the kernel `kernels` picks for the call

  // Runs the kernel once.
  Status run() const { return kernel->run(call); }
};

// An error when the op does not build or no kernel of `kernels` runs it whole.
Expected<std::unique_ptr<WholeOp>> whole_op(ops::OpRegistry const& registry,
                                            KernelRegistry const& kernels, std::string const& type,
                                            std::vector<ir::Shape> const& shapes,
                                            ir::Attrs attrs = {}, unsigned seed = 1);

}  // namespace cleave::runtime
