// The mappings of ONNX Pad, Expand and Einsum (docs/import.md has the table): each becomes one
// cleave op written in TDL (pad, expand, einsum), whose gradients are a slice, a sum_to_shape and
// einsums, so they split like the rest of the graph.
#include <algorithm>
#include <map>

#include "import/convert_util.h"
#include "import/onnx_attrs.h"

namespace cleave::importer {

namespace {

// Pad(X, pads[, constant_value]) in constant mode with zeros (F.pad, and the padding PyTorch
// writes before an AveragePool).
Status pad(Converter& c, onnx::NodeProto const& n) {
  std::string mode = attr_string(n, "mode", "constant");
  if (mode != "constant")
    return c.node_error(n, ErrorCode::unsupported,
                        "Pad mode '" + mode + "' is not imported (only constant padding)");
  CLEAVE_TRY(ConstTensor const* k, need_constant(c, n, 1, "pads"));
  if (c.has(n, 2)) {
    CLEAVE_TRY(ConstTensor const* v, need_constant(c, n, 2, "constant_value"));
    if (v->size() > 1 || (v->size() == 1 && v->values[0] != 0))
      return c.node_error(n, ErrorCode::unsupported,
                          "Pad with a constant other than 0 is not imported");
  }
  if (c.has(n, 3))
    return c.node_error(n, ErrorCode::unsupported, "Pad's axes input is not imported");
  CLEAVE_TRY(ir::Shape s, c.shape(n, 0));
  Ints pads = k->ints();
  if (pads.size() != 2 * s.size())
    return c.node_error(n, ErrorCode::invalid_argument,
                        "pads has " + std::to_string(pads.size()) + " values for rank " +
                            std::to_string(s.size()));
  if (std::any_of(pads.begin(), pads.end(), [](auto p) { return p < 0; }))
    return c.node_error(n, ErrorCode::unsupported,
                        "negative pads (cropping) are not imported; slice instead");
  if (std::all_of(pads.begin(), pads.end(), [](auto p) { return p == 0; })) return alias(c, n);
  return unary(c, n, "pad", {{"pads", pads}});
}

// Expand(X, shape): X broadcast; nothing when it already has the shape.
Status expand(Converter& c, onnx::NodeProto const& n) {
  CLEAVE_TRY(ConstTensor const* k, need_constant(c, n, 1, "the shape"));
  CLEAVE_TRY(ir::Shape s, c.shape(n, 0));
  Ints want = k->ints();
  std::size_t rank = std::max(s.size(), want.size());
  ir::Shape out(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    std::int64_t a = i + s.size() >= rank ? s[i + s.size() - rank] : 1;
    std::int64_t b = i + want.size() >= rank ? want[i + want.size() - rank] : 1;
    out[i] = a == 1 ? b : a;
  }
  if (out == s) return alias(c, n);
  return unary(c, n, "expand", {{"shape", out}});
}

// Einsum with one or two operands; an implicit output ("ij,jk") is made explicit: the letters
// that appear once, in alphabetical order (ONNX's rule).
Status einsum(Converter& c, onnx::NodeProto const& n) {
  std::string eq = attr_string(n, "equation", "");
  std::erase(eq, ' ');
  if (n.input_size() < 1 || n.input_size() > 2)
    return c.node_error(n, ErrorCode::unsupported,
                        "Einsum of " + std::to_string(n.input_size()) +
                            " operands is not imported (one or two)");
  if (eq.find("->") == std::string::npos) {
    std::map<char, int> uses;
    for (char ch : eq)
      if (ch != ',') ++uses[ch];
    eq += "->";
    for (auto [ch, count] : uses)
      if (count == 1) eq += ch;
  }
  std::vector<ir::TensorId> xs;
  for (int i = 0; i < n.input_size(); ++i) {
    CLEAVE_TRY(ir::TensorId x, c.tensor(n, i));
    xs.push_back(x);
  }
  return bind(c, n, c.b().op("einsum", xs, {{"equation", eq}}, out_name(c, n)));
}

}  // namespace

void add_layout_mappings(std::unordered_map<std::string, OpMapping>& table) {
  table.emplace("Pad", pad);
  table.emplace("Expand", expand);
  table.emplace("Einsum", einsum);
}

}  // namespace cleave::importer
