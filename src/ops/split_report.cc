#include "ops/split_report.h"

#include <cmath>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support/format_bytes.h"

namespace cleave::ops {

namespace {

// value in the largest unit (each `base` times the previous) that keeps it >= 1.
std::string scaled(std::int64_t value, double base, std::initializer_list<char const*> units) {
  double v = static_cast<double>(value);
  auto unit = units.begin();
  while (v >= base && unit + 1 != units.end()) {
    v /= base;
    ++unit;
  }
  return unit == units.begin() ? fmt::format("{} {}", value, *unit)
                               : fmt::format("{:.2f} {}", v, *unit);
}

}  // namespace

std::string format_flops(std::int64_t flops) {
  return scaled(flops, 1000, {"FLOP", "kFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP"});
}

Expected<SplitReport> make_split_report(std::string op, std::string attrs,
                                        std::shared_ptr<tdl::BoundOp const> bound) {
  SplitReport r{std::move(op), std::move(attrs), bound, {}, {}};
  CLEAVE_TRY(r.whole, tdl::analyze_piece(*bound, tdl::full_box(*bound)));
  auto const& dims = bound->dims();
  for (std::size_t d = 0; d < dims.size(); ++d) {
    if (!dims[d].splittable) continue;
    SplitOption option{dims[d].name, {}};
    for (auto const& half : tdl::split_evenly(tdl::full_box(*bound), static_cast<int>(d), 2)) {
      CLEAVE_TRY(tdl::PieceInfo p, tdl::analyze_piece(*bound, half));
      option.pieces.push_back(std::move(p));
    }
    r.splits.push_back(std::move(option));
  }
  return r;
}

namespace {

std::string padding_text(tdl::Region const& region) {
  std::string out;
  for (std::size_t d = 0; d < region.box.size(); ++d) {
    if (region.pad_lo[d] == 0 && region.pad_hi[d] == 0) continue;
    out += fmt::format("{}dim {} +{}/+{}", out.empty() ? "" : ", ", d, region.pad_lo[d],
                       region.pad_hi[d]);
  }
  return out.empty() ? "" : " (padding before/after: " + out + ")";
}

std::string region_text(tdl::Region const& region, ir::Shape const& shape) {
  if (region.empty()) return "nothing";
  if (region.box == tdl::whole_box(shape) && !region.has_padding())
    return "all " + tdl::box_to_string(region.box);
  return tdl::box_to_string(region.box) + padding_text(region);
}

nlohmann::json box_json(tdl::Box const& box) {
  auto out = nlohmann::json::array();
  for (auto const& i : box)
    out.push_back({i.lo, i.hi});
  return out;
}

nlohmann::json piece_json(tdl::BoundOp const& op, tdl::PieceInfo const& p) {
  nlohmann::json j;
  j["iteration_box"] = box_json(p.iter_box);
  auto inputs = nlohmann::json::array();
  for (std::size_t i = 0; i < p.inputs.size(); ++i) {
    auto const& r = p.inputs[i];
    inputs.push_back({{"name", op.inputs()[i].name},
                      {"region", box_json(r.box)},
                      {"reads_nothing", r.empty()},
                      {"pad_before", r.pad_lo},
                      {"pad_after", r.pad_hi}});
  }
  j["inputs"] = std::move(inputs);
  j["output_region"] = box_json(p.output);
  j["partial"] = p.partial;
  j["reducer"] = p.partial ? nlohmann::json(tdl::reducer_name(p.reducer)) : nlohmann::json();
  j["flops"] = p.flops.value();
  j["bytes_read"] = p.bytes_read.value();
  j["bytes_written"] = p.bytes_written.value();
  return j;
}

}  // namespace

std::string to_text(SplitReport const& r) {
  tdl::BoundOp const& op = *r.bound;
  std::string out;
  out += fmt::format("op          {}{}\n", r.op, r.attrs.empty() ? "" : " (" + r.attrs + ")");
  out += fmt::format("TDL         {}\n", op.text());
  for (auto const& in : op.inputs())
    out += fmt::format("input       {} {}{}\n", in.name, ir::type_to_string(in.type),
                       in.pad_value != 0 ? fmt::format(" (reads outside it give {})", in.pad_value)
                                         : "");
  out += fmt::format("output      {} {}\n", op.output_name(), ir::type_to_string(op.output_type()));
  out += fmt::format("space       {}\n", op.describe_space());
  out += fmt::format("whole op    {}, reads {}, writes {}\n\n", format_flops(r.whole.flops.value()),
                     format_bytes(r.whole.bytes_read), format_bytes(r.whole.bytes_written));
  out += "dim        kind       extent  splittable\n";
  for (auto const& d : op.dims())
    out += fmt::format("{:<10} {:<10} {:>6}  {}\n", d.name,
                       d.kind == tdl::DimKind::parallel ? "parallel" : "reduction", d.extent,
                       d.splittable ? "yes" : "no (" + d.unsplittable_reason + ")");
  if (r.splits.empty()) out += "\nno dimension can be split: the op runs whole on one device\n";
  for (auto const& s : r.splits) {
    out += fmt::format("\n2-way split of {}:\n", s.dim);
    for (std::size_t k = 0; k < s.pieces.size(); ++k) {
      auto const& p = s.pieces[k];
      out += fmt::format("  half {}  {}\n", k, tdl::box_to_string(p.iter_box));
      for (std::size_t i = 0; i < p.inputs.size(); ++i)
        out += fmt::format("    reads  {} {}\n", op.inputs()[i].name,
                           region_text(p.inputs[i], op.inputs()[i].type.shape));
      out += fmt::format("    writes {} {}{}\n", op.output_name(), tdl::box_to_string(p.output),
                         p.partial ? fmt::format(" as partial results, combined by {}",
                                                 tdl::reducer_name(p.reducer))
                                   : "");
      out += fmt::format("    cost   {}, reads {}, writes {}\n", format_flops(p.flops.value()),
                         format_bytes(p.bytes_read), format_bytes(p.bytes_written));
    }
    bool partial = !s.pieces.empty() && s.pieces[0].partial;
    out += partial ? fmt::format("  needs a reduction ({}) of the halves' outputs\n",
                                 tdl::reducer_name(s.pieces[0].reducer))
                   : "  no reduction: the halves write disjoint parts of the output\n";
  }
  return out;
}

std::string to_json(SplitReport const& r) {
  tdl::BoundOp const& op = *r.bound;
  nlohmann::json j;
  j["format"] = "cleave.op-report/1";
  j["op"] = r.op;
  j["attrs"] = r.attrs;
  j["tdl"] = op.text();
  auto inputs = nlohmann::json::array();
  for (auto const& in : op.inputs())
    inputs.push_back({{"name", in.name},
                      {"shape", in.type.shape},
                      {"dtype", ir::dtype_name(in.type.dtype)},
                      {"pad_value", std::isfinite(in.pad_value)
                                        ? nlohmann::json(in.pad_value)
                                        : nlohmann::json(in.pad_value < 0 ? "-inf" : "inf")}});
  j["inputs"] = std::move(inputs);
  j["output"] = {{"name", op.output_name()},
                 {"shape", op.output_type().shape},
                 {"dtype", ir::dtype_name(op.output_type().dtype)}};
  auto dims = nlohmann::json::array();
  for (auto const& d : op.dims())
    dims.push_back({{"name", d.name},
                    {"kind", d.kind == tdl::DimKind::parallel ? "parallel" : "reduction"},
                    {"extent", d.extent},
                    {"splittable", d.splittable},
                    {"reason", d.unsplittable_reason}});
  j["dims"] = std::move(dims);
  j["reducer"] = tdl::reducer_name(op.reducer());
  j["whole"] = piece_json(op, r.whole);
  auto splits = nlohmann::json::array();
  for (auto const& s : r.splits) {
    auto pieces = nlohmann::json::array();
    for (auto const& p : s.pieces)
      pieces.push_back(piece_json(op, p));
    splits.push_back({{"dim", s.dim}, {"parts", 2}, {"pieces", std::move(pieces)}});
  }
  j["splits"] = std::move(splits);
  return j.dump(2) + "\n";
}

}  // namespace cleave::ops
