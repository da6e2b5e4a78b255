// Element-wise activations (oneDNN eltwise), broadcasting arithmetic (oneDNN binary), softmax and
// its gradient (oneDNN softmax), layer norm (oneDNN layer normalization), on a piece's blocks as
// they lie (row-major, flattened where the op does not care about dimensions).
#include <cstring>
#include <optional>

#include "runtime/kernels/onednn_kernels.h"
#include "runtime/kernels/onednn_util.h"

namespace cleave::runtime {
namespace {

using detail::Dims;
using DT = dnnl::memory::data_type;

dnnl::memory::desc flat(std::int64_t elements) {
  return dnnl::memory::desc({elements}, DT::f32, dnnl::memory::format_tag::a);
}

// Inputs `same` hold exactly the output's region (pointwise reads, no halo).
bool same_region(KernelCall const& call, std::size_t input) {
  return input < call.piece->inputs.size() && call.piece->inputs[input].box == call.piece->output;
}

// ---- eltwise -------------------------------------------------------------------------------

// The activation of `op`, or of the forward op of its gradient (`gelu_grad`: X, dY -> dX;
// `relu_grad`: Y, dY -> dX, dX = dY where Y > 0, else 0, which is oneDNN's ReLU backward from its
// output, alpha 0).
std::optional<dnnl::algorithm> eltwise_algorithm(ir::Op const& op) {
  if (op.type == "relu") return dnnl::algorithm::eltwise_relu;
  if (op.type == "relu_grad") return dnnl::algorithm::eltwise_relu_use_dst_for_bwd;
  if (op.type == "tanh") return dnnl::algorithm::eltwise_tanh;
  if (op.type == "sigmoid") return dnnl::algorithm::eltwise_logistic;
  if (op.type == "gelu" || op.type == "gelu_grad") {
    auto approx = op.attrs.get_string("approximate", "none");
    if (approx == "none") return dnnl::algorithm::eltwise_gelu_erf;
    if (approx == "tanh") return dnnl::algorithm::eltwise_gelu_tanh;
  }
  return std::nullopt;
}

struct SimpleEntry {
  dnnl::primitive primitive;
  dnnl::memory::desc a, b, c, d, scratch;  // the kernel's memories, in its own order
};

class EltwiseKernel final : public Kernel {
 public:
  std::string_view name() const override { return "onednn_eltwise"; }

  bool handles(KernelCall const& call) const override { return entry(call) != nullptr; }

  Status run(KernelCall const& call) const override {
    auto e = entry(call);
    if (!e) return Error(ErrorCode::unsupported, "onednn_eltwise: not an activation it handles");
    CLEAVE_CHECK_OK(detail::check_data(name(), call));
    bool from_output = call.op->type == "relu_grad";
    if (call.inputs.size() == 2)
      return detail::execute(
          name(), e->primitive, e->scratch,
          {{from_output ? DNNL_ARG_DST : DNNL_ARG_SRC, detail::wrap(e->a, call.inputs[0].data)},
           {DNNL_ARG_DIFF_DST, detail::wrap(e->a, call.inputs[1].data)},
           {DNNL_ARG_DIFF_SRC, detail::wrap(e->a, call.output.data)}});
    return detail::execute(name(), e->primitive, e->scratch,
                           {{DNNL_ARG_SRC, detail::wrap(e->a, call.inputs[0].data)},
                            {DNNL_ARG_DST, detail::wrap(e->a, call.output.data)}});
  }

