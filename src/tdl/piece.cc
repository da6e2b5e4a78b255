#include "tdl/piece.h"

#include <algorithm>

#include "support/assert.h"
#include "support/checked.h"

namespace cleave::tdl {

std::int64_t box_volume(Box const& box) {
  std::int64_t v = 1;
  for (auto const& i : box)
    v *= i.size();
  return v;
}

Box intersect(Box const& a, Box const& b) {
  Box out(a.size());
  for (std::size_t d = 0; d < a.size(); ++d)
    out[d] = {std::max(a[d].lo, b[d].lo), std::min(a[d].hi, b[d].hi)};
  return out;
}

std::string box_to_string(Box const& box) {
  if (box.empty()) return "[]";
  std::string out;
  for (std::size_t d = 0; d < box.size(); ++d) {
    if (d) out += "x";
    out += "[" + std::to_string(box[d].lo) + "," + std::to_string(box[d].hi) + ")";
  }
  return out;
}

Box full_box(BoundOp const& op) {
  Box box;
  for (auto const& d : op.dims())
    box.push_back({0, d.extent});
  return box;
}

Box whole_box(ir::Shape const& shape) {
  Box box;
  for (auto d : shape)
    box.push_back({0, d});
  return box;
}

std::vector<Box> split_evenly(Box const& box, int dim, std::int64_t parts) {
  CLEAVE_ASSERT(dim >= 0 && static_cast<std::size_t>(dim) < box.size(), "dim out of range");
  Interval whole = box[static_cast<std::size_t>(dim)];
  std::int64_t n = whole.size();
  std::vector<Box> out;
  std::int64_t lo = whole.lo;
  for (std::int64_t p = 0; p < parts; ++p) {
    std::int64_t len = n / parts + (p < n % parts ? 1 : 0);
    Box b = box;
    b[static_cast<std::size_t>(dim)] = {lo, lo + len};
    lo += len;
    out.push_back(std::move(b));
  }
  return out;
}

bool Region::empty() const {
  return std::any_of(box.begin(), box.end(), [](Interval i) { return i.empty(); });
}

bool Region::has_padding() const {
  for (std::size_t d = 0; d < box.size(); ++d)
    if (pad_lo[d] > 0 || pad_hi[d] > 0) return true;
  return false;
}

namespace {

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

IndexRange scale(IndexRange r, std::int64_t c) {
  if (c >= 0) return {r.min * c, r.max * c, r.known};
  return {r.max * c, r.min * c, r.known};
}

}  // namespace

IndexRange index_range(BoundIndex const& index, std::span<Interval const> ranges) {
  switch (index.kind) {
  case BoundIndex::Kind::gather:
    return {0, 0, false};
  case BoundIndex::Kind::floordiv: {
    IndexRange r = index_range(index.children[0], ranges);
    return {floor_div(r.min, index.divisor), floor_div(r.max, index.divisor), r.known};
  }
  case BoundIndex::Kind::mod: {
    IndexRange r = index_range(index.children[0], ranges);
    std::int64_t d = index.divisor;
    if (floor_div(r.min, d) == floor_div(r.max, d))
      return {r.min - floor_div(r.min, d) * d, r.max - floor_div(r.max, d) * d, r.known};
    return {0, d - 1, r.known};
  }
  case BoundIndex::Kind::linear: {
    IndexRange r{index.constant, index.constant, true};
    for (auto [slot, coef] : index.var_terms) {
      Interval i = ranges[static_cast<std::size_t>(slot)];
      IndexRange t = scale({i.lo, i.hi - 1, true}, coef);
      r = {r.min + t.min, r.max + t.max, r.known};
    }
    for (std::size_t c = 0; c < index.children.size(); ++c) {
      IndexRange t = scale(index_range(index.children[c], ranges), index.child_coefs[c]);
      r = {r.min + t.min, r.max + t.max, r.known && t.known};
    }
    return r;
  }
  }
  return {0, 0, false};
}

std::vector<Interval> slot_ranges(BoundOp const& op, Box const& iter_box) {
  std::vector<Interval> ranges(iter_box.begin(), iter_box.end());
  for (int s = static_cast<int>(iter_box.size()); s < op.num_slots(); ++s)
    ranges.push_back({0, op.slot_extent(s)});
  return ranges;
}

namespace {

std::uint64_t bit(int slot) {
  return std::uint64_t{1} << slot;
}

// Number of distinct evaluations of a node whose value depends on the slots in `deps`, the slots
// in `selected` counting once (a selector fixes them, below); nothing where it does not fit in
// int64.
std::optional<std::int64_t> evaluations(std::uint64_t deps, std::span<Interval const> ranges,
                                        std::uint64_t selected = 0) {
  std::optional<std::int64_t> n = 1;
  for (std::size_t s = 0; s < ranges.size() && n; ++s)
    if ((deps & ~selected) & bit(static_cast<int>(s))) n = checked_mul(*n, ranges[s].size());
  return n;
}

// Whether the value reads an integer input (a lookup: token ids, labels).
bool reads_integer(BoundExpr const& e, BoundOp const& op) {
  if (e.kind == BoundExpr::Kind::access &&
      !ir::is_floating(op.inputs()[static_cast<std::size_t>(e.input)].type.dtype))
    return true;
  return std::any_of(e.args.begin(), e.args.end(),
                     [&](BoundExpr const& a) { return reads_integer(a, op); });
}

// The slots a product selects: a factor `I[..] == v` (or `v == I[..]`), I an integer input read
// without v, is nonzero for at most one value of v per evaluation of the rest, so the product (and
// a reduction folding it) is work only there: a scatter written as a one-hot contraction
// (embedding_grad's `sum(s) (I[s] == v) * dY[s,h]`) costs the scatter-add's positions x width,
// not vocabulary x positions x width. Only products select: `(c == T[b])` elsewhere (added,
// subtracted) is a value at every c.
std::uint64_t selected_slots(BoundExpr const& e, BoundOp const& op) {
  if (e.kind != BoundExpr::Kind::binary) return 0;
  if (e.op == "*") return selected_slots(e.args[0], op) | selected_slots(e.args[1], op);
  if (e.op != "==") return 0;
  for (int side = 0; side < 2; ++side) {
    auto const& v = e.args[static_cast<std::size_t>(side)];
    auto const& lookup = e.args[static_cast<std::size_t>(1 - side)];
    if (v.kind == BoundExpr::Kind::var && !(lookup.deps & bit(v.slot)) && reads_integer(lookup, op))
      return bit(v.slot);
  }
  return 0;
}

std::uint64_t product_selection(BoundExpr const& e, BoundOp const& op) {
  return e.kind == BoundExpr::Kind::binary && e.op == "*" ? selected_slots(e, op) : 0;
}

// FLOPs: every arithmetic node costs one per distinct evaluation (a value that does not depend
// on a variable is computed once, not once per value of that variable), and a reduction costs one
// combine per element it folds; inside a selecting product, and in a reduction of one, the
// selected slots count once. Nothing where the count does not fit in int64.
std::optional<std::int64_t> count_flops(BoundExpr const& e, BoundOp const& op,
                                        std::span<Interval const> ranges, std::uint64_t selected) {
  std::optional<std::int64_t> own = 0;
  switch (e.kind) {
  case BoundExpr::Kind::constant:
  case BoundExpr::Kind::var:
  case BoundExpr::Kind::access:
    break;
  case BoundExpr::Kind::neg:
  case BoundExpr::Kind::call:
    own = evaluations(e.deps, ranges, selected);
    break;
  case BoundExpr::Kind::binary:
    selected |= product_selection(e, op);
    own = evaluations(e.deps, ranges, selected);
    break;
  case BoundExpr::Kind::reduce: {
    std::uint64_t folded = e.deps;
    for (int s : e.slots)
      folded |= bit(s);
    own = evaluations(folded, ranges, selected | product_selection(e.args[0], op));
    break;
  }
  }
  for (auto const& a : e.args) {
    auto sub = own ? count_flops(a, op, ranges, selected) : std::nullopt;
    own = sub ? checked_add(*own, *sub) : std::nullopt;
  }
  return own;
}

// The slots an index depends on.
std::uint64_t index_slots(BoundIndex const& index) {
  std::uint64_t slots = 0;
  for (auto [slot, coef] : index.var_terms)
    slots |= bit(slot);
  for (auto const& child : index.children)
    slots |= index_slots(child);
  return slots;
}

bool has_gather(BoundIndex const& index) {
  return index.kind == BoundIndex::Kind::gather ||
         std::any_of(index.children.begin(), index.children.end(), has_gather);
}

// Elements a piece reads of an input that it reads only through gathers (`W[I[s],h]`): its
// region spans each gathered dimension whole (which rows depend on data), but each access reads
// at most one element per distinct evaluation of its indices (a row per position for an
// embedding); nothing where the input has an access without a gather, whose region is what it
// reads.
std::optional<std::int64_t>
gathered_elements(std::vector<std::vector<BoundIndex> const*> const& reads,
                  std::span<Interval const> ranges) {
  std::int64_t total = 0;
  for (auto const* access : reads) {
    std::uint64_t slots = 0;
    bool gathers = false;
    for (auto const& index : *access) {
      slots |= index_slots(index);
      gathers = gathers || has_gather(index);
    }
    if (!gathers) return std::nullopt;
    auto n = evaluations(slots, ranges);
    auto sum = n ? checked_add(total, *n) : std::nullopt;
    if (!sum) return std::nullopt;
    total = *sum;
  }
  return total;
}

// Volume of a box, or nothing where it does not fit in int64.
std::optional<std::int64_t> checked_volume(Box const& box) {
  std::optional<std::int64_t> v = 1;
  for (std::size_t d = 0; d < box.size() && v; ++d)
    v = checked_mul(*v, box[d].size());
  return v;
}

// bytes = elements * dtype size, or nothing where it does not fit.
std::optional<std::int64_t> checked_bytes(Box const& box, ir::DType dtype) {
  auto v = checked_volume(box);
  return v ? checked_mul(*v, ir::dtype_bytes(dtype)) : std::nullopt;
}

Error too_large(BoundOp const& op, Box const& iter_box, std::string const& quantity) {
  return Error(ErrorCode::invalid_argument,
               "the " + quantity + " of '" + op.text() + "' over " + box_to_string(iter_box) +
                   " overflow 64-bit counts: the op's shapes are too large to price; use "
                   "smaller dimensions");
}

}  // namespace

Expected<PieceInfo> analyze_piece(BoundOp const& op, Box const& iter_box) {
  auto const& dims = op.dims();
  if (iter_box.size() != dims.size()) {
    return Error(ErrorCode::invalid_argument,
                 "a piece of '" + op.text() + "' needs one interval per iteration dimension (" +
                     std::to_string(dims.size()) + "), got " + std::to_string(iter_box.size()));
  }
  for (std::size_t d = 0; d < dims.size(); ++d) {
    if (iter_box[d].lo < 0 || iter_box[d].hi > dims[d].extent || iter_box[d].empty()) {
      return Error(ErrorCode::invalid_argument, "piece " + box_to_string(iter_box) +
                                                    " is empty or outside the iteration space (" +
                                                    dims[d].name + " ranges over [0," +
                                                    std::to_string(dims[d].extent) + "))");
    }
  }
  PieceInfo info;
  info.iter_box = iter_box;
  std::vector<Interval> ranges = slot_ranges(op, iter_box);

  std::optional<std::int64_t> read = 0;
  for (std::size_t i = 0; i < op.inputs().size(); ++i) {
    ir::Shape const& shape = op.inputs()[i].type.shape;
    std::size_t rank = shape.size();
    Region region;
    region.pad_lo.assign(rank, 0);
    region.pad_hi.assign(rank, 0);
    bool any = false;
    Box hull(rank);
    for (auto const* access : op.accesses()[i]) {
      Box unclipped(rank);
      bool reads = true;
      for (std::size_t d = 0; d < rank; ++d) {
        IndexRange r = index_range((*access)[d], ranges);
        unclipped[d] = r.known ? Interval{r.min, r.max + 1} : Interval{0, shape[d]};
        if (std::max<std::int64_t>(unclipped[d].lo, 0) >= std::min(unclipped[d].hi, shape[d]))
          reads = false;
      }
      if (!reads) continue;
      for (std::size_t d = 0; d < rank; ++d) {
        hull[d] = any ? Interval{std::min(hull[d].lo, unclipped[d].lo),
                                 std::max(hull[d].hi, unclipped[d].hi)}
                      : unclipped[d];
      }
      any = true;
    }
    region.box.assign(rank, Interval{0, 0});
    if (any) {
      for (std::size_t d = 0; d < rank; ++d) {
        region.box[d] = {std::max<std::int64_t>(hull[d].lo, 0), std::min(hull[d].hi, shape[d])};
        region.pad_lo[d] = std::max<std::int64_t>(0, -hull[d].lo);
        region.pad_hi[d] = std::max<std::int64_t>(0, hull[d].hi - shape[d]);
      }
      auto elements = checked_volume(region.box);
      if (auto gathered = gathered_elements(op.accesses()[i], ranges); gathered && elements)
        elements = std::min(*elements, *gathered);
      auto bytes = elements ? checked_mul(*elements, ir::dtype_bytes(op.inputs()[i].type.dtype))
                            : std::nullopt;
      read = read && bytes ? checked_add(*read, *bytes) : std::nullopt;
    }
    info.inputs.push_back(std::move(region));
  }

  if (!read) return too_large(op, iter_box, "bytes read");
  auto points = checked_volume(iter_box);
  if (!points) return too_large(op, iter_box, "iteration points");
  std::int64_t parallel_points = 1;  // at most `points`
  for (int d = 0; d < op.num_parallel(); ++d)
    parallel_points *= iter_box[static_cast<std::size_t>(d)].size();
  for (auto const& index : op.output_indices()) {
    IndexRange r = index_range(index, ranges);
    info.output.push_back({r.min, r.max + 1});
  }
  // The output map is one-to-one (checked by bind), so the piece writes a box exactly when the
  // bounding box holds no more elements than the piece has points.
  info.output_exact = box_volume(info.output) == parallel_points;

  info.reducer = op.reducer();
  for (std::size_t d = static_cast<std::size_t>(op.num_parallel()); d < dims.size(); ++d)
    if (iter_box[d].size() != dims[d].extent) info.partial = true;
  if (!info.partial) info.reducer = Reducer::none;

  std::optional<std::int64_t> flops = 0;
  if (!op.opaque()) {
    flops = count_flops(op.body(), op, ranges, 0);
    if (flops && op.reducer() != Reducer::none) {
      // Top-level combines: one per point, the body's selected slots counting once.
      std::uint64_t space = 0;
      for (std::size_t d = 0; d < dims.size(); ++d)
        space |= bit(static_cast<int>(d));
      auto combines = evaluations(space, ranges, product_selection(op.body(), op));
      flops = combines ? checked_add(*flops, *combines) : std::nullopt;
    }
  }
  if (!flops) return too_large(op, iter_box, "FLOPs");
  auto written = checked_bytes(info.output, op.output_type().dtype);
  if (!written) return too_large(op, iter_box, "bytes written");
  info.flops = Flops(*flops);
  info.bytes_read = Bytes(*read);
  info.bytes_written = Bytes(*written);
  return info;
}

}  // namespace cleave::tdl
