// Loading: parse (protobuf, skipping the weights' bytes on the stream), check (onnx::checker),
// infer shapes (with data propagation), then convert. libonnx and protobuf report errors by
// throwing; every call into them is inside one try block here, so no exception leaves the importer.
#include "import/onnx_import.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <filesystem>
#include <map>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/wire_format_lite.h>
#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include "import/converter.h"

namespace cleave::importer {

namespace {

// Floating initializers at least this large are read without their values: cleave needs their
// shapes, never their bytes. Smaller ones, and every integer or boolean one (shapes, indices,
// masks), are kept for shape inference and folding.
constexpr std::uint32_t kKeepBytes = 4096;

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

namespace wire {

using google::protobuf::io::CodedInputStream;
using google::protobuf::io::CodedOutputStream;
using google::protobuf::io::StringOutputStream;
using WF = google::protobuf::internal::WireFormatLite;

// Field numbers in onnx.proto.
constexpr int kModelGraph = 7, kGraphInitializer = 5, kTensorDataType = 2, kTensorFloatData = 4,
              kTensorRawData = 9;

bool floating(std::uint32_t data_type) {
  return elem_of(static_cast<int>(data_type)) == Elem::floating;
}

// One initializer: every field is copied except large values (raw_data, packed float_data) of a
// floating tensor, which are skipped on the stream, so they are never held in memory. A dropped
// tensor gets a one-byte placeholder so that the checker still sees one value field; nothing
// reads its values.
bool tensor(CodedInputStream& in, onnx::TensorProto& t) {
  std::string kept;
  bool dropped = false;
  {
    StringOutputStream so(&kept);
    CodedOutputStream out(&so);
    std::uint32_t data_type = 0;
    while (std::uint32_t tag = in.ReadTag()) {
      int field = WF::GetTagFieldNumber(tag);
      auto type = WF::GetTagWireType(tag);
      if (field == kTensorDataType && type == WF::WIRETYPE_VARINT) {
        if (!in.ReadVarint32(&data_type)) return false;
        out.WriteTag(tag);
        out.WriteVarint32(data_type);
        continue;
      }
      if ((field == kTensorRawData || field == kTensorFloatData) &&
          type == WF::WIRETYPE_LENGTH_DELIMITED && floating(data_type)) {
        std::uint32_t len = 0;
        if (!in.ReadVarint32(&len)) return false;
        if (len >= kKeepBytes) {
          if (!in.Skip(static_cast<int>(len))) return false;
          dropped = true;
          continue;
        }
        std::string bytes;
        if (!in.ReadString(&bytes, static_cast<int>(len))) return false;
        out.WriteTag(tag);
        out.WriteVarint32(len);
        out.WriteString(bytes);
        continue;
      }
      if (!WF::SkipField(&in, tag, &out)) return false;
    }
  }
  if (!in.ConsumedEntireMessage() || !t.ParseFromString(kept)) return false;
  if (dropped) {
    t.clear_float_data();
    t.set_raw_data(std::string(1, '\0'));
  }
  return true;
}

// A message whose field `nested` (length-delimited) is parsed by `inner` into `add()`, every other
// field copied and parsed by protobuf.
template <typename Message, typename Add, typename Inner>
bool message(CodedInputStream& in, Message& m, int nested, Add add, Inner inner) {
  std::string rest;
  {
    StringOutputStream so(&rest);
    CodedOutputStream out(&so);
    while (std::uint32_t tag = in.ReadTag()) {
      if (WF::GetTagFieldNumber(tag) == nested &&
          WF::GetTagWireType(tag) == WF::WIRETYPE_LENGTH_DELIMITED) {
        std::uint32_t len = 0;
        if (!in.ReadVarint32(&len)) return false;
        auto limit = in.PushLimit(static_cast<int>(len));
        // A truncated file ends the stream before the limit: the field is incomplete.
        if (!inner(in, add(m)) || in.BytesUntilLimit() != 0) return false;
        in.PopLimit(limit);
        continue;
      }
      if (!WF::SkipField(&in, tag, &out)) return false;
    }
  }
  return in.ConsumedEntireMessage() && m.MergeFromString(rest);
}

bool graph(CodedInputStream& in, onnx::GraphProto& g) {
  return message(
      in, g, kGraphInitializer, [](onnx::GraphProto& x) { return x.add_initializer(); },
      [](CodedInputStream& s, onnx::TensorProto* t) { return tensor(s, *t); });
}

bool model(CodedInputStream& in, onnx::ModelProto& m) {
  in.SetRecursionLimit(64);
  return message(
      in, m, kModelGraph, [](onnx::ModelProto& x) { return x.mutable_graph(); },
      [](CodedInputStream& s, onnx::GraphProto* g) { return graph(s, *g); });
}

}  // namespace wire

std::int64_t element_bytes(int data_type) {
  switch (data_type) {
  case onnx::TensorProto::UINT8:
  case onnx::TensorProto::INT8:
  case onnx::TensorProto::BOOL:
    return 1;
  case onnx::TensorProto::UINT16:
  case onnx::TensorProto::INT16:
  case onnx::TensorProto::FLOAT16:
  case onnx::TensorProto::BFLOAT16:
    return 2;
  case onnx::TensorProto::FLOAT:
  case onnx::TensorProto::INT32:
  case onnx::TensorProto::UINT32:
    return 4;
  case onnx::TensorProto::INT64:
  case onnx::TensorProto::UINT64:
  case onnx::TensorProto::DOUBLE:
  case onnx::TensorProto::COMPLEX64:
    return 8;
  case onnx::TensorProto::COMPLEX128:
    return 16;
  default:
    return 0;  // strings: no fixed size
  }
}

// libonnx trusts a tensor's bytes to match its shape (shape inference's data propagation copies
// numel * size bytes out of raw_data), and its checker does not compare them: found by fuzzing
// (docs/import.md). So every tensor in the file is checked here first. The one-byte placeholders
// of skipped weights (wire::tensor) are the exception; nothing reads them.
Status check_tensor_bytes(onnx::TensorProto const& t) {
  std::int64_t numel = 1;
  for (auto d : t.dims())
    if (d < 0 || (d > 0 && numel > (std::int64_t{1} << 40) / d))
      return Error(ErrorCode::invalid_argument,
                   "tensor '" + t.name() + "' has a negative or too large dimension");
    else
      numel *= d;
  std::int64_t size = element_bytes(t.data_type());
  if (t.data_location() == onnx::TensorProto::EXTERNAL || size == 0) return Status::ok();
  auto have = static_cast<std::int64_t>(t.raw_data().size());
  bool placeholder = have == 1 && numel * size >= kKeepBytes;
  if (t.has_raw_data() && have != numel * size && !placeholder)
    return Error(ErrorCode::invalid_argument,
                 "tensor '" + t.name() + "' holds " + std::to_string(have) +
                     " bytes but its shape and type need " + std::to_string(numel * size));
  return Status::ok();
}

Status check_all_tensor_bytes(onnx::GraphProto const& g) {
  for (auto const& t : g.initializer())
    CLEAVE_CHECK_OK(check_tensor_bytes(t));
  for (auto const& n : g.node())
    for (auto const& a : n.attribute()) {
      if (a.has_t()) CLEAVE_CHECK_OK(check_tensor_bytes(a.t()));
      for (auto const& t : a.tensors())
        CLEAVE_CHECK_OK(check_tensor_bytes(t));
      if (a.has_g()) CLEAVE_CHECK_OK(check_all_tensor_bytes(a.g()));
      for (auto const& sub : a.graphs())
        CLEAVE_CHECK_OK(check_all_tensor_bytes(sub));
    }
  return Status::ok();
}

// libonnx 1.12's shape inference of convolutions and pools divides by each stride unchecked and,
// where a Conv has no kernel_shape, takes it from W's rank without comparing it to X's (reading
// past its vectors): a zero stride or a W of the wrong rank crashed the importer (found by
// onnx_import_fuzz, docs/import.md). So the attributes are checked here first, and a Conv whose W
// is stored in the file gets kernel_shape written out from W's dims, which ONNX defines it to
// be; libonnx then compares its length with X's rank.
Status check_window_attributes(onnx::NodeProto const& n) {
  for (auto const& a : n.attribute()) {
    bool positive = a.name() == "strides" || a.name() == "dilations" || a.name() == "kernel_shape";
    if (!positive && a.name() != "pads") continue;
    for (auto v : a.ints())
      if (v < (positive ? 1 : 0))
        return Error(ErrorCode::invalid_argument,
                     n.op_type() + " node '" + n.name() + "': every value of " + a.name() +
                         " must be at least " + (positive ? "1" : "0") + ", found " +
                         std::to_string(v));
  }
  return Status::ok();
}

Status check_windows(onnx::GraphProto& g) {
  std::map<std::string, std::vector<std::int64_t>> known;  // dims of the tensors stored in the file
  for (auto const& t : g.initializer())
    known[t.name()].assign(t.dims().begin(), t.dims().end());
  for (auto& n : *g.mutable_node()) {
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_g()) CLEAVE_CHECK_OK(check_windows(*a.mutable_g()));
      for (auto& sub : *a.mutable_graphs())
        CLEAVE_CHECK_OK(check_windows(sub));
    }
    if (!n.domain().empty() && n.domain() != "ai.onnx") continue;
    static std::map<std::string, int> const weight_input = {
        {"Conv", 1}, {"ConvInteger", 1}, {"QLinearConv", 3}, {"ConvTranspose", 1},
        {"MaxPool", -1}, {"AveragePool", -1}, {"LpPool", -1}};
    auto op = weight_input.find(n.op_type());
    if (op == weight_input.end()) continue;
    CLEAVE_CHECK_OK(check_window_attributes(n));
    bool has_kernel = std::any_of(n.attribute().begin(), n.attribute().end(),
                                  [](auto const& a) { return a.name() == "kernel_shape"; });
    if (op->second < 0 || has_kernel || n.input_size() <= op->second) continue;
    auto w = known.find(n.input(op->second));
    if (w == known.end()) continue;
    if (w->second.size() < 3)
      return Error(ErrorCode::invalid_argument,
                   n.op_type() + " node '" + n.name() + "': W '" + w->first + "' has rank " +
                       std::to_string(w->second.size()) + "; a convolution's W has rank 3 or more");
    auto* k = n.add_attribute();
    k->set_name("kernel_shape");
    k->set_type(onnx::AttributeProto::INTS);
    for (std::size_t d = 2; d < w->second.size(); ++d)
      k->add_ints(w->second[d]);
  }
  return Status::ok();
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
                   "ONNX op " + n.op_type() + " (node '" + n.name() +
                       "') is not defined at opset " + std::to_string(opset) +
                       " and cleave has no mapping for it. " + unknown_op_advice(n.op_type()));
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
  if (auto st = check_all_tensor_bytes(model.graph()); !st)
    return std::move(st).error().with_context("in '" + label + "'");
  if (auto st = check_windows(*model.mutable_graph()); !st)
    return std::move(st).error().with_context("in '" + label + "'");
  std::string stage = "checking the model (onnx::checker)";
  auto tell = [&](std::string_view what) {
    if (options.progress) options.progress({what, 0, 0});
  };
  double check_s = 0, infer_s = 0;
  try {
    auto t0 = Clock::now();
    tell("checking the model");
    onnx::checker::check_model(model);
    check_s = since(t0);
    stage = "inferring shapes (onnx::shape_inference)";
    tell("inferring shapes");
    t0 = Clock::now();
    onnx::ShapeInferenceOptions infer(/*check_type_val=*/false, /*strict_mode_val=*/1,
                                      /*data_prop_val=*/true);
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), infer);
    infer_s = since(t0);
  } catch (std::exception const& e) {
    return Error(ErrorCode::invalid_argument,
                 "'" + label + "' is not a valid ONNX model: " + stage + " failed: " + e.what());
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

// Protobuf's wire format is lenient: many short byte strings (text, say) parse as a message that
// holds nothing.
Error empty_error(std::string const& label) {
  return Error(ErrorCode::parse_error, "'" + label +
                                           "' is not an ONNX model: it holds no graph (a file "
                                           "of another format, or an empty one)");
}

// onnx's checker looks for each external data file (which cleave never opens) relative to the
// working directory when it is given a ModelProto: point relative locations at the model's own
// directory, as onnx does when it checks a model by path.
void locate_external_data(onnx::ModelProto& model, std::filesystem::path const& model_file) {
  auto dir = model_file.parent_path();
  if (dir.empty()) return;
  for (auto& t : *model.mutable_graph()->mutable_initializer()) {
    if (t.data_location() != onnx::TensorProto::EXTERNAL) continue;
    for (auto& entry : *t.mutable_external_data())
      if (entry.key() == "location" && std::filesystem::path(entry.value()).is_relative())
        entry.set_value((dir / entry.value()).string());
  }
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
    if (!wire::model(in, model)) return parse_error(label);
    if (!model.has_graph()) return empty_error(label);
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
      ok = wire::model(in, model);
    }
    if (!ok) return parse_error(path);
    if (!model.has_graph()) return empty_error(path);
    locate_external_data(model, path);
    return import_model(model, path, registry, options, since(t0));
  } catch (std::exception const& e) {
    return Error(ErrorCode::invalid_argument, "'" + path + "': " + e.what());
  }
}

}  // namespace cleave::importer