 private:
  std::shared_ptr<SimpleEntry const> entry(KernelCall const& call) const {
    if (call.op == nullptr) return nullptr;
    auto algorithm = eltwise_algorithm(*call.op);
    bool backward = call.op->type.ends_with("_grad");
    if (!algorithm || !detail::inputs_dense(call) || call.inputs.size() != (backward ? 2u : 1u) ||
        !same_region(call, 0) || (backward && !same_region(call, 1)))
      return nullptr;
    std::int64_t n = tdl::box_volume(call.piece->output);
    std::string key = detail::make_key(backward ? "eltwise_backward" : "eltwise",
                                       {{static_cast<std::int64_t>(*algorithm), n}});
    return cache_.get(key, [&] {
      auto e = std::make_shared<SimpleEntry>();
      e->a = flat(n);
      auto const& eng = detail::cpu_engine();
      auto prop = backward ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
      dnnl::eltwise_forward::primitive_desc fwd({prop, *algorithm, e->a, 0.f},
                                                detail::default_attr(), eng);
      if (backward) {
        dnnl::eltwise_backward::primitive_desc pd({*algorithm, e->a, e->a, 0.f},
                                                  detail::default_attr(), eng, fwd);
        e->scratch = pd.scratchpad_desc();
        e->primitive = dnnl::eltwise_backward(pd);
      } else {
        e->scratch = fwd.scratchpad_desc();
        e->primitive = dnnl::eltwise_forward(fwd);
      }
      return std::shared_ptr<SimpleEntry const>(std::move(e));
    });
  }

  detail::PrimitiveCache<SimpleEntry> cache_;
};

// ---- binary --------------------------------------------------------------------------------

std::optional<dnnl::algorithm> binary_algorithm(std::string const& type) {
  if (type == "add") return dnnl::algorithm::binary_add;
  if (type == "sub") return dnnl::algorithm::binary_sub;
  if (type == "mul") return dnnl::algorithm::binary_mul;
  if (type == "div") return dnnl::algorithm::binary_div;
  return std::nullopt;
}

// A block's sizes aligned on the right to `rank` dimensions (NumPy broadcasting).
Dims aligned(tdl::Box const& box, std::size_t rank) {
  Dims sizes = detail::box_sizes(box);
  Dims out(rank - std::min(rank, sizes.size()), 1);
  out.insert(out.end(), sizes.begin(), sizes.end());
  return out;
}

// oneDNN broadcasts src1 only: src0 must have the output's sizes. Commutative ops swap operands
// when A is the broadcast one.
struct BinaryShape {
  dnnl::algorithm algorithm;
  Dims src0, src1, dst;
  std::size_t first = 0, second = 1;
};

std::optional<BinaryShape> analyze_binary(KernelCall const& call) {
  if (call.op == nullptr) return std::nullopt;
  auto algorithm = binary_algorithm(call.op->type);
  if (!algorithm || !detail::inputs_dense(call) || call.inputs.size() != 2) return std::nullopt;
  std::size_t rank = std::max<std::size_t>(call.piece->output.size(), 1);
  if (rank > DNNL_MAX_NDIMS) return std::nullopt;
  BinaryShape s{*algorithm, aligned(call.piece->inputs[0].box, rank),
                aligned(call.piece->inputs[1].box, rank), aligned(call.piece->output, rank)};
  if (s.src0 != s.dst) {
    bool commutative =
        *algorithm == dnnl::algorithm::binary_add || *algorithm == dnnl::algorithm::binary_mul;
    if (!commutative || s.src1 != s.dst) return std::nullopt;
    std::swap(s.src0, s.src1);
    std::swap(s.first, s.second);
  }
  for (std::size_t d = 0; d < rank; ++d)
    if (s.src1[d] != s.dst[d] && s.src1[d] != 1) return std::nullopt;
  return s;
}

class BinaryKernel final : public Kernel {
 public:
  std::string_view name() const override { return "onednn_binary"; }

  bool handles(KernelCall const& call) const override {
    auto s = analyze_binary(call);
    return s && entry(*s) != nullptr;
  }

