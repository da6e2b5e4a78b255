// Loading: parse (protobuf), check (onnx::checker), drop the weights' bytes, infer shapes (with
// data propagation), then convert. libonnx and protobuf report errors by throwing; every call into
// them is inside one try block here, so no exception leaves the importer.
#include "import/onnx_import.h"

#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>
#include <unistd.h>

#include <chrono>
#include <exception>

#include "import/converter.h"

namespace cleave::importer {

namespace {

// Initializers at least this large lose their bytes after the check: only shapes matter to
// cleave, and a 500 MB model then costs its parsed size once, not twice. Smaller ones stay for
// shape inference and folding (shape constants are a few bytes).
constexpr std::size_t kKeepBytes = 4096;

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

void drop_weight_bytes(onnx::GraphProto& g) {
  for (auto& t : *g.mutable_initializer()) {
    if (elem_of(t.data_type()) != Elem::floating) continue;  // masks, indices, shapes: kept
    if (t.raw_data().size() >= kKeepBytes) std::string().swap(*t.mutable_raw_data());
    if (static_cast<std::size_t>(t.float_data_size()) * 4 >= kKeepBytes) {
      google::protobuf::RepeatedField<float>().Swap(t.mutable_float_data());
    }
  }
}

Status check_opset(onnx::ModelProto const& m, std::int64_t& opset) {
  opset = -1;
  for (auto const& o : m.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  if (opset < 0)
    return Error(ErrorCode::unsupported,
                 "the model imports no version of the default ONNX domain (ai.onnx)");
  if (opset < 13 || opset > 17)
    return Error(ErrorCode::unsupported,
                 "opset " + std::to_string(opset) +
                     " is outside the range cleave imports (13-17); re-export with "
                     "opset_version between 13 and 17, or convert it with "
                     "onnx.version_converter.convert_version(model, 17)");
  return Status::ok();
}

// Ops of the default domain that ONNX itself does not define at this opset (a newer op, a typo):
// the checker would reject them with a bare message, so name them here. Where the user described
// the op (--op-semantics) or allows opaque ops, the node moves to a domain of its own, which the
// checker accepts without a schema.
Status unknown_default_ops(onnx::ModelProto& model, std::int64_t opset,
                           ops::OpRegistry const& registry, ImportOptions const& options) {
  bool moved = false;
  for (auto& n : *model.mutable_graph()->mutable_node()) {
    if (!n.domain().empty() && n.domain() != "ai.onnx") continue;
    if (onnx::OpSchemaRegistry::Schema(n.op_type(), static_cast<int>(opset), "")) continue;
    if (!registry.find(n.op_type()) && !options.allow_opaque)
      return Error(ErrorCode::unsupported,
                   "ONNX op " + n.op_type() + " (node '" + n.name() + "') is not defined at opset " +
                       std::to_string(opset) + " and cleave has no mapping for it. " +
                       unknown_op_advice(n.op_type()));
    n.set_domain(std::string(kCustomDomain));
    moved = true;
  }
  if (moved) {
    auto* o = model.add_opset_import();
    o->set_domain(std::string(kCustomDomain));
    o->set_version(1);
  }
  return Status::ok();
}

Expected<ImportResult> import_model(onnx::ModelProto& model, std::string const& label,
                                    ops::OpRegistry const& registry, ImportOptions const& options,
                                    double parse_s) {
  std::int64_t opset = 0;
  CLEAVE_CHECK_OK(check_opset(model, opset));
  CLEAVE_CHECK_OK(unknown_default_ops(model, opset, registry, options));
  std::string stage = "checking the model (onnx::checker)";
  double check_s = 0, infer_s = 0;
  try {
    auto t0 = Clock::now();
    onnx::checker::check_model(model);
    drop_weight_bytes(*model.mutable_graph());
    check_s = since(t0);
    stage = "inferring shapes (onnx::shape_inference)";
    t0 = Clock::now();
    onnx::ShapeInferenceOptions infer(/*check_type_val=*/false, /*strict_mode_val=*/1,
                                      /*data_prop_val=*/true);
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), infer);
    infer_s = since(t0);
  } catch (std::exception const& e) {
    return Error(ErrorCode::invalid_argument, "'" + label + "' is not a valid ONNX model: " +
                                                  stage + " failed: " + e.what());
  }
  auto t0 = Clock::now();
  Converter converter(model, registry, options);
  auto result = converter.run();
  if (!result) return std::move(result).error().with_context("importing '" + label + "'");
  result->stats.opset = opset;
  result->stats.parse_s = parse_s;
  result->stats.check_s = check_s;
  result->stats.infer_s = infer_s;
  result->stats.convert_s = since(t0);
  return result;
}

Error parse_error(std::string const& label) {
  return Error(ErrorCode::parse_error,
               "'" + label +
                   "' is not an ONNX model: protobuf could not parse it as onnx.ModelProto (a "
                   "truncated or corrupt file, or another format)");
}

}  // namespace

Expected<ImportResult> import_onnx_bytes(std::string_view bytes, std::string const& label,
                                         ops::OpRegistry const& registry,
                                         ImportOptions const& options) {
  try {
    auto t0 = Clock::now();
    onnx::ModelProto model;
    if (bytes.size() > INT32_MAX) return parse_error(label);
    google::protobuf::io::CodedInputStream in(reinterpret_cast<std::uint8_t const*>(bytes.data()),
                                              static_cast<int>(bytes.size()));
    in.SetRecursionLimit(64);
    if (!model.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage()) return parse_error(label);
    return import_model(model, label, registry, options, since(t0));
  } catch (std::exception const& e) {
    return Error(ErrorCode::invalid_argument, "'" + label + "': " + e.what());
  }
}

Expected<ImportResult> import_onnx_file(std::string const& path, ops::OpRegistry const& registry,
                                        ImportOptions const& options) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error(ErrorCode::io_error, "cannot open '" + path + "'");
  try {
    auto t0 = Clock::now();
    onnx::ModelProto model;
    bool ok = false;
    {
      // Parsed straight from the file: the bytes are never held in memory as a whole.
      google::protobuf::io::FileInputStream file(fd);
      file.SetCloseOnDelete(true);
      google::protobuf::io::CodedInputStream in(&file);
      in.SetRecursionLimit(64);
      ok = model.ParseFromCodedStream(&in) && in.ConsumedEntireMessage();
    }
    if (!ok) return parse_error(path);
    return import_model(model, path, registry, options, since(t0));
  } catch (std::exception const& e) {
    return Error(ErrorCode::invalid_argument, "'" + path + "': " + e.what());
  }
}

}  // namespace cleave::importer
