#include "api/piece_list.h"

#include <nlohmann/json.hpp>

#include "support/assert.h"
#include "tdl/piece.h"

namespace cleave::api {

namespace {

std::vector<std::int64_t> sizes(tdl::Box const& box) {
  std::vector<std::int64_t> out;
  out.reserve(box.size());
  for (auto const& interval : box)
    out.push_back(interval.size());
  return out;
}

// The piece's regions, from the op's region analysis of its box.
void describe(ListedPiece& piece, tdl::BoundOp const& bound, tdl::PieceInfo const& info) {
  for (std::size_t i = 0; i < info.inputs.size(); ++i) {
    auto const& region = info.inputs[i];
    piece.inputs.push_back(
        {sizes(region.box), region.pad_lo, region.pad_hi, bound.inputs()[i].type.dtype});
  }
  piece.output = {sizes(info.output), {}, {}, bound.output_type().dtype};
  piece.partial = info.partial;
}

nlohmann::json region_json(PieceRegion const& r, bool with_padding) {
  nlohmann::json out = {{"shape", r.shape}, {"dtype", ir::dtype_name(r.dtype)}};
  bool padded = false;
  for (std::size_t d = 0; d < r.pad_lo.size(); ++d)
    padded = padded || r.pad_lo[d] != 0 || r.pad_hi[d] != 0;
  if (with_padding && padded) {
    out["pad_lo"] = r.pad_lo;
    out["pad_hi"] = r.pad_hi;
  }
  return out;
}

}  // namespace

std::optional<cost::Measurement> PieceLister::measure(cost::ComputeRequest const& request,
                                                      cost::ProfileKeyView const& key) {
  // Reduce tasks are not one op's piece: a timing script has no op to run for them.
  if (!request.graph) return std::nullopt;
  std::lock_guard lock(mutex_);
  if (auto it = pieces_.find(key); it != pieces_.end()) {
    ++it->second.uses;
    return std::nullopt;
  }
  cost::ProfileKey owned{std::string(key.op),
                         std::string(key.attrs),
                         {key.extents.begin(), key.extents.end()},
                         key.dtype,
                         std::string(key.device_kind)};
  auto& piece = pieces_[owned];
  piece.key = std::move(owned);
  piece.uses = 1;
  piece.example_op = request.graph->op(request.op).name;
  piece.flops = request.flops;
  piece.bytes = request.bytes;
  // Priced as if unfused: what the piece costs as a kernel of its own, as the script times it.
  cost::ComputeRequest alone = request;
  alone.alone = true;
  piece.roofline = roofline_->compute(alone).time;
  auto bound = registry_->bind(*request.graph, request.op);
  CLEAVE_ASSERT(bound.has_value(), "a priced piece's op binds");
  auto info = tdl::analyze_piece(**bound, tdl::Box(request.box.begin(), request.box.end()));
  CLEAVE_ASSERT(info.has_value(), "a priced piece is a valid piece of its op");
  describe(piece, **bound, *info);
  return std::nullopt;
}

std::vector<ListedPiece> PieceLister::pieces() const {
  std::lock_guard lock(mutex_);
  std::vector<ListedPiece> out;
  out.reserve(pieces_.size());
  for (auto const& [key, piece] : pieces_)
    out.push_back(piece);
  return out;
}

std::string pieces_to_json(std::vector<ListedPiece> const& pieces) {
  std::string out = "{\"format\":\"" + std::string(pieces_format) + "\",\n\"pieces\":[";
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    auto const& p = pieces[i];
    nlohmann::json inputs = nlohmann::json::array();
    for (auto const& r : p.inputs)
      inputs.push_back(region_json(r, true));
    nlohmann::json line = {{"op", p.key.op},
                           {"attrs", p.key.attrs},
                           {"extents", p.key.extents},
                           {"dtype", ir::dtype_name(p.key.dtype)},
                           {"device_kind", p.key.device_kind},
                           {"example_op", p.example_op},
                           {"inputs", std::move(inputs)},
                           {"output", region_json(p.output, false)},
                           {"partial", p.partial},
                           {"flops", p.flops.value()},
                           {"bytes", p.bytes.value()},
                           {"roofline_s", p.roofline.value()},
                           {"uses", p.uses}};
    out += (i == 0 ? "\n" : ",\n") + line.dump();
  }
  out += pieces.empty() ? "]}\n" : "\n]}\n";
  return out;
}

}  // namespace cleave::api
