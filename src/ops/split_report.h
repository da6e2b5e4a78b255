// What `cleave op` shows: an op's iteration space, which dimensions can be split, and for each
// 2-way split of each dimension what each half reads and writes and whether a reduction is needed.
// This is how a user checks a custom op before planning with it.
#pragma once

#include <string>
#include <vector>

#include "tdl/piece.h"

namespace cleave::ops {

struct SplitOption {
  std::string dim;
  std::vector<tdl::PieceInfo> pieces;  // the two halves
};

struct SplitReport {
  std::string op;     // op type or "custom"
  std::string attrs;  // Attrs::to_string()
  std::shared_ptr<tdl::BoundOp const> bound;
  tdl::PieceInfo whole;
  std::vector<SplitOption> splits;  // one per splittable dimension
};

Expected<SplitReport> make_split_report(std::string op, std::string attrs,
                                        std::shared_ptr<tdl::BoundOp const> bound);

std::string to_text(SplitReport const& report);
// "cleave.op-report/1" JSON (docs/formats.md).
std::string to_json(SplitReport const& report);

// "7.08 MFLOP".
std::string format_flops(std::int64_t flops);

}  // namespace cleave::ops