  Status run(KernelCall const& call) const override {
    auto s = analyze_binary(call);
    auto e = s ? entry(*s) : nullptr;
    if (!e) return Error(ErrorCode::unsupported, "onednn_binary: not arithmetic it handles");
    CLEAVE_CHECK_OK(detail::check_data(name(), call));
    return detail::execute(name(), e->primitive, e->scratch,
                           {{DNNL_ARG_SRC_0, detail::wrap(e->a, call.inputs[s->first].data)},
                            {DNNL_ARG_SRC_1, detail::wrap(e->b, call.inputs[s->second].data)},
                            {DNNL_ARG_DST, detail::wrap(e->c, call.output.data)}});
  }

 private:
  std::shared_ptr<SimpleEntry const> entry(BinaryShape const& s) const {
    std::string key =
        detail::make_key("binary", {{static_cast<std::int64_t>(s.algorithm)}, s.src0, s.src1});
    return cache_.get(key, [&] {
      auto e = std::make_shared<SimpleEntry>();
      e->a = detail::plain_desc(s.src0, detail::row_major_strides(s.src0));
      e->b = detail::plain_desc(s.src1, detail::row_major_strides(s.src1));
      e->c = detail::plain_desc(s.dst, detail::row_major_strides(s.dst));
      dnnl::binary::primitive_desc pd(dnnl::binary::desc(s.algorithm, e->a, e->b, e->c),
                                      detail::default_attr(), detail::cpu_engine());
      e->scratch = pd.scratchpad_desc();
      e->primitive = dnnl::binary(pd);
      return std::shared_ptr<SimpleEntry const>(std::move(e));
    });
  }

  detail::PrimitiveCache<SimpleEntry> cache_;
};

// ---- softmax and its gradient ----------------------------------------------------------------

class SoftmaxKernel final : public Kernel {
 public:
  std::string_view name() const override { return "onednn_softmax"; }

  bool handles(KernelCall const& call) const override { return entry(call) != nullptr; }

  Status run(KernelCall const& call) const override {
    auto e = entry(call);
    if (!e) return Error(ErrorCode::unsupported, "onednn_softmax: not a softmax it handles");
    CLEAVE_CHECK_OK(detail::check_data(name(), call));
    using detail::wrap;
    if (call.op->type == "softmax")
      return detail::execute(name(), e->primitive, e->scratch,
                             {{DNNL_ARG_SRC, wrap(e->a, call.inputs[0].data)},
                              {DNNL_ARG_DST, wrap(e->a, call.output.data)}});
    return detail::execute(name(), e->primitive, e->scratch,
                           {{DNNL_ARG_DST, wrap(e->a, call.inputs[0].data)},
                            {DNNL_ARG_DIFF_DST, wrap(e->a, call.inputs[1].data)},
                            {DNNL_ARG_DIFF_SRC, wrap(e->a, call.output.data)}});
  }

 private:
  std::shared_ptr<SimpleEntry const> entry(KernelCall const& call) const {
    if (call.op == nullptr) return nullptr;
    bool forward = call.op->type == "softmax";
    if (!forward && call.op->type != "softmax_grad") return nullptr;
    if (!detail::inputs_dense(call) || call.inputs.size() != (forward ? 1u : 2u)) return nullptr;
    for (std::size_t i = 0; i < call.inputs.size(); ++i)
      if (!same_region(call, i)) return nullptr;
    Dims dims = detail::box_sizes(call.piece->output);
    auto rank = static_cast<std::int64_t>(dims.size());
    std::int64_t axis = call.op->attrs.get_int("axis", -1);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank || rank > DNNL_MAX_NDIMS) return nullptr;
    std::string key = detail::make_key(forward ? "softmax" : "softmax_grad", {dims, {axis}});
    return cache_.get(key, [&] {
      auto e = std::make_shared<SimpleEntry>();
      e->a = detail::plain_desc(dims, detail::row_major_strides(dims));
      auto const& eng = detail::cpu_engine();
      auto attr = detail::default_attr();
      auto prop = forward ? dnnl::prop_kind::forward_inference : dnnl::prop_kind::forward_training;
      dnnl::softmax_forward::primitive_desc fwd(
          dnnl::softmax_forward::desc(prop, e->a, static_cast<int>(axis)), attr, eng);
      if (forward) {
        e->scratch = fwd.scratchpad_desc();
        e->primitive = dnnl::softmax_forward(fwd);
      } else {
        dnnl::softmax_backward::primitive_desc pd(
            dnnl::softmax_backward::desc(e->a, e->a, static_cast<int>(axis)), attr, eng, fwd);
        e->scratch = pd.scratchpad_desc();
        e->primitive = dnnl::softmax_backward(pd);
      }
      return std::shared_ptr<SimpleEntry const>(std::move(e));
    });
  }

