// One piece of one op run by the runtime outside any plan: filled input buffers of the regions the
// piece reads, an output buffer, and the kernel call (or the TDL interpreter where no kernel
// handles it). What calibration (runtime/calibrate.h), on-demand piece measurement
// (runtime/piece_timer.h) and the kernel benchmark (bench/runtime_kernels.cc) time, and the
// interpreter fallback the executor shares.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ops/op_registry.h"
#include "runtime/kernels/kernel.h"

namespace cleave::runtime {

// The TDL reference interpreter on one piece (the fallback where no kernel handles a call): the
// piece `iteration` of `bound`, reading `inputs` (call.inputs of the piece).
Expected<std::vector<float>> interpret_piece(ir::Graph const& graph, ir::Op const& op,
                                             tdl::BoundOp const& bound, tdl::PieceInfo const& info,
                                             tdl::Box const& iteration,
                                             std::vector<ConstBlock> const& inputs);

// A piece's buffers and call. The call points into the buffers and at `piece`: not copyable.
struct PieceRun {
  PieceRun() = default;
  PieceRun(PieceRun const&) = delete;
  PieceRun& operator=(PieceRun const&) = delete;

  tdl::PieceInfo piece;
  std::vector<std::vector<float>> inputs;  // uniform in [-1, 1), from the seed
  std::vector<float> output;
  KernelCall call;
  Kernel const* kernel = nullptr;  // the kernel `kernels` picks for the call; null: interpreted

  // Runs the piece once.
  Status run() const;
};

// The piece `box` of op `op` of `graph` (bound as `bound`, which must outlive the result), with
// buffers filled from `seed`.
Expected<std::unique_ptr<PieceRun>> piece_run(ir::Graph const& graph, ir::OpId op,
                                              tdl::BoundOp const& bound, tdl::Box const& box,
                                              KernelRegistry const& kernels, unsigned seed = 1);

struct WholeOp {
  explicit WholeOp(ir::Graph g) : graph(std::move(g)) {}
  ir::Graph graph;
  std::shared_ptr<tdl::BoundOp const> bound;
  std::unique_ptr<PieceRun> piece;

  // Runs the kernel once.
  Status run() const { return piece->run(); }
};

// A graph of just one op with inputs of the given shapes, run whole. An error when the op does not
// build or no kernel of `kernels` runs it whole.
Expected<std::unique_ptr<WholeOp>> whole_op(ops::OpRegistry const& registry,
                                            KernelRegistry const& kernels, std::string const& type,
                                            std::vector<ir::Shape> const& shapes,
                                            ir::Attrs attrs = {}, unsigned seed = 1);

}  // namespace cleave::runtime
