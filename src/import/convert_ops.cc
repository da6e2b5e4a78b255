// The mapping of ONNX ops (opsets 13-17) to cleave ops; docs/import.md has the table. Each
// mapping reads its inputs through the Converter (tensors, known constants, unused initializers)
// and binds the node's outputs to what it built.
#include <algorithm>
#include <functional>
#include <unordered_map>

#include "import/convert_util.h"
#include "import/onnx_attrs.h"

namespace cleave::importer {

namespace {

// Add, Sub, Mul, Div with NumPy broadcasting; a scalar factor becomes `scale`.
Status arithmetic(Converter& c, onnx::NodeProto const& n, std::string const& type) {
  auto s0 = scalar(c.constant(n, 0)), s1 = scalar(c.constant(n, 1));
  if (type == "mul" && (s0 || s1)) {
    CLEAVE_TRY(ir::TensorId x, c.tensor(n, s1 ? 0 : 1));
    return bind(c, n, c.b().op("scale", {x}, {{"alpha", s1 ? *s1 : *s0}}, out_name(c, n)));
  }
  if (type == "div" && s1 && *s1 != 0) {
    CLEAVE_TRY(ir::TensorId x, c.tensor(n, 0));
    return bind(c, n, c.b().op("scale", {x}, {{"alpha", 1.0 / *s1}}, out_name(c, n)));
  }
  CLEAVE_TRY(ir::TensorId a, c.tensor(n, 0));
  CLEAVE_TRY(ir::TensorId b, c.tensor(n, 1));
  return bind(c, n, c.b().op(type, {a, b}, {}, out_name(c, n)));
}

Status pow(Converter& c, onnx::NodeProto const& n) {
  auto e = scalar(c.constant(n, 1));
  if (!e || (*e != 2 && *e != 1))
    return c.node_error(n, ErrorCode::unsupported,
                        "Pow is imported with exponent 1 or 2 (and inside layer norm's "
                        "decomposed pattern); this one has another exponent. Describe it with "
                        "--op-semantics, or pass --allow-opaque");
  if (*e == 1) return alias(c, n);
  CLEAVE_TRY(ir::TensorId x, c.tensor(n, 0));
  return bind(c, n, c.b().op("mul", {x, x}, {}, out_name(c, n)));
}

Status matmul(Converter& c, onnx::NodeProto const& n) {
  CLEAVE_TRY(ir::Shape as, c.shape(n, 0));
  CLEAVE_TRY(ir::Shape bs, c.shape(n, 1));
  auto const* bv = c.value(n.input(1));
  CLEAVE_TRY(ir::TensorId a, c.tensor(n, 0));
  if (as.size() < 2 || bs.size() < 2)
    return c.node_error(n, ErrorCode::unsupported,
                        "MatMul of a vector (rank 1) is not imported; reshape it to a matrix");
  if (bv->kind == Value::Kind::initializer && bv->transposed && bs.size() == 2) {
    // X @ W^T with W [out, in] as PyTorch stores it: a linear layer.
    Value w = *bv;
    w.transposed = false;
    CLEAVE_TRY(ir::TensorId wt, c.tensor_of(w));
    return bind(c, n, c.b().op("linear", {a, wt}, {}, out_name(c, n)));
  }
  CLEAVE_TRY(ir::TensorId b, c.tensor(n, 1));
  if (as.size() == 2 && bs.size() == 2)
    return bind(c, n, c.b().op("matmul", {a, b}, {}, out_name(c, n)));
  if (bs.size() == 2 ||
      (as.size() == bs.size() && std::equal(as.begin(), as.end() - 2, bs.begin(), bs.end() - 2)))
    return bind(c, n, c.b().op("batch_matmul", {a, b}, {}, out_name(c, n)));
  return c.node_error(n, ErrorCode::unsupported,
                      "MatMul of " + ir::shape_to_string(as) + " and " + ir::shape_to_string(bs) +
                          ": batch dimensions must be equal (broadcasting them is not imported)");
}

Status gemm(Converter& c, onnx::NodeProto const& n) {
  if (attr_int(n, "transA", 0))
    return c.node_error(n, ErrorCode::unsupported, "Gemm with transA=1 is not imported");
  CLEAVE_TRY(ir::TensorId a, c.tensor(n, 0));
  CLEAVE_TRY(ir::TensorId b, c.tensor(n, 1));
  std::string name = out_name(c, n);
  bool bias = c.has(n, 2);
  double alpha = attr_float(n, "alpha", 1.0), beta = attr_float(n, "beta", 1.0);
  std::string type = attr_int(n, "transB", 0) ? "linear" : "matmul";
  ir::TensorId y =
      c.b().op(type, {a, b}, {}, bias || alpha != 1.0 ? c.fresh(name + "." + type) : name);
  if (alpha != 1.0)
    y = c.b().op("scale", {y}, {{"alpha", alpha}}, bias ? c.fresh(name + ".scaled") : name);
  if (bias) {
    CLEAVE_TRY(ir::TensorId bv, c.tensor(n, 2));
    if (beta != 1.0) bv = c.b().op("scale", {bv}, {{"alpha", beta}}, c.fresh(name + ".beta"));
    y = c.b().op("add", {y, bv}, {}, name);
  }
  return bind(c, n, y);
}

// Window attributes beyond any real model (and beyond what keeps index arithmetic in range).
Status check_window(Converter& c, onnx::NodeProto const& n) {
  for (char const* name : {"kernel_shape", "strides", "pads", "dilations"}) {
    auto v = attr_ints(n, name);
    if (!v) continue;
    bool pads = std::string(name) == "pads";
    for (auto x : *v)
      if (x < (pads ? 0 : 1) || x > (1 << 16))
        return c.node_error(n, ErrorCode::invalid_argument,
                            std::string(name) + " value " + std::to_string(x) +
                                " is out of range [" + (pads ? "0" : "1") + ", 65536]");
  }
  return Status::ok();
}

// Pads [x1_begin, x2_begin, x1_end, x2_end] = cleave's (top, left, bottom, right).
Expected<Ints> pads_of(Converter& c, onnx::NodeProto const& n) {
  CLEAVE_CHECK_OK(check_window(c, n));
  std::string autopad = attr_string(n, "auto_pad", "NOTSET");
  if (autopad != "NOTSET" && autopad != "VALID")
    return c.node_error(n, ErrorCode::unsupported,
                        "auto_pad=" + autopad + " is not imported; export with explicit pads");
  Ints pads = attr_ints(n, "pads").value_or(Ints{0, 0, 0, 0});
  if (autopad == "VALID") pads = {0, 0, 0, 0};
  if (pads.size() != 4)
    return c.node_error(n, ErrorCode::unsupported, "only 2-D windows (NCHW) are imported");
  return pads;
}

Status conv(Converter& c, onnx::NodeProto const& n) {
  CLEAVE_TRY(ir::Shape ws, c.shape(n, 1));
  if (ws.size() != 4)
    return c.node_error(n, ErrorCode::unsupported,
                        "only 2-D convolutions (NCHW, 4-D weights) are imported");
  CLEAVE_TRY(Ints pads, pads_of(c, n));
  CLEAVE_TRY(ir::TensorId x, c.tensor(n, 0));
  CLEAVE_TRY(ir::TensorId w, c.tensor(n, 1));
  std::string name = out_name(c, n);
  bool bias = c.has(n, 2);
  ir::Attrs a{{"stride", attr_ints(n, "strides").value_or(Ints{1, 1})},
              {"padding", pads},
              {"dilation", attr_ints(n, "dilations").value_or(Ints{1, 1})},
              {"groups", attr_int(n, "group", 1)}};
  ir::TensorId y = c.b().op("conv2d", {x, w}, std::move(a), bias ? c.fresh(name + ".conv") : name);
  if (bias) {
    CLEAVE_TRY(ir::TensorId bv, c.tensor_of(*c.value(n.input(2)), ir::Shape{ws[0], 1, 1}));
    y = c.b().op("add", {y, bv}, {}, name);
  }
  return bind(c, n, y);
}

Status batch_norm(Converter& c, onnx::NodeProto const& n) {
  for (int k = 1; k < n.output_size(); ++k)
    if (!n.output(k).empty() && !c.consumers(n.output(k)).empty())
      return c.node_error(n, ErrorCode::unsupported,
                          "the running statistics BatchNormalization outputs are used; cleave "
                          "imports batch norm with batch statistics (training) only");
  CLEAVE_TRY(ir::TensorId x, c.tensor(n, 0));
  CLEAVE_TRY(ir::TensorId g, c.tensor(n, 1));
  CLEAVE_TRY(ir::TensorId b, c.tensor(n, 2));
  std::string name = out_name(c, n);
  // Training-mode batch norm as the zoo writes it: the running mean and variance inputs are
  // buffers (not parameters) that a training step does not read.
  auto mean = c.b().op("bn_mean", {x}, {}, c.fresh(name + ".mean"));
  auto var = c.b().op("bn_var", {x, mean}, {}, c.fresh(name + ".var"));
  ir::Attrs a;
  double eps = attr_float(n, "epsilon", 1e-5);
  if (std::abs(eps - 1e-5) > 1e-12) a.set("eps", eps);
  return bind(c, n, c.b().op("bn_apply", {x, mean, var, g, b}, std::move(a), name));
}

Status pool(Converter& c, onnx::NodeProto const& n, bool is_max) {
  auto kernel = attr_ints(n, "kernel_shape");
  if (!kernel || kernel->size() != 2)
    return c.node_error(n, ErrorCode::unsupported, "only 2-D pooling (NCHW) is imported");
  if (n.output_size() > 1 && !n.output(1).empty() && !c.consumers(n.output(1)).empty())
    return c.node_error(n, ErrorCode::unsupported, "MaxPool's indices output is not imported");
  CLEAVE_TRY(Ints pads, pads_of(c, n));
  CLEAVE_TRY(ir::TensorId x, c.tensor(n, 0));
  ir::Attrs a{{"kernel", *kernel},
              {"stride", attr_ints(n, "strides").value_or(Ints{1, 1})},
              {"padding", pads},
              {"ceil_mode", attr_int(n, "ceil_mode", 0)}};
  if (is_max)
    a.set("dilation", attr_ints(n, "dilations").value_or(Ints{1, 1}));
  else
    a.set("count_include_pad", attr_int(n, "count_include_pad", 0));
  return bind(c, n,
              c.b().op(is_max ? "max_pool2d" : "avg_pool2d", {x}, std::move(a), out_name(c, n)));
}

Status reshape_to(Converter& c, onnx::NodeProto const& n, ir::Shape const& to) {
  CLEAVE_TRY(ir::Shape s, c.shape(n, 0));
  if (s == to) return alias(c, n);
  auto const* v = c.value(n.input(0));
  if (v->kind == Value::Kind::initializer && !v->transposed) {
    CLEAVE_TRY(ir::TensorId w, c.tensor_of(*v, to));
    return bind(c, n, w);
  }
  CLEAVE_TRY(ir::TensorId x, c.tensor(n, 0));
  return bind(c, n, c.b().op("reshape", {x}, {{"shape", to}}, out_name(c, n)));
}

Status reshape(Converter& c, onnx::NodeProto const& n) {
  CLEAVE_TRY(ConstTensor const* k, need_constant(c, n, 1, "the target shape"));
  CLEAVE_TRY(ir::Shape s, c.shape(n, 0));
  Ints want = k->ints();
  std::int64_t known = 1;
  int infer = -1;
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (want[i] == 0 && !attr_int(n, "allowzero", 0)) {
      if (i >= s.size()) return c.node_error(n, ErrorCode::invalid_argument, "0 past X's rank");
      want[i] = s[i];
    }
    if (want[i] == -1 && infer < 0) {
      infer = static_cast<int>(i);
      continue;
    }
    if (want[i] < 1 || __builtin_mul_overflow(known, want[i], &known))
      return c.node_error(n, ErrorCode::invalid_argument,
                          "target shape " + ir::shape_to_string(k->ints()) + " is not valid");
  }
  if (infer >= 0) want[static_cast<std::size_t>(infer)] = ir::num_elements(s) / known;
  if (!ir::is_valid_shape(want) || ir::num_elements(want) != ir::num_elements(s))
    return c.node_error(n, ErrorCode::shape_mismatch,
                        "cannot reshape " + ir::shape_to_string(s) + " to " +
                            ir::shape_to_string(want));
  return reshape_to(c, n, want);
}

Status flatten(Converter& c, onnx::NodeProto const& n) {
  CLEAVE_TRY(ir::Shape s, c.shape(n, 0));
  CLEAVE_TRY(std::int64_t axis, norm_axis(c, n, attr_int(n, "axis", 1), s.size() + 1));
  std::int64_t outer = 1;
  for (std::int64_t k = 0; k < axis; ++k)
    outer *= s[static_cast<std::size_t>(k)];
  return reshape_to(c, n, {outer, ir::num_elements(s) / outer});
}

Status squeeze(Converter& c, onnx::NodeProto const& n, bool unsqueeze) {
  CLEAVE_TRY(ir::Shape s, c.shape(n, 0));
  Ints axes;
  if (c.has(n, 1)) {
    CLEAVE_TRY(ConstTensor const* k, need_constant(c, n, 1, "axes"));
    axes = k->ints();
  }
  ir::Shape out;
  if (unsqueeze) {
    std::size_t rank = s.size() + axes.size();
    std::vector<bool> ins(rank, false);
    for (auto a : axes) {
      CLEAVE_TRY(std::int64_t k, norm_axis(c, n, a, rank));
      ins[static_cast<std::size_t>(k)] = true;
    }
    std::size_t src = 0;
    for (std::size_t k = 0; k < rank; ++k)
      out.push_back(ins[k] || src >= s.size() ? 1 : s[src++]);
  } else {
    std::vector<bool> drop(s.size(), axes.empty());
    for (auto a : axes) {
      CLEAVE_TRY(std::int64_t k, norm_axis(c, n, a, s.size()));
      drop[static_cast<std::size_t>(k)] = true;
    }
    for (std::size_t k = 0; k < s.size(); ++k)
      if (!drop[k] || s[k] != 1) out.push_back(s[k]);
  }
  return reshape_to(c, n, out);
}

Status transpose(Converter& c, onnx::NodeProto const& n) {
  CLEAVE_TRY(ir::Shape s, c.shape(n, 0));
  Ints perm;
  for (std::size_t k = s.size(); k-- > 0;)
    perm.push_back(static_cast<std::int64_t>(k));
  if (auto p = attr_ints(n, "perm")) perm = *p;
  auto const* v = c.value(n.input(0));
  if (v->kind == Value::Kind::initializer && s.size() == 2 && perm == Ints{1, 0}) {
    Value t = *v;  // a weight seen transposed: MatMul(X, W^T) becomes linear(X, W)
    t.transposed = !t.transposed;
    c.set_value(n.output(0), std::move(t));
    return Status::ok();
  }
  CLEAVE_TRY(ir::TensorId x, c.tensor(n, 0));
  return bind(c, n, c.b().op("transpose", {x}, {{"perm", perm}}, out_name(c, n)));
}

Status concat(Converter& c, onnx::NodeProto const& n) {
  std::vector<ir::TensorId> xs;
  for (int i = 0; i < n.input_size(); ++i) {
    CLEAVE_TRY(ir::Shape s, c.shape(n, i));
    if (ir::num_elements(s) == 0) continue;  // an empty part contributes nothing
    CLEAVE_TRY(ir::TensorId x, c.tensor(n, i));
    xs.push_back(x);
  }
  if (xs.empty()) return c.node_error(n, ErrorCode::unsupported, "every input is empty");
  if (xs.size() == 1) return bind(c, n, xs[0]);
  return bind(c, n, c.b().op("concat", xs, {{"axis", attr_int(n, "axis", 0)}}, out_name(c, n)));
}

Status split(Converter& c, onnx::NodeProto const& n) {
  CLEAVE_TRY(ir::Shape s, c.shape(n, 0));
  CLEAVE_TRY(std::int64_t axis, norm_axis(c, n, attr_int(n, "axis", 0), s.size()));
  Ints sizes;
  if (c.has(n, 1)) {
    CLEAVE_TRY(ConstTensor const* k, need_constant(c, n, 1, "split"));
    sizes = k->ints();
  } else {
    std::int64_t parts = n.output_size(), d = s[static_cast<std::size_t>(axis)];
    for (std::int64_t p = 0; p < parts; ++p)
      sizes.push_back(d / parts + (p < d % parts ? 1 : 0));
  }
  std::int64_t total = 0;
  for (auto v : sizes)
    total += std::clamp<std::int64_t>(v, 0, s[static_cast<std::size_t>(axis)] + 1);
  if (static_cast<int>(sizes.size()) != n.output_size() ||
      total != s[static_cast<std::size_t>(axis)] ||
      std::any_of(sizes.begin(), sizes.end(), [](auto v) { return v < 1; }))
    return c.node_error(n, ErrorCode::invalid_argument,
                        "split sizes do not cover axis " + std::to_string(axis) + " of " +
                            ir::shape_to_string(s));
  CLEAVE_TRY(ir::TensorId x, c.tensor(n, 0));
  auto parts = c.b().split(x, axis, sizes, c.fresh(n.output(0) + ".split"));
  for (int k = 0; k < n.output_size(); ++k)
    c.set_tensor(n.output(k), parts[static_cast<std::size_t>(k)]);
  return Status::ok();
}

Status slice(Converter& c, onnx::NodeProto const& n) {
  CLEAVE_TRY(ir::Shape s, c.shape(n, 0));
  CLEAVE_TRY(ConstTensor const* st, need_constant(c, n, 1, "starts"));
  CLEAVE_TRY(ConstTensor const* en, need_constant(c, n, 2, "ends"));
  Ints starts = st->ints(), ends = en->ints(), axes, steps;
  if (c.has(n, 3)) {
    CLEAVE_TRY(ConstTensor const* k, need_constant(c, n, 3, "axes"));
    axes = k->ints();
  } else {
    for (std::size_t k = 0; k < starts.size(); ++k)
      axes.push_back(static_cast<std::int64_t>(k));
  }
  if (c.has(n, 4)) {
    CLEAVE_TRY(ConstTensor const* k, need_constant(c, n, 4, "steps"));
    steps = k->ints();
  } else {
    steps.assign(starts.size(), 1);
  }
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    return c.node_error(n, ErrorCode::invalid_argument,
                        "starts, ends, axes and steps differ in length");
  Ints a_out, s_out, e_out, p_out;
  bool whole = true;
  for (std::size_t k = 0; k < starts.size(); ++k) {
    CLEAVE_TRY(std::int64_t axis, norm_axis(c, n, axes[k], s.size()));
    std::int64_t d = s[static_cast<std::size_t>(axis)];
    if (steps[k] < 1)
      return c.node_error(n, ErrorCode::unsupported, "Slice with a step below 1 is not imported");
    std::int64_t b = std::clamp<std::int64_t>(starts[k] < 0 ? starts[k] + d : starts[k], 0, d);
    std::int64_t e = std::clamp<std::int64_t>(ends[k] < 0 ? ends[k] + d : ends[k], 0, d);
    if (e <= b)
      return c.node_error(n, ErrorCode::unsupported,
                          "the slice is empty on axis " + std::to_string(axis));
    whole = whole && b == 0 && e == d && steps[k] == 1;
    a_out.push_back(axis);
    s_out.push_back(b);
    e_out.push_back(e);
    p_out.push_back(steps[k]);
  }
  if (whole) return alias(c, n);
  CLEAVE_TRY(ir::TensorId x, c.tensor(n, 0));
  return bind(c, n,
              c.b().op("slice", {x},
                       {{"starts", s_out}, {"ends", e_out}, {"axes", a_out}, {"steps", p_out}},
                       out_name(c, n)));
}

Status gather(Converter& c, onnx::NodeProto const& n) {
  CLEAVE_TRY(ir::Shape ds, c.shape(n, 0));
  CLEAVE_TRY(std::int64_t axis, norm_axis(c, n, attr_int(n, "axis", 0), ds.size()));
  auto const* idx = c.constant(n, 1);
  if (idx && idx->dims.empty()) {  // X[..., i, ...]: a slice that drops the axis
    std::int64_t i = idx->ints()[0], d = ds[static_cast<std::size_t>(axis)];
    if (i < 0) i += d;
    if (i < 0 || i >= d) return c.node_error(n, ErrorCode::invalid_argument, "index out of range");
    CLEAVE_TRY(ir::TensorId x, c.tensor(n, 0));
    std::string name = out_name(c, n);
    auto y =
        c.b().op("slice", {x}, {{"starts", Ints{i}}, {"ends", Ints{i + 1}}, {"axes", Ints{axis}}},
                 c.fresh(name + ".slice"));
    ir::Shape to = ds;
    to.erase(to.begin() + axis);
    return bind(c, n, c.b().op("reshape", {y}, {{"shape", to}}, name));
  }
  if (ds.size() != 2 || axis != 0)
    return c.node_error(n, ErrorCode::unsupported,
                        "Gather is imported as an embedding (rows of a 2-D table, axis 0) or as "
                        "the selection of one index; this one gathers axis " +
                            std::to_string(axis) + " of " + ir::shape_to_string(ds));
  CLEAVE_TRY(ir::TensorId w, c.tensor(n, 0));
  CLEAVE_TRY(ir::TensorId i, c.tensor(n, 1));
  return bind(c, n, c.b().op("embedding", {w, i}, {}, out_name(c, n)));
}

// Where(cond, X, Y) with a constant condition and one constant branch, the causal mask of
// attention (masked_fill): the tensor plus an additive mask input (0 where kept, -inf or the fill
// value where masked), as the zoo's attention takes its mask.
Status where(Converter& c, onnx::NodeProto const& n) {
  auto const* cond = c.constant(n, 0);
  auto const* x = c.value(n.input(1));
  auto const* y = c.value(n.input(2));
  bool x_tensor = x->kind != Value::Kind::constant, y_tensor = y->kind != Value::Kind::constant;
  if (!cond || x_tensor == y_tensor)
    return c.node_error(n, ErrorCode::unsupported,
                        "Where is imported as a mask: a constant condition choosing between a "
                        "tensor and a constant (masked_fill); this one is not");
  CLEAVE_TRY(ir::TensorId t, c.tensor(n, x_tensor ? 1 : 2));
  std::string name = out_name(c, n);
  ir::DType dt = c.b().type_of(t).dtype;
  ir::Shape ms = cond->dims;
  if (ms.empty()) ms = {1};
  auto mask = c.b().input(c.fresh(name + ".mask"), ms, dt);
  return bind(c, n, c.b().op("add", {t, mask}, {}, name));
}

Status softmax(Converter& c, onnx::NodeProto const& n) {
  return unary(c, n, "softmax", {{"axis", attr_int(n, "axis", -1)}});
}

Status layer_norm(Converter& c, onnx::NodeProto const& n) {
  CLEAVE_TRY(ir::Shape s, c.shape(n, 0));
  CLEAVE_TRY(std::int64_t axis, norm_axis(c, n, attr_int(n, "axis", -1), s.size()));
  if (axis + 1 != static_cast<std::int64_t>(s.size()))
    return c.node_error(n, ErrorCode::unsupported,
                        "LayerNormalization over more than the last axis is not imported");
  for (int k = 1; k < n.output_size(); ++k)
    if (!n.output(k).empty() && !c.consumers(n.output(k)).empty())
      return c.node_error(n, ErrorCode::unsupported,
                          "the mean and inverse deviation outputs "
                          "are not imported");
  CLEAVE_TRY(ir::TensorId x, c.tensor(n, 0));
  CLEAVE_TRY(ir::TensorId g, c.tensor(n, 1));
  std::string name = out_name(c, n);
  ir::TensorId b;
  if (c.has(n, 2)) {
    CLEAVE_TRY(b, c.tensor(n, 2));
  } else {
    b = c.b().input(c.fresh(name + ".zero_bias"), {s.back()}, c.b().type_of(x).dtype);
  }
  return bind(c, n,
              c.b().op("layer_norm", {x, g, b}, {{"eps", attr_float(n, "epsilon", 1e-5)}}, name));
}

// ReduceMean over some axes as a global average pool: the kept axes first, the reduced ones
// flattened into the pool's window, then the ONNX output shape.
Status reduce_mean(Converter& c, onnx::NodeProto const& n) {
  CLEAVE_TRY(ir::Shape s, c.shape(n, 0));
  Ints axes = attr_ints(n, "axes").value_or(Ints{});
  if (c.has(n, 1)) {
    CLEAVE_TRY(ConstTensor const* k, need_constant(c, n, 1, "axes"));
    axes = k->ints();
  }
  std::vector<bool> reduced(s.size(), axes.empty());
  for (auto a : axes) {
    CLEAVE_TRY(std::int64_t k, norm_axis(c, n, a, s.size()));
    reduced[static_cast<std::size_t>(k)] = true;
  }
  bool keep = attr_int(n, "keepdims", 1) != 0;
  Ints perm, kept, out;
  std::int64_t window = 1;
  for (std::size_t k = 0; k < s.size(); ++k)
    if (!reduced[k]) perm.push_back(static_cast<std::int64_t>(k)), kept.push_back(s[k]);
  for (std::size_t k = 0; k < s.size(); ++k)
    if (reduced[k]) perm.push_back(static_cast<std::int64_t>(k)), window *= s[k];
  for (std::size_t k = 0; k < s.size(); ++k)
    if (!reduced[k] || keep) out.push_back(reduced[k] ? 1 : s[k]);
  std::int64_t n0 = kept.empty() ? 1 : kept[0];
  std::int64_t c0 = kept.empty() ? 1 : ir::num_elements(kept) / n0;
  CLEAVE_TRY(ir::TensorId x, c.tensor(n, 0));
  std::string name = out_name(c, n);
  bool identity = true;
  for (std::size_t k = 0; k < perm.size(); ++k)
    identity = identity && perm[k] == static_cast<std::int64_t>(k);
  if (!identity) x = c.b().op("transpose", {x}, {{"perm", perm}}, c.fresh(name + ".transpose"));
  x = c.b().op("reshape", {x}, {{"shape", Ints{n0, c0, window, 1}}}, c.fresh(name + ".window"));
  x = c.b().op("global_avg_pool", {x}, {}, c.fresh(name + ".mean"));
  return bind(c, n, c.b().op("reshape", {x}, {{"shape", out.empty() ? Ints{1} : out}}, name));
}

Status dropout(Converter& c, onnx::NodeProto const& n) {
  double p = 0.5;
  if (c.has(n, 1)) {
    CLEAVE_TRY(ConstTensor const* k, need_constant(c, n, 1, "ratio"));
    if (k->size() == 1) p = k->values[0];
  } else if (find_attr(n, "ratio")) {
    p = attr_float(n, "ratio", 0.5);
  }
  if (n.output_size() > 1 && !n.output(1).empty() && !c.consumers(n.output(1)).empty())
    return c.node_error(n, ErrorCode::unsupported, "Dropout's mask output is not imported");
  if (p <= 0) return alias(c, n);
  CLEAVE_TRY(ir::TensorId x, c.tensor(n, 0));
  std::string name = out_name(c, n);
  auto mask = c.b().source(c.fresh(name + ".mask"), c.b().type_of(x), ir::TensorRole::input);
  return bind(c, n, c.b().op("dropout", {x, mask}, {{"p", p}}, name));
}

Status identity(Converter& c, onnx::NodeProto const& n) {
  Value v = *c.value(n.input(0));
  // An exporter's deduplicated initializer: a parameter of its own in the module (counted by use).
  if (v.kind == Value::Kind::initializer) v.name = n.output(0);
  c.set_value(n.output(0), std::move(v));
  return Status::ok();
}

Status cast(Converter& c, onnx::NodeProto const& n) {
  CLEAVE_TRY(ir::DType to, dtype_of(static_cast<int>(attr_int(n, "to", 1)), "Cast's target"));
  CLEAVE_TRY(ir::TensorId x, c.tensor(n, 0));
  if (c.b().type_of(x).dtype == to) return alias(c, n);
  return unary(c, n, "cast", {{"dtype", std::string(ir::dtype_name(to))}});
}

// Clip(X, min, max) with constant bounds (opset 13: inputs; ReLU6 is Clip(X, 0, 6)).
Status clip(Converter& c, onnx::NodeProto const& n) {
  ir::Attrs a;
  for (auto [i, name] : {std::pair{1, "min"}, std::pair{2, "max"}}) {
    if (!c.has(n, i)) continue;
    CLEAVE_TRY(ConstTensor const* k, need_constant(c, n, i, name));
    auto v = scalar(k);
    if (!v)
      return c.node_error(n, ErrorCode::invalid_argument, std::string(name) + " is not a scalar");
    a.set(name, *v);
  }
  return unary(c, n, "clip", std::move(a));
}

Status hardsigmoid(Converter& c, onnx::NodeProto const& n) {
  return unary(c, n, "hardsigmoid",
               {{"alpha", attr_float(n, "alpha", 0.2)}, {"beta", attr_float(n, "beta", 0.5)}});
}

Status gelu(Converter& c, onnx::NodeProto const& n) {
  return unary(c, n, "gelu", {{"approximate", attr_string(n, "approximate", "none")}});
}

std::unordered_map<std::string, OpMapping> make_mappings() {
  std::unordered_map<std::string, OpMapping> table = {
      {"Relu", [](Converter& c, auto const& n) { return unary(c, n, "relu"); }},
      {"Tanh", [](Converter& c, auto const& n) { return unary(c, n, "tanh"); }},
      {"Sigmoid", [](Converter& c, auto const& n) { return unary(c, n, "sigmoid"); }},
      {"Neg",
       [](Converter& c, auto const& n) {
         return unary(c, n, "scale", {{"alpha", -1.0}});
       }},
      {"Gelu", gelu},
      {"Clip", clip},
      {"HardSwish", [](Converter& c, auto const& n) { return unary(c, n, "hardswish"); }},
      {"HardSigmoid", hardsigmoid},
      {"Add", [](Converter& c, auto const& n) { return arithmetic(c, n, "add"); }},
      {"Sub", [](Converter& c, auto const& n) { return arithmetic(c, n, "sub"); }},
      {"Mul", [](Converter& c, auto const& n) { return arithmetic(c, n, "mul"); }},
      {"Div", [](Converter& c, auto const& n) { return arithmetic(c, n, "div"); }},
      {"Pow", pow},
      {"MatMul", matmul},
      {"Gemm", gemm},
      {"Conv", conv},
      {"BatchNormalization", batch_norm},
      {"MaxPool", [](Converter& c, auto const& n) { return pool(c, n, true); }},
      {"AveragePool", [](Converter& c, auto const& n) { return pool(c, n, false); }},
      {"GlobalAveragePool",
       [](Converter& c, auto const& n) { return unary(c, n, "global_avg_pool"); }},
      {"GlobalMaxPool", [](Converter& c, auto const& n) { return unary(c, n, "global_max_pool"); }},
      {"Reshape", reshape},
      {"Flatten", flatten},
      {"Squeeze", [](Converter& c, auto const& n) { return squeeze(c, n, false); }},
      {"Unsqueeze", [](Converter& c, auto const& n) { return squeeze(c, n, true); }},
      {"Transpose", transpose},
      {"Concat", concat},
      {"Split", split},
      {"Slice", slice},
      {"Gather", gather},
      {"Where", where},
      {"Softmax", softmax},
      {"LayerNormalization", layer_norm},
      {"ReduceMean", reduce_mean},
      {"Dropout", dropout},
      {"Identity", identity},
      {"Cast", cast},
  };
  add_layout_mappings(table);
  return table;
}

std::unordered_map<std::string, OpMapping> const& mappings() {
  static std::unordered_map<std::string, OpMapping> const table = make_mappings();
  return table;
}

}  // namespace

std::optional<Status> convert_known_op(Converter& c, onnx::NodeProto const& n) {
  auto const& table = mappings();
  auto it = table.find(n.op_type());
  if (it == table.end()) return std::nullopt;
  for (int i = 0; i < n.input_size(); ++i)
    if (!n.input(i).empty() && !c.value(n.input(i)))
      return c.node_error(n, ErrorCode::not_found,
                          "input '" + n.input(i) + "' is not produced before this node");
  return it->second(c, n);
}

}  // namespace cleave::importer
