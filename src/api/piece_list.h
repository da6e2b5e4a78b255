// The distinct compute pieces that pricing a set of plans asks the cost model for (issue 24 item
// 4): each keyed exactly as a cleave.profile/1 entry is (op type, attribute text, the piece's
// extents, dtype, device kind), with what a timing script needs to run the piece elsewhere (the
// regions it reads with their padding and dtypes, the region it writes, the op's attributes) and
// what cleave predicts for it (the roofline's time, FLOPs, bytes, how often the plans price it).
// Ops the GPU model fuses into another op's kernel are priced before any measurer is asked
// (cost_model.h), so they are not listed.
// `cleave compare --list-pieces FILE` writes them as "cleave.pieces/1" (docs/formats.md);
// bench/gpu_pieces_torch.py times them with PyTorch on a GPU and writes a profile for --profile.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "cost/cost_model.h"
#include "ops/op_registry.h"

namespace cleave::api {

inline constexpr std::string_view pieces_format = "cleave.pieces/1";

// A region of a tensor that a piece reads or writes: its sizes, the padding the piece supplies
// before and after each dimension (reads only), and the tensor's dtype.
struct PieceRegion {
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> pad_lo;
  std::vector<std::int64_t> pad_hi;
  ir::DType dtype = ir::DType::fp32;
};

struct ListedPiece {
  cost::ProfileKey key;
  std::string example_op;  // the name of one op it is a piece of
  std::vector<PieceRegion> inputs;
  PieceRegion output;
  bool partial = false;  // its output is a partial sum that a reduce task combines
  Flops flops;
  Bytes bytes;
  Seconds roofline{0};    // the cost model's time for it as a kernel alone, without a measurement
  std::int64_t uses = 0;  // times pricing asked for it
};

// A PieceMeasurer that measures nothing: it notes each piece it is asked for and lets the
// roofline (`roofline`, which must not have this lister as its measurer) price it.
class PieceLister : public cost::PieceMeasurer {
 public:
  PieceLister(ops::OpRegistry const& registry, cost::CostModel const& roofline)
      : registry_(&registry), roofline_(&roofline) {}

  std::optional<cost::Measurement> measure(cost::ComputeRequest const& request,
                                           cost::ProfileKeyView const& key) override;

  // The pieces noted so far, in key order.
  std::vector<ListedPiece> pieces() const;

 private:
  ops::OpRegistry const* registry_;
  cost::CostModel const* roofline_;
  mutable std::mutex mutex_;
  std::map<cost::ProfileKey, ListedPiece, cost::ProfileKeyLess> pieces_;
};

// "cleave.pieces/1": {"format", "device_kinds", "pieces": [...]}, one piece per line.
std::string pieces_to_json(std::vector<ListedPiece> const& pieces);

}  // namespace cleave::api
