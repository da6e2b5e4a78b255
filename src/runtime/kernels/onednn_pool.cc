// max_pool2d and avg_pool2d on oneDNN's pooling, the piece's halo and border padding as explicit
// asymmetric padding (as for convolution, onednn_conv.cc). oneDNN's max pooling ignores padding
// (TDL pads X with -inf); count_include_pad=1 divides by the whole window, =0 by its part inside
// the block, which is its part inside X since the block holds every row the window reads.
// A piece that splits the window (a partial max or sum) is left to the interpreter.
#include <optional>

#include "runtime/kernels/onednn_kernels.h"
#include "runtime/kernels/onednn_util.h"

namespace cleave::runtime {
namespace {

using detail::Dims;

struct PoolShape {
  dnnl::algorithm algorithm;
  Dims src, dst, strides, kernel, dilation, pad_l, pad_r;
};

std::optional<PoolShape> analyze(KernelCall const& call) {
  if (call.op == nullptr) return std::nullopt;
  auto const& type = call.op->type;
  bool is_max = type == "max_pool2d";
  if (!is_max && type != "avg_pool2d") return std::nullopt;
  if (call.piece == nullptr || call.bound == nullptr || call.piece->inputs.size() != 1 ||
      call.inputs.size() != 1)
    return std::nullopt;
  auto const& x = call.piece->inputs[0];
  if (x.empty() || x.box.size() != 4 || x.pad_lo[0] || x.pad_lo[1] || x.pad_hi[0] || x.pad_hi[1])
    return std::nullopt;
  auto const& bound = *call.bound;
  for (std::size_t d = static_cast<std::size_t>(bound.num_parallel()); d < bound.dims().size(); ++d)
    if (call.piece->iter_box[d].lo != 0 || call.piece->iter_box[d].hi != bound.dims()[d].extent)
      return std::nullopt;
  auto const& a = call.op->attrs;
  auto kernel = a.get_ints("kernel", {});
  if (kernel.size() != 2) return std::nullopt;
  auto stride = a.get_ints("stride", {});
  if (stride.empty()) stride = kernel;
  auto dil = a.get_ints("dilation", {1, 1});
  PoolShape p;
  p.algorithm = is_max ? dnnl::algorithm::pooling_max
                : a.get_int("count_include_pad", 1) != 0
                    ? dnnl::algorithm::pooling_avg_include_padding
                    : dnnl::algorithm::pooling_avg_exclude_padding;
  p.src = detail::box_sizes(x.box);
  p.dst = detail::box_sizes(call.piece->output);
  p.strides = {stride[0], stride[1]};
  p.kernel = {kernel[0], kernel[1]};
  p.dilation = {dil[0] - 1, dil[1] - 1};
  p.pad_l = {x.pad_lo[2], x.pad_lo[3]};
  p.pad_r = {x.pad_hi[2], x.pad_hi[3]};
  return p;
}

struct PoolEntry {
  dnnl::pooling_v2_forward primitive;
  dnnl::memory::desc src, dst, scratch;
};

class PoolKernel final : public Kernel {
 public:
  std::string_view name() const override { return "onednn_pool"; }

  bool handles(KernelCall const& call) const override {
    auto p = analyze(call);
    return p && entry(*p) != nullptr;
  }

  Status run(KernelCall const& call) const override {
    auto p = analyze(call);
    std::shared_ptr<PoolEntry const> e = p ? entry(*p) : nullptr;
    if (!e) return Error(ErrorCode::unsupported, "onednn_pool: not a pooling piece it handles");
    CLEAVE_CHECK_OK(detail::check_data(name(), call));
    return detail::execute(name(), e->primitive, e->scratch,
                           {{DNNL_ARG_SRC, detail::wrap(e->src, call.inputs[0].data)},
                            {DNNL_ARG_DST, detail::wrap(e->dst, call.output.data)}});
  }

 private:
  std::shared_ptr<PoolEntry const> entry(PoolShape const& p) const {
    std::string key = detail::make_key("pool", {{static_cast<std::int64_t>(p.algorithm)},
                                                p.src,
                                                p.dst,
                                                p.strides,
                                                p.kernel,
                                                p.dilation,
                                                p.pad_l,
                                                p.pad_r});
    return cache_.get(key, [&] {
      using Tag = dnnl::memory::format_tag;
      auto e = std::make_shared<PoolEntry>();
      e->src = dnnl::memory::desc(p.src, dnnl::memory::data_type::f32, Tag::nchw);
      e->dst = dnnl::memory::desc(p.dst, dnnl::memory::data_type::f32, Tag::nchw);
      dnnl::pooling_v2_forward::desc desc(dnnl::prop_kind::forward_inference, p.algorithm, e->src,
                                          e->dst, p.strides, p.kernel, p.dilation, p.pad_l,
                                          p.pad_r);
      dnnl::pooling_v2_forward::primitive_desc pd(desc, detail::default_attr(),
                                                  detail::cpu_engine());
      e->scratch = pd.scratchpad_desc();
      e->primitive = dnnl::pooling_v2_forward(pd);
      return std::shared_ptr<PoolEntry const>(std::move(e));
    });
  }

  detail::PrimitiveCache<PoolEntry> cache_;
};

}  // namespace

std::unique_ptr<Kernel> make_pool_kernel() {
  return std::make_unique<PoolKernel>();
}

}  // namespace cleave::runtime
