#include "import/converter.h"

#include <algorithm>

#include "import/onnx_attrs.h"

namespace cleave::importer {

namespace {

std::string where(onnx::NodeProto const& n) {
  std::string name = n.name().empty() ? (n.output_size() ? n.output(0) : "?") : n.name();
  return n.op_type() + " node '" + name + "'";
}

bool is_weight_candidate(onnx::TensorProto const& t) {
  auto e = elem_of(t.data_type());
  std::int64_t numel = 1;
  for (auto d : t.dims())
    numel *= d;
  // Floating initializers of more than one element are parameters; integer ones (shapes, indices,
  // masks) and scalars are constants.
  return e == Elem::floating && numel > 1;
}

}  // namespace

Expected<ir::DType> dtype_of(int t, std::string const& what) {
  switch (t) {
  case onnx::TensorProto::FLOAT:
    return ir::DType::fp32;
  case onnx::TensorProto::FLOAT16:
    return ir::DType::fp16;
  case onnx::TensorProto::BFLOAT16:
    return ir::DType::bf16;
  case onnx::TensorProto::INT32:
    return ir::DType::int32;
  case onnx::TensorProto::INT64:
    return ir::DType::int64;
  default:
    return Error(ErrorCode::unsupported,
                 what + " has ONNX element type " +
                     onnx::TensorProto::DataType_Name(static_cast<onnx::TensorProto::DataType>(t)) +
                     "; cleave's tensors are float32, float16, bfloat16, int32 or int64");
  }
}

std::string unknown_op_advice(std::string const& op_type) {
  return "Describe it in one TDL line in a file passed with --op-semantics FILE, e.g. '" + op_type +
         "(X): Y[b,i] = X[b,i]' (docs/tdl.md; the ONNX node's numeric attributes become the op's "
         "parameters), or pass --allow-opaque to import it as an opaque op (shape from ONNX shape "
         "inference, splittable on the batch dimension only)";
}

Converter::Converter(onnx::ModelProto const& model, ops::OpRegistry const& registry,
                     ImportOptions const& options)
    : model_(model), graph_(model.graph()), registry_(registry), options_(options), b_(registry) {}

Error Converter::node_error(onnx::NodeProto const& n, ErrorCode code,
                            std::string const& what) const {
  return Error(code, what)
      .with_context("in " + where(n) + " (opset " + std::to_string(opset_) + ")");
}

std::string Converter::fresh(std::string const& base) {
  std::string name = base;
  while (used_.count(name) || reserved_.count(name))
    name = base + "." + std::to_string(counter_++);
  used_.insert(name);
  return name;
}

std::string Converter::claim(std::string const& onnx_name) {
  if (used_.count(onnx_name)) return fresh(onnx_name);
  used_.insert(onnx_name);
  return onnx_name;
}

Value const* Converter::value(std::string const& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? nullptr : &it->second;
}

void Converter::set_tensor(std::string const& name, ir::TensorId id) {
  Value v;
  v.kind = Value::Kind::tensor;
  v.id = id;
  v.name = name;
  values_[name] = std::move(v);
}

void Converter::set_value(std::string const& name, Value v) {
  values_[name] = std::move(v);
}

std::vector<onnx::NodeProto const*> const& Converter::consumers(std::string const& value) const {
  static std::vector<onnx::NodeProto const*> const none;
  auto it = consumers_.find(value);
  return it == consumers_.end() ? none : it->second;
}

onnx::NodeProto const* Converter::producer(std::string const& value) const {
  auto it = producers_.find(value);
  return it == producers_.end() ? nullptr : it->second;
}

ConstTensor const* Converter::constant(onnx::NodeProto const& n, int i) const {
  if (!has(n, i)) return nullptr;
  auto const* v = value(n.input(i));
  return v && v->kind == Value::Kind::constant ? &*v->constant : nullptr;
}

Expected<ir::Shape> Converter::shape(onnx::NodeProto const& n, int i) const {
  auto const* v = has(n, i) ? value(n.input(i)) : nullptr;
  if (!v) return node_error(n, ErrorCode::not_found, "input " + std::to_string(i) + " is missing");
  switch (v->kind) {
  case Value::Kind::tensor:
    return b_.shape_of(v->id);
  case Value::Kind::constant:
    return v->constant->dims;
  case Value::Kind::initializer: {
    ir::Shape s(v->init->dims().begin(), v->init->dims().end());
    if (v->transposed) std::reverse(s.begin(), s.end());
    return s;
  }
  }
  return ir::Shape{};
}

Expected<ir::TensorId> Converter::tensor_of(Value const& v, std::optional<ir::Shape> as) {
  switch (v.kind) {
  case Value::Kind::tensor:
    return v.id;
  case Value::Kind::constant: {
    auto it = constants_.find(v.name);
    if (it != constants_.end()) return it->second;
    ir::Shape s = v.constant->dims;
    if (!ir::is_valid_shape(s))
      return Error(ErrorCode::unsupported,
                   "constant '" + v.name + "' has an empty dimension " + ir::shape_to_string(s));
    ir::DType dt = v.constant->elem == Elem::floating ? ir::DType::fp32 : ir::DType::int64;
    auto id = b_.source(claim(v.name), {s, dt}, ir::TensorRole::input);
    constants_[v.name] = id;
    return id;
  }
  case Value::Kind::initializer: {
    ir::Shape dims(v.init->dims().begin(), v.init->dims().end());
    auto it = weights_.find(v.name);
    ir::TensorId w;
    if (it != weights_.end()) {
      w = it->second;
    } else {
      CLEAVE_TRY(ir::DType dt, dtype_of(v.init->data_type(), "initializer '" + v.name + "'"));
      ir::Shape s =
          as && !v.transposed && ir::num_elements(*as) == ir::num_elements(dims) ? *as : dims;
      if (!ir::is_valid_shape(s))
        return Error(ErrorCode::unsupported, "initializer '" + v.name + "' has shape " +
                                                 ir::shape_to_string(s) +
                                                 " with an empty dimension");
      w = b_.weight(claim(v.name), s, dt);
      weights_[v.name] = w;
      ++stats_.weights;
      stats_.parameters += ir::num_elements(s);
    }
    if (v.transposed) {
      std::string name = fresh(v.name + ".T");
      w = b_.op("transpose", {w}, {{"perm", std::vector<std::int64_t>{1, 0}}}, name);
    }
    if (as && b_.ok() && b_.shape_of(w) != *as && ir::num_elements(*as) == ir::num_elements(dims))
      w = b_.op("reshape", {w}, {{"shape", *as}}, fresh(v.name + ".reshaped"));
    return w;
  }
  }
  return ir::TensorId{};
}

Expected<ir::TensorId> Converter::tensor(onnx::NodeProto const& n, int i) {
  auto const* v = has(n, i) ? value(n.input(i)) : nullptr;
  if (!v) return node_error(n, ErrorCode::not_found, "input " + std::to_string(i) + " is missing");
  auto t = tensor_of(*v);
  if (!t) return std::move(t).error().with_context("in " + where(n));
  return t;
}

Status Converter::add_inputs() {
  std::set<std::string> inits;
  for (auto const& t : graph_.initializer()) {
    inits.insert(t.name());
    Value v;
    v.name = t.name();
    ir::Shape dims(t.dims().begin(), t.dims().end());
    if (is_weight_candidate(t) && ir::is_valid_shape(dims)) {
      v.kind = Value::Kind::initializer;
      v.init = &t;
    } else {
      auto c = read_tensor(t);
      if (!c) return std::move(c).error();
      v.kind = Value::Kind::constant;
      v.constant = std::move(*c);
    }
    values_[t.name()] = std::move(v);
  }
  for (auto const& in : graph_.input()) {
    if (inits.count(in.name())) continue;  // an initializer listed as an input (IR < 4 style)
    auto const& tt = in.type().tensor_type();
    if (!in.type().has_tensor_type())
      return Error(ErrorCode::unsupported, "graph input '" + in.name() +
                                               "' is not a tensor (sequences and maps are "
                                               "not imported)");
    CLEAVE_TRY(ir::DType dt, dtype_of(tt.elem_type(), "graph input '" + in.name() + "'"));
    ir::Shape s;
    if (!tt.has_shape())
      return Error(ErrorCode::unsupported,
                   "graph input '" + in.name() +
                       "' has no shape; cleave plans static shapes: export with a fixed input "
                       "shape");
    for (int k = 0; k < tt.shape().dim_size(); ++k) {
      auto const& d = tt.shape().dim(k);
      if (!d.has_dim_value() || d.dim_value() < 1)
        return Error(ErrorCode::unsupported,
                     "graph input '" + in.name() + "' dimension " + std::to_string(k) +
                         " is unknown ('" + d.dim_param() +
                         "'); cleave plans static shapes: export without dynamic_axes, e.g. "
                         "with batch fixed");
      s.push_back(d.dim_value());
    }
    if (!ir::is_valid_shape(s))
      return Error(ErrorCode::unsupported, "graph input '" + in.name() + "' is too large");
    set_tensor(in.name(), b_.input(claim(in.name()), s, dt));
  }
  return Status::ok();
}

Status Converter::fold(onnx::NodeProto const& n, bool& folded) {
  folded = false;
  std::vector<std::optional<ConstTensor>> in;
  bool all = true;
  for (int i = 0; i < n.input_size(); ++i) {
    if (n.input(i).empty()) {
      in.emplace_back();
      continue;
    }
    auto const* v = value(n.input(i));
    if (v && v->kind == Value::Kind::constant) {
      in.emplace_back(*v->constant);
    } else if (v && i == 0 && (n.op_type() == "Shape" || n.op_type() == "Size")) {
      // Only the shape of a tensor matters to these: known statically.
      CLEAVE_TRY(ir::Shape s, shape(n, 0));
      std::int64_t numel = ir::num_elements(s);
      if (n.op_type() == "Size") {
        in.emplace_back(ConstTensor{{}, {static_cast<double>(numel)}, Elem::integer});
        continue;
      }
      ConstTensor dims{{static_cast<std::int64_t>(s.size())}, {}, Elem::integer};
      auto r = static_cast<std::int64_t>(s.size());
      std::int64_t lo = attr_int(n, "start", 0), hi = attr_int(n, "end", r);
      lo = std::clamp<std::int64_t>(lo < 0 ? lo + r : lo, 0, r);
      hi = std::clamp<std::int64_t>(hi < 0 ? hi + r : hi, 0, r);
      for (std::int64_t k = lo; k < hi; ++k)
        dims.values.push_back(static_cast<double>(s[static_cast<std::size_t>(k)]));
      dims.dims = {static_cast<std::int64_t>(dims.values.size())};
      Value out;
      out.kind = Value::Kind::constant;
      out.constant = std::move(dims);
      out.name = n.output(0);
      set_value(n.output(0), std::move(out));
      folded = true;
      return Status::ok();
    } else {
      all = false;
      break;
    }
  }
  if (n.op_type() == "Constant") {
    ConstTensor c;
    if (auto const* a = find_attr(n, "value")) {
      auto r = read_tensor(a->t());
      if (!r) return node_error(n, r.error().code(), r.error().message());
      c = std::move(*r);
    } else if (auto const* f = find_attr(n, "value_float")) {
      c = {{}, {static_cast<double>(f->f())}, Elem::floating};
    } else if (auto const* i = find_attr(n, "value_int")) {
      c = {{}, {static_cast<double>(i->i())}, Elem::integer};
    } else if (auto const* is = find_attr(n, "value_ints")) {
      c = {{is->ints_size()}, {is->ints().begin(), is->ints().end()}, Elem::integer};
    } else if (auto const* fs = find_attr(n, "value_floats")) {
      c = {{fs->floats_size()}, {fs->floats().begin(), fs->floats().end()}, Elem::floating};
    } else {
      return node_error(n, ErrorCode::unsupported,
                        "only value, value_float(s) and value_int(s) constants are imported");
    }
    Value out;
    out.kind = Value::Kind::constant;
    out.constant = std::move(c);
    out.name = n.output(0);
    set_value(n.output(0), std::move(out));
    folded = true;
    return Status::ok();
  }
  if (!all || n.input_size() == 0) return Status::ok();
  auto r = fold_node(n, in);
  if (!r) return Status::ok();
  if (!*r) return node_error(n, r->error().code(), r->error().message());
  auto& outs = **r;
  for (std::size_t k = 0; k < outs.size() && static_cast<int>(k) < n.output_size(); ++k) {
    Value out;
    out.kind = Value::Kind::constant;
    out.constant = std::move(outs[k]);
    out.name = n.output(static_cast<int>(k));
    set_value(n.output(static_cast<int>(k)), std::move(out));
  }
  folded = true;
  return Status::ok();
}

Status Converter::convert(onnx::NodeProto const& n) {
  if (registry_.find(n.op_type()) && registry_.find(n.op_type())->attrs_are_params)
    return custom(n);
  if (!n.domain().empty() && n.domain() != "ai.onnx") return opaque(n);
  bool folded = false;
  CLEAVE_CHECK_OK(fold(n, folded));
  if (folded) {
    ++stats_.folded;
    return Status::ok();
  }
  CLEAVE_TRY(bool fused, convert_pattern(*this, n));
  if (fused) {
    ++stats_.fused;
    return Status::ok();
  }
  auto known = convert_known_op(*this, n);
  if (!known) return opaque(n);
  if (!*known) return std::move(*known);
  if (!b_.ok()) {
    auto err = b_.finish();
    return node_error(n, err ? ErrorCode::invalid_argument : err.error().code(),
                      err ? "the op could not be built" : err.error().message());
  }
  return Status::ok();
}

// An op the user described in TDL (--op-semantics) under the ONNX op's name: its inputs in order,
// the node's numeric attributes as the statement's parameters.
Status Converter::custom(onnx::NodeProto const& n) {
  std::vector<ir::TensorId> inputs;
  for (int i = 0; i < n.input_size(); ++i) {
    if (n.input(i).empty()) continue;
    CLEAVE_TRY(ir::TensorId t, tensor(n, i));
    inputs.push_back(t);
  }
  if (n.output_size() != 1)
    return node_error(n, ErrorCode::unsupported,
                      "a custom op (--op-semantics) has one output; this node has " +
                          std::to_string(n.output_size()));
  ir::Attrs attrs;
  for (auto const& a : n.attribute()) {
    if (a.type() == onnx::AttributeProto::INT)
      attrs.set(a.name(), static_cast<std::int64_t>(a.i()));
    if (a.type() == onnx::AttributeProto::FLOAT) attrs.set(a.name(), static_cast<double>(a.f()));
  }
  set_tensor(n.output(0), b_.op(n.op_type(), inputs, std::move(attrs), claim(n.output(0))));
  if (!b_.ok()) {
    auto err = b_.finish();
    return node_error(n, ErrorCode::invalid_argument, err ? "" : err.error().message());
  }
  return Status::ok();
}

Status Converter::opaque(onnx::NodeProto const& n) {
  std::string domain = n.domain().empty() ? "ai.onnx" : n.domain();
  std::string op = domain + "::" + n.op_type();
  if (!options_.allow_opaque)
    return node_error(n, ErrorCode::unsupported,
                      "cleave has no mapping for ONNX op " + op + ". " +
                          unknown_op_advice(n.op_type()));
  std::vector<ir::TensorId> inputs;
  for (int i = 0; i < n.input_size(); ++i) {
    if (n.input(i).empty()) continue;
    CLEAVE_TRY(ir::TensorId t, tensor(n, i));
    inputs.push_back(t);
  }
  for (int k = 0; k < n.output_size(); ++k) {
    auto it = inferred_.find(n.output(k));
    if (it == inferred_.end() || !it->second->tensor_type().has_shape())
      return node_error(n, ErrorCode::unsupported,
                        "opaque op " + op + ": ONNX shape inference gave no shape for output '" +
                            n.output(k) +
                            "' (ONNX has no schema for it: list the output's shape in the "
                            "graph's value_info)");
    auto const& tt = it->second->tensor_type();
    ir::Shape s;
    for (auto const& d : tt.shape().dim()) {
      if (!d.has_dim_value() || d.dim_value() < 1)
        return node_error(n, ErrorCode::unsupported,
                          "opaque op " + op + ": the shape of output '" + n.output(k) +
                              "' stays unknown after ONNX shape inference");
      s.push_back(d.dim_value());
    }
    CLEAVE_TRY(ir::DType dt, dtype_of(tt.elem_type(), "output '" + n.output(k) + "'"));
    ir::Attrs attrs{
        {"onnx_op", n.op_type()}, {"shape", s}, {"dtype", std::string(ir::dtype_name(dt))}};
    set_tensor(n.output(k), b_.op("opaque", inputs, std::move(attrs), claim(n.output(k))));
  }
  ++stats_.opaque;
  if (!b_.ok()) {
    auto err = b_.finish();
    return node_error(n, ErrorCode::invalid_argument, err ? "" : err.error().message());
  }
  return Status::ok();
}

Status Converter::add_loss() {
  if (graph_.output_size() == 0)
    return Error(ErrorCode::invalid_argument, "the graph has no output");
  if (!options_.loss.empty()) {
    auto const* v = value(options_.loss);
    if (!v || v->kind != Value::Kind::tensor)
      return Error(ErrorCode::not_found,
                   "--loss '" + options_.loss + "' is not a tensor the ONNX graph computes");
    if (!b_.shape_of(v->id).empty())
      return Error(ErrorCode::invalid_argument, "--loss '" + options_.loss + "' is " +
                                                    ir::type_to_string(b_.type_of(v->id)) +
                                                    "; the loss must be a scalar");
    loss_ = v->id;
    return Status::ok();
  }
  // Cross-entropy of each output (the logits, and the auxiliary heads of GoogLeNet and
  // Inception, trained with the model as PyTorch trains them), summed.
  std::map<std::int64_t, ir::TensorId> labels;  // by the number of labels
  for (auto const& o : graph_.output()) {
    CLEAVE_TRY(ir::TensorId l, cross_entropy_of(o.name(), labels));
    loss_ = loss_.valid() ? b_.op("add", {loss_, l}, {}, fresh("loss")) : l;
  }
  return Status::ok();
}

Expected<ir::TensorId> Converter::cross_entropy_of(std::string const& out,
                                                   std::map<std::int64_t, ir::TensorId>& labels) {
  auto const* v = value(out);
  if (!v || v->kind != Value::Kind::tensor)
    return Error(ErrorCode::unsupported, "the graph output '" + out +
                                             "' is not computed from "
                                             "the inputs");
  ir::TensorId logits = v->id;
  ir::Shape s = b_.shape_of(logits);
  if (s.size() == 3) {  // [B, S, V] (a language model): one label per position
    logits =
        b_.op("reshape", {logits}, {{"shape", ir::Shape{s[0] * s[1], s[2]}}}, fresh(out + ".flat"));
    s = {s[0] * s[1], s[2]};
  }
  if (s.size() != 2)
    return Error(ErrorCode::unsupported,
                 "the default loss is cross-entropy of logits [batch, classes] (or [batch, seq, "
                 "vocab]); the output '" +
                     out + "' is " + ir::shape_to_string(s) + ": name a scalar tensor with --loss");
  auto it = labels.find(s[0]);
  if (it == labels.end())
    it = labels.emplace(s[0], b_.input(fresh("labels"), {s[0]}, ir::DType::int64)).first;
  return b_.op("cross_entropy", {logits, it->second}, {},
               fresh(graph_.output_size() > 1 ? out + ".loss" : "loss"));
}

Expected<ImportResult> Converter::run() {
  for (auto const& o : model_.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset_ = o.version();
  stats_.producer = model_.producer_name() + " " + model_.producer_version();
  stats_.onnx_nodes = graph_.node_size();
  stats_.initializers = graph_.initializer_size();
  for (auto const& vi : graph_.value_info())
    inferred_[vi.name()] = &vi.type();
  for (auto const& vi : graph_.output())
    inferred_[vi.name()] = &vi.type();
  for (auto const& t : graph_.initializer())
    reserved_.insert(t.name());
  for (auto const& in : graph_.input())
    reserved_.insert(in.name());
  for (auto const& n : graph_.node()) {
    for (auto const& in : n.input())
      consumers_[in].push_back(&n);
    for (auto const& out : n.output()) {
      producers_[out] = &n;
      reserved_.insert(out);
    }
  }
  CLEAVE_CHECK_OK(add_inputs());
  std::int64_t done = 0;
  for (auto const& n : graph_.node()) {
    if (options_.progress) options_.progress({"converting nodes", done++, graph_.node_size()});
    if (skipped_.count(&n)) continue;
    CLEAVE_CHECK_OK(convert(n));
  }
  CLEAVE_CHECK_OK(add_loss());
  auto g = b_.finish();
  if (!g) return std::move(g).error();
  std::string loss = g->tensor(loss_).name;
  ImportResult r{std::move(*g), stats_, 1, loss};
  for (auto const& t : r.forward.tensors())
    if (t.role == ir::TensorRole::input && !t.type.shape.empty()) {
      r.batch = t.type.shape[0];
      break;
    }
  return r;
}

}  // namespace cleave::importer
