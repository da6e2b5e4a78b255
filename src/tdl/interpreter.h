// The reference interpreter: evaluates any piece of any bound op straight from its TDL definition
// with plain loops. Slow and obviously correct; the oracle for kernels, gradient rules and
// partitioned execution.
#pragma once

#include <span>
#include <vector>

#include "tdl/piece.h"

namespace cleave::tdl {

// A dense row-major buffer holding `region` of a tensor of shape `shape` (all of it when region is
// the full box). Values are doubles whatever the tensor's dtype; integers are exact.
struct TensorData {
  ir::Shape shape;
  Box region;
  std::vector<double> values;

  static TensorData zeros(ir::Shape shape, Box region);
  static TensorData whole(ir::Shape shape, std::vector<double> values);
  // Position of coords (tensor coordinates inside region) in values.
  std::size_t offset(std::span<std::int64_t const> coords) const;
};

struct EvalOptions {
  // true: every intermediate value and accumulator is a double. false: each is rounded to fp32,
  // as an fp32 kernel would compute.
  bool fp64 = true;
};

// Evaluates the piece `iter_box` of op. inputs[i] must hold at least the region analyze_piece
// reports for input i: a read outside it is an error, so a piece can only use what region
// analysis says it needs. Reads outside a tensor's bounds give its pad value. The result holds the
// piece's output region; a piece that does not cover a reduction dimension fully holds partial
// results, to be combined with reduce_into.
Expected<TensorData> evaluate(BoundOp const& op, Box const& iter_box,
                              std::span<TensorData const> inputs, EvalOptions options = {});

// Copies the part of `src` that lies in dst.region.
TensorData extract(TensorData const& src, Box const& region);
// dst[x] = src[x] for every x in src.region (which must lie inside dst.region).
void write_region(TensorData& dst, TensorData const& src);
// dst[x] = r(dst[x], src[x]) for every x in src.region: combines partial results.
void reduce_into(TensorData& dst, TensorData const& src, Reducer r);

}  // namespace cleave::tdl
