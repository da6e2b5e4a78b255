// Region analysis: for any box of a bound op's iteration space, what the piece reads from each
// input (with halos and the padding that clipping implies), what it writes, whether it yields a
// partial result that must be reduced, and its FLOPs and bytes (Tofu's interval analysis with
// concrete boxes, PAPERS.md §1).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "support/units.h"
#include "tdl/bound_op.h"

namespace cleave::tdl {

// Half-open [lo, hi).
struct Interval {
  std::int64_t lo = 0;
  std::int64_t hi = 0;

  std::int64_t size() const { return hi > lo ? hi - lo : 0; }
  bool empty() const { return hi <= lo; }
  bool operator==(Interval const&) const = default;
};

using Box = std::vector<Interval>;

std::int64_t box_volume(Box const& box);  // 0 if any interval is empty
// a ∩ b (same rank); empty intervals where they do not overlap.
Box intersect(Box const& a, Box const& b);
// "[0,32)x[0,16)"; "[]" for rank 0.
std::string box_to_string(Box const& box);
// The whole iteration space of op.
Box full_box(BoundOp const& op);
// The whole of a tensor of this shape.
Box whole_box(ir::Shape const& shape);
// `parts` nearly equal consecutive pieces of box along dim (the first ones one larger).
std::vector<Box> split_evenly(Box const& box, int dim, std::int64_t parts);

// A region of a tensor: the box inside its bounds that a piece reads, plus how far the unclipped
// read extends beyond each side (the padding the piece must supply).
struct Region {
  Box box;
  std::vector<std::int64_t> pad_lo;
  std::vector<std::int64_t> pad_hi;

  bool empty() const;  // the piece reads nothing of this tensor
  bool has_padding() const;
};

struct PieceInfo {
  Box iter_box;
  std::vector<Region> inputs;  // one per BoundOp input, in order
  Box output;                  // the output region written
  bool output_exact = true;    // false: the written elements do not form a box (not a valid piece)
  bool partial = false;        // true: output holds partial results to combine with `reducer`
  Reducer reducer = Reducer::none;
  Flops flops;
  Bytes bytes_read;     // all input regions
  Bytes bytes_written;  // the output region
};

// Errors when box does not have one interval per dimension inside the space, or is empty.
Expected<PieceInfo> analyze_piece(BoundOp const& op, Box const& iter_box);

// Inclusive range of an index over the given slot ranges (one per slot of op); `known` is false
// when it depends on gathered data.
struct IndexRange {
  std::int64_t min = 0;
  std::int64_t max = 0;
  bool known = true;
};
IndexRange index_range(BoundIndex const& index, std::span<Interval const> slot_ranges);

// The slot ranges of a piece: the box for iteration dims, the full extent for nested variables.
std::vector<Interval> slot_ranges(BoundOp const& op, Box const& iter_box);

}  // namespace cleave::tdl
