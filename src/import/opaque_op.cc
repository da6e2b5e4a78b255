#include "import/opaque_op.h"

#include "support/assert.h"

namespace cleave::importer {

namespace {

Expected<ops::OpInstance> opaque(ir::Attrs const& a, std::span<ir::TensorType const> in) {
  ir::Shape out = a.get_ints("shape", {});
  auto dtype = ir::parse_dtype(a.get_string("dtype", "fp32"));
  if (!dtype || !ir::is_valid_shape(out))
    return Error(ErrorCode::invalid_argument,
                 "opaque: shape must be a valid shape and dtype one of fp32, fp16, bf16, int32, "
                 "int64");
  std::string y = "Y[";
  for (std::size_t k = 0; k < out.size(); ++k)
    y += (k ? "," : "") + (k ? "o" + std::to_string(k) : std::string("b")) + ":" +
         std::to_string(out[k]);
  std::string reads;
  ops::OpInstance inst;
  for (std::size_t i = 0; i < in.size(); ++i) {
    std::string name = "X" + std::to_string(i);
    inst.input_names.push_back(name);
    std::string r = name + "[";
    for (std::size_t k = 0; k < in[i].shape.size(); ++k) {
      bool batch = k == 0 && !out.empty() && in[i].shape[0] == out[0];
      r += (k ? "," : "") +
           (batch ? std::string("b") : "i" + std::to_string(i) + "_" + std::to_string(k));
    }
    reads += (i ? ", " : "") + r + "]";
  }
  if (reads.empty()) return Error(ErrorCode::invalid_argument, "opaque: needs at least one input");
  inst.tdl = y + "] = opaque(" + reads + ")" + (out.empty() ? "" : " ; split(b)");
  inst.output = ir::TensorType{out, *dtype};
  return inst;
}

}  // namespace

void add_import_ops(ops::OpRegistry& registry) {
  if (registry.find("opaque")) return;
  auto st = registry.add(
      {"opaque",
       "an imported op without semantics: reads its inputs whole, splittable on the batch only",
       {{"onnx_op", ops::AttrKind::string, ir::AttrValue(std::string("?")), "the ONNX op type"},
        {"shape", ops::AttrKind::integers, std::nullopt, "the output shape"},
        {"dtype", ops::AttrKind::string, ir::AttrValue(std::string("fp32")), "the output dtype"}},
       false,
       1,
       -1,
       {ir::TensorType{{8, 64}, ir::DType::fp32}},
       ir::Attrs{{"shape", std::vector<std::int64_t>{8, 32}}},
       opaque});
  CLEAVE_ASSERT(st.is_ok(), "registering the opaque op failed");
}

}  // namespace cleave::importer