  detail::PrimitiveCache<SimpleEntry> cache_;
};

// ---- layer norm ------------------------------------------------------------------------------

class LayerNormKernel final : public Kernel {
 public:
  std::string_view name() const override { return "onednn_layer_norm"; }

  bool handles(KernelCall const& call) const override { return entry(call) != nullptr; }

  Status run(KernelCall const& call) const override {
    auto e = entry(call);
    if (!e) return Error(ErrorCode::unsupported, "onednn_layer_norm: not a layer norm it handles");
    CLEAVE_CHECK_OK(detail::check_data(name(), call));
    using detail::wrap;
    return detail::execute(name(), e->primitive, e->scratch,
                           {{DNNL_ARG_SRC, wrap(e->a, call.inputs[0].data)},
                            {DNNL_ARG_SCALE, wrap(e->b, call.inputs[1].data)},
                            {DNNL_ARG_SHIFT, wrap(e->b, call.inputs[2].data)},
                            {DNNL_ARG_DST, wrap(e->a, call.output.data)}});
  }

 private:
  std::shared_ptr<SimpleEntry const> entry(KernelCall const& call) const {
    if (call.op == nullptr || call.op->type != "layer_norm" || !detail::inputs_dense(call) ||
        call.inputs.size() != 3 || !same_region(call, 0) || call.piece->output.empty())
      return nullptr;
    std::int64_t width = call.piece->output.back().size();
    std::int64_t rows = tdl::box_volume(call.piece->output) / width;
    for (std::size_t i = 1; i < 3; ++i)
      if (call.piece->inputs[i].box.size() != 1 || call.piece->inputs[i].box[0].size() != width)
        return nullptr;
    auto eps = static_cast<float>(call.op->attrs.get_float("eps", 1e-5));
    std::int64_t eps_bits = 0;
    std::memcpy(&eps_bits, &eps, sizeof eps);
    std::string key = detail::make_key("layer_norm", {{rows, width, eps_bits}});
    return cache_.get(key, [&] {
      using Tag = dnnl::memory::format_tag;
      auto e = std::make_shared<SimpleEntry>();
      e->a = dnnl::memory::desc({rows, width}, DT::f32, Tag::ab);
      e->b = flat(width);
      auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
      dnnl::layer_normalization_forward::desc desc(dnnl::prop_kind::forward_inference, e->a, eps,
                                                   flags);
      dnnl::layer_normalization_forward::primitive_desc pd(desc, detail::default_attr(),
                                                           detail::cpu_engine());
      e->scratch = pd.scratchpad_desc();
      e->primitive = dnnl::layer_normalization_forward(pd);
      return std::shared_ptr<SimpleEntry const>(std::move(e));
    });
  }

  detail::PrimitiveCache<SimpleEntry> cache_;
};

}  // namespace

std::unique_ptr<Kernel> make_eltwise_kernel() {
  return std::make_unique<EltwiseKernel>();
}
std::unique_ptr<Kernel> make_binary_kernel() {
  return std::make_unique<BinaryKernel>();
}
std::unique_ptr<Kernel> make_softmax_kernel() {
  return std::make_unique<SoftmaxKernel>();
}
std::unique_ptr<Kernel> make_layer_norm_kernel() {
  return std::make_unique<LayerNormKernel>();
}

}  // namespace cleave::runtime
