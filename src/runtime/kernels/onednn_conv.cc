// conv2d, conv3d and their gradients on oneDNN's convolution (forward, backward data, backward
// weights) on a piece's blocks as they lie (NCHW or NCDHW, OIHW / GOIHW or OIDHW / GOIDHW).
//
// The halo and padding of a piece become oneDNN's explicit asymmetric padding. Forward and
// backward weights: the X block starts at the unclipped read's first row minus pad_lo, so the
// piece is the convolution of the block with padding (pad_lo, pad_hi); a piece with a slice
// [a, b) of the kernel taps (a split reduction) is a convolution with a (b - a)-tap kernel, the
// shift a*d absorbed by the block's start. Backward data is the adjoint of the forward
// convolution whose input is the dX block: dY block row y' feeds dX block rows
// y'*s + t*d - p with p = pt + h0 - y0*s; the right padding follows from the blocks' sizes.
//
// Groups: a piece inside one group is a plain convolution on its channels; a piece of several
// whole groups is a grouped one; anything else (several groups, part of each) is left to the
// interpreter.
#include <atomic>
#include <chrono>
#include <cmath>
#include <mutex>
#include <optional>
#include <utility>

#include "runtime/kernels/onednn_kernels.h"
#include "runtime/kernels/onednn_util.h"

namespace cleave::runtime {
namespace {

using detail::Dims;
using Prop = dnnl::prop_kind;

enum class Direction { forward, backward_data, backward_weights };

// One convolution in oneDNN's terms; i, o, k: the input's, output's and kernel's spatial extents
// (height, width, or depth, height, width).
struct ConvShape {
  Direction direction = Direction::forward;
  std::int64_t n = 0, ic = 0, oc = 0, groups = 1;
  Dims i, o, k;
  Dims strides, dilates, pad_l, pad_r;  // dilates in oneDNN's convention (0: none)
  // Backward data: the dX block's stored spatial extents, more than i when its last positions
  // lie past every window (they get zeros; oneDNN takes no negative right padding); else empty.
  Dims i_store;
  // Taps that read only padding trimmed (trim_taps): the weight block's stored kernel extents
  // and, per axis, the first tap kept; k is then the kept taps' extents. Empty: none trimmed.
  Dims k_store, tap_lo;
  // Positions of the call's inputs: src/diff_src, weights/diff_weights, dst/diff_dst (-1: the
  // call's output).
  int src = -1, weights = -1, dst = -1;

  bool padded_store() const { return !i_store.empty() && i_store != i; }
  bool trimmed() const { return !k_store.empty() && k_store != k; }
};

// The taps [lo, hi) of a kernel of k taps (dilation d) that read an input position (of i, after
// pl positions of padding, with stride s) at some output position of o; lo >= hi when none does.
std::pair<std::int64_t, std::int64_t> taps_read(std::int64_t i, std::int64_t o, std::int64_t k,
                                                std::int64_t s, std::int64_t d, std::int64_t pl) {
  std::int64_t lo = k, hi = 0;
  for (std::int64_t t = 0; t < k; ++t)
    for (std::int64_t y = 0; y < o; ++y)
      if (std::int64_t at = y * s + t * d - pl; at >= 0 && at < i) {
        lo = std::min(lo, t);
        hi = t + 1;
        break;
      }
  return {lo, hi};
}

// Axis a of a convolution keeps only the taps that read the input somewhere: the others read
// padding (zeros) at every output position, so they add nothing to the output or to dX, and their
// dW is 0. A 3x3 convolution with padding 1 on a 1x1 map (the last stage of a ResNet on 32x32
// images) is its centre tap alone, a ninth of the work; oneDNN computes every tap. Needs c.i, c.o,
// c.k, c.strides and c.pad_l of the axis; sets its k, pad_l and (when `right` is given, the
// direction's right padding, which must stay >= 0) pad_r, and records the trim. An axis whose
// trim would need negative padding keeps every tap.
void trim_taps(ConvShape& c, std::size_t a, std::int64_t dilation, std::int64_t* right) {
  auto [lo, hi] = taps_read(c.i[a], c.o[a], c.k[a], c.strides[a], dilation, c.pad_l[a]);
  if (lo >= hi || (lo == 0 && hi == c.k[a])) return;
  std::int64_t pl = c.pad_l[a] - lo * dilation;
  std::int64_t pr = (c.o[a] - 1) * c.strides[a] + (hi - lo - 1) * dilation + 1 - c.i[a] - pl;
  if (pl < 0 || (right != nullptr && pr < 0)) return;
  if (c.k_store.empty()) {
    c.k_store = c.k;
    c.tap_lo.assign(c.k.size(), 0);
  }
  c.tap_lo[a] = lo;
  c.k[a] = hi - lo;
  c.pad_l[a] = pl;
  if (right != nullptr) *right = pr;
}

struct Geometry {
  Dims s, d, p;  // per spatial axis: stride, dilation, leading pad
  std::int64_t groups;
};

Geometry geometry(ir::Attrs const& a, std::size_t spatial) {
  Dims one(spatial, 1), zero(spatial, 0);
  auto pad = a.get_ints("padding", zero);
  pad.resize(spatial);  // the leading pads of the 2n form
  return {a.get_ints("stride", one), a.get_ints("dilation", one), pad, a.get_int("groups", 1)};
}

bool full(tdl::Interval iv, std::int64_t extent) {
  return iv.lo == 0 && iv.hi == extent;
}

// Groups of a piece whose group-sliced channels are `out` (channels per group `per_out`) and
// whose other channel block holds `in_size` channels of `per_in` per group: 1 inside one group,
// the number of whole groups, or nothing.
std::optional<std::int64_t> piece_groups(std::int64_t groups, tdl::Interval out,
                                         std::int64_t per_out, tdl::Interval in_other,
                                         std::int64_t per_in) {
  if (groups == 1 || out.lo / per_out == (out.hi - 1) / per_out) return 1;
  if (out.lo % per_out != 0 || out.hi % per_out != 0 || !full(in_other, per_in))
    return std::nullopt;
  return out.size() / per_out;
}

// The sizes of a box's spatial dimensions (2 on).
Dims spatial_sizes(tdl::Box const& box) {
  Dims out;
  for (std::size_t d = 2; d < box.size(); ++d)
    out.push_back(box[d].size());
  return out;
}

Dims spatial_of(std::vector<std::int64_t> const& v) {
  return Dims(v.begin() + 2, v.end());
}

std::optional<Direction> direction_of(std::string const& type) {
  for (std::string conv : {"conv2d", "conv3d"}) {
    if (type == conv) return Direction::forward;
    if (type == conv + "_grad_input") return Direction::backward_data;
    if (type == conv + "_grad_weight") return Direction::backward_weights;
  }
  return std::nullopt;
}

std::optional<ConvShape> analyze(KernelCall const& call) {
  if (call.op == nullptr) return std::nullopt;
  auto dir_of = direction_of(call.op->type);
  if (!dir_of) return std::nullopt;
  Direction dir = *dir_of;
  if (call.piece == nullptr || call.graph == nullptr || call.bound == nullptr ||
      call.inputs.size() != 2 || call.piece->inputs.size() != 2)
    return std::nullopt;
  std::size_t const rank = call.piece->output.size();
  if (rank != 4 && rank != 5) return std::nullopt;
  for (auto const& r : call.piece->inputs)
    if (r.empty() || r.box.size() != rank) return std::nullopt;
  std::size_t const spatial = rank - 2;
  Geometry g = geometry(call.op->attrs, spatial);
  auto const& in0 = call.piece->inputs[0];
  auto const& in1 = call.piece->inputs[1];
  auto const& out = call.piece->output;
  auto const& w_shape =
      call.graph->tensor(call.op->inputs[dir == Direction::backward_weights ? 0 : 1]).type.shape;
  ConvShape c;
  c.direction = dir;
  c.strides = g.s;
  for (auto d : g.d)
    c.dilates.push_back(d - 1);
  // A region's padding on dims 0..1 (batch, channels) never occurs; only X may be padded.
  auto no_pad = [](tdl::Region const& r) { return !r.has_padding(); };
  auto channel_pad = [](tdl::Region const& r) {
    return r.pad_lo[0] || r.pad_lo[1] || r.pad_hi[0] || r.pad_hi[1];
  };
  if (dir == Direction::forward) {
    // X [n, ci, spatial..] (padded), W [co, ci, kernel..], Y [n, co, spatial..].
    if (!no_pad(in1) || channel_pad(in0)) return std::nullopt;
    std::int64_t cog = w_shape[0] / g.groups;
    auto groups = piece_groups(g.groups, out[1], cog, in1.box[1], w_shape[1]);
    if (!groups) return std::nullopt;
    c.groups = *groups;
    c.n = out[0].size();
    c.oc = out[1].size();
    c.ic = in0.box[1].size();
    c.i = spatial_sizes(in0.box);
    c.o = spatial_sizes(out);
    c.k = spatial_sizes(in1.box);
    if (c.ic != c.groups * in1.box[1].size() || in1.box[0].size() != c.oc) return std::nullopt;
    c.pad_l = spatial_of(in0.pad_lo);
    c.pad_r = spatial_of(in0.pad_hi);
    for (std::size_t a = 0; a < spatial; ++a)
      trim_taps(c, a, g.d[a], &c.pad_r[a]);
    c.src = 0;
    c.weights = 1;
    c.dst = -1;
  } else if (dir == Direction::backward_weights) {
    // dY [n, co, spatial..], X [n, ci, spatial..] (padded), dW [co, ci, kernel..].
    if (!no_pad(in0) || channel_pad(in1)) return std::nullopt;
    std::int64_t cog = w_shape[1] / g.groups;  // dY's channels per group
    std::int64_t cig = call.graph->tensor(call.op->outputs[0]).type.shape[1];
    auto groups = piece_groups(g.groups, out[0], cog, out[1], cig);
    if (!groups) return std::nullopt;
    c.groups = *groups;
    c.n = in0.box[0].size();
    c.oc = out[0].size();
    c.ic = in1.box[1].size();
    c.i = spatial_sizes(in1.box);
    c.o = spatial_sizes(in0.box);
    c.k = spatial_sizes(out);
    if (c.ic != c.groups * out[1].size() || in0.box[1].size() != c.oc) return std::nullopt;
    c.pad_l = spatial_of(in1.pad_lo);
    c.pad_r = spatial_of(in1.pad_hi);
    for (std::size_t a = 0; a < spatial; ++a)
      trim_taps(c, a, g.d[a], &c.pad_r[a]);
    c.dst = 0;
    c.src = 1;
    c.weights = -1;
  } else {
    // dY [n, co, spatial..] (its padding: zeros the adjoint supplies), W [co, ci, kernel..]
    // (padded past the kernel by the strided form's phase taps: zeros the adjoint never needs),
    // dX out.
    if (channel_pad(in1)) return std::nullopt;
    // Every kernel tap in the piece: a split of the taps is left to the interpreter.
    for (std::size_t d = 2; d < rank; ++d)
      if (!full(in1.box[d], w_shape[d])) return std::nullopt;
    auto const& bound = *call.bound;
    for (std::size_t d = static_cast<std::size_t>(bound.num_parallel()); d < bound.dims().size();
         ++d)
      if (bound.dims()[d].name != "co" && !full(call.piece->iter_box[d], bound.dims()[d].extent))
        return std::nullopt;
    std::int64_t cig = w_shape[1];
    std::int64_t cog = w_shape[0] / g.groups;
    auto groups = piece_groups(g.groups, out[1], cig, in1.box[1], cig);
    if (!groups) return std::nullopt;
    if (*groups > 1 && in1.box[0].size() != *groups * cog) return std::nullopt;
    c.groups = *groups;
    c.n = out[0].size();
    c.ic = out[1].size();
    c.oc = in0.box[1].size();
    c.i = spatial_sizes(out);
    c.o = spatial_sizes(in0.box);
    c.k = spatial_of(w_shape);
    if (in1.box[0].size() != c.oc || c.ic != c.groups * in1.box[1].size()) return std::nullopt;
    c.i_store = c.i;
    c.pad_l.assign(spatial, 0);
    for (std::size_t a = 0; a < spatial; ++a) {
      c.pad_l[a] = g.p[a] + out[a + 2].lo - in0.box[a + 2].lo * g.s[a];
      if (c.pad_l[a] >= 0) trim_taps(c, a, g.d[a], nullptr);
      std::int64_t pl = c.pad_l[a];
      std::int64_t pr = (c.o[a] - 1) * g.s[a] + (c.k[a] - 1) * g.d[a] + 1 - c.i[a] - pl;
      if (pr < 0) c.i[a] += std::exchange(pr, 0);
      if (c.i[a] <= 0) return std::nullopt;
      c.pad_r.push_back(pr);
    }
    c.dst = 0;
    c.weights = 1;
    c.src = -1;
  }
  for (auto p : c.pad_l)
    if (p < 0) return std::nullopt;
  return c;
}

// One way to run a convolution: the primitive on the blocks' plain layouts, or on the layouts it
// prefers (blocked), converted through staging buffers.
struct ConvVariant {
  dnnl::primitive primitive;
  detail::Staged src, weights, dst;  // src/diff_src, weights/diff_weights, dst/diff_dst
  dnnl::memory::desc scratch;
  bool reference = false;  // oneDNN's reference implementation ("ref:any")
};

ConvVariant make_variant(ConvShape const& c, bool blocked) {
  using Tag = dnnl::memory::format_tag;
  using DT = dnnl::memory::data_type;
  auto with = [](Dims lead, Dims const& rest) {
    lead.insert(lead.end(), rest.begin(), rest.end());
    return lead;
  };
  bool three = c.i.size() == 3;
  dnnl::memory::dims sdims = with({c.n, c.ic}, c.i), ddims = with({c.n, c.oc}, c.o);
  dnnl::memory::dims wdims = with({c.oc, c.ic}, c.k);
  Tag act = three ? Tag::ncdhw : Tag::nchw;
  Tag wtag = three ? Tag::oidhw : Tag::oihw;
  if (c.groups > 1) {
    wdims = with({c.groups, c.oc / c.groups, c.ic / c.groups}, c.k);
    wtag = three ? Tag::goidhw : Tag::goihw;
  }
  dnnl::memory::desc src(sdims, DT::f32, act), dst(ddims, DT::f32, act);
  if (c.padded_store()) {
    // The stored block is dense over i_store; the convolution sees its first i positions.
    Dims strides(sdims.size());
    std::int64_t step = 1;
    for (std::size_t d = sdims.size(); d-- > 2;) {
      strides[d] = step;
      step *= c.i_store[d - 2];
    }
    strides[1] = step;
    strides[0] = step * c.ic;
    src = dnnl::memory::desc(sdims, DT::f32, strides);
  }
  dnnl::memory::desc weights(wdims, DT::f32, wtag);
  if (c.trimmed()) {
    // The kept taps of the dense block over k_store: its strides, the kept extents.
    Dims strides(wdims.size());
    std::int64_t step = 1;
    for (std::size_t d = c.k_store.size(); d-- > 0;) {
      strides[wdims.size() - c.k_store.size() + d] = step;
      step *= c.k_store[d];
    }
    for (std::size_t d = wdims.size() - c.k_store.size(); d-- > 0;) {
      strides[d] = step;
      step *= wdims[d];
    }
    weights = dnnl::memory::desc(wdims, DT::f32, strides);
  }
  dnnl::memory::desc src_p = src, dst_p = dst, weights_p = weights;
  if (blocked) {
    src_p = dnnl::memory::desc(sdims, DT::f32, Tag::any);
    dst_p = dnnl::memory::desc(ddims, DT::f32, Tag::any);
    weights_p = dnnl::memory::desc(wdims, DT::f32, Tag::any);
  }
  auto algo = dnnl::algorithm::convolution_direct;
  auto const& eng = detail::cpu_engine();
  auto attr = detail::default_attr();
  Prop prop = c.direction == Direction::forward ? Prop::forward_inference : Prop::forward_training;
  dnnl::convolution_forward::primitive_desc fwd(
      dnnl::convolution_forward::desc(prop, algo, src_p, weights_p, dst_p, c.strides, c.dilates,
                                      c.pad_l, c.pad_r),
      attr, eng);
  ConvVariant v;
  if (c.direction == Direction::forward) {
    v.scratch = fwd.scratchpad_desc();
    v.reference = std::string_view(fwd.impl_info_str()).starts_with("ref");
    v.primitive = dnnl::convolution_forward(fwd);
    v.src = detail::make_staged(src, fwd.src_desc(), true);
    v.weights = detail::make_staged(weights, fwd.weights_desc(), true);
    v.dst = detail::make_staged(dst, fwd.dst_desc(), false);
  } else if (c.direction == Direction::backward_data) {
    dnnl::convolution_backward_data::primitive_desc pd(
        dnnl::convolution_backward_data::desc(algo, src_p, weights_p, dst_p, c.strides, c.dilates,
                                              c.pad_l, c.pad_r),
        attr, eng, fwd);
    v.scratch = pd.scratchpad_desc();
    v.reference = std::string_view(pd.impl_info_str()).starts_with("ref");
    v.primitive = dnnl::convolution_backward_data(pd);
    v.src = detail::make_staged(src, pd.diff_src_desc(), false);
    v.weights = detail::make_staged(weights, pd.weights_desc(), true);
    v.dst = detail::make_staged(dst, pd.diff_dst_desc(), true);
  } else {
    dnnl::convolution_backward_weights::primitive_desc pd(
        dnnl::convolution_backward_weights::desc(algo, src_p, weights_p, dst_p, c.strides,
                                                 c.dilates, c.pad_l, c.pad_r),
        attr, eng, fwd);
    v.scratch = pd.scratchpad_desc();
    v.reference = std::string_view(pd.impl_info_str()).starts_with("ref");
    v.primitive = dnnl::convolution_backward_weights(pd);
    v.src = detail::make_staged(src, pd.src_desc(), true);
    v.weights = detail::make_staged(weights, pd.diff_weights_desc(), false);
    v.dst = detail::make_staged(dst, pd.diff_dst_desc(), true);
  }
  return v;
}

// The variants of one convolution and which one runs. Which is faster (a slower kernel on plain
// layouts, or oneDNN's blocked kernel plus the reorders) depends on the shape, the direction and
// the threads, and oneDNN cannot tell; so the first call runs each variant twice, timed, in
// turns, and the faster one runs from then on. (Timing one variant per call over the first calls
// let a slow variant, e.g. a 120 ms reference kernel beside a 2 ms blocked one, run in every
// other step of a run's first six.) The two round differently, so a timed choice can change a
// run's numbers from one run to the next: KernelChoice::deterministic never times.
struct ConvEntry {
  static constexpr int trials = 2;    // timed runs of each variant on the first call
  std::vector<ConvVariant> variants;  // plain first; blocked when oneDNN prefers other layouts
  mutable std::mutex mutex;
  mutable std::atomic<int> chosen{-1};
};

class ConvKernel final : public Kernel {
 public:
  explicit ConvKernel(KernelChoice choice) : choice_(choice) {}
  std::string_view name() const override { return "onednn_conv"; }

  bool handles(KernelCall const& call) const override {
    auto c = analyze(call);
    return c && entry(*c) != nullptr;
  }

  Status run(KernelCall const& call) const override {
    auto c = analyze(call);
    std::shared_ptr<ConvEntry const> e = c ? entry(*c) : nullptr;
    if (!e) return Error(ErrorCode::unsupported, "onednn_conv: not a convolution piece it handles");
    CLEAVE_CHECK_OK(detail::check_data(name(), call));
    // dX rows past every window, or dW's trimmed taps, are zeros the convolution does not write.
    if (c->padded_store() || (c->trimmed() && c->direction == Direction::backward_weights))
      std::fill(call.output.data, call.output.data + tdl::box_volume(call.piece->output), 0.f);
    int v = e->chosen.load(std::memory_order_acquire);
    if (v >= 0) return run_variant(call, *c, e->variants[static_cast<std::size_t>(v)]);
    std::lock_guard lock(e->mutex);
    if (e->chosen.load() >= 0)
      return run_variant(call, *c, e->variants[static_cast<std::size_t>(e->chosen.load())]);
    // Every variant writes the whole output: the last one run leaves the call's result.
    double best[2] = {INFINITY, INFINITY};
    for (int t = 0; t < ConvEntry::trials; ++t)
      for (std::size_t i = 0; i < e->variants.size(); ++i) {
        auto t0 = std::chrono::steady_clock::now();
        CLEAVE_CHECK_OK(run_variant(call, *c, e->variants[i]));
        double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        best[i] = std::min(best[i], s);
      }
    e->chosen.store(best[1] < best[0] ? 1 : 0, std::memory_order_release);
    return Status::ok();
  }

 private:
  Status run_variant(KernelCall const& call, ConvShape const& c, ConvVariant const& e) const {
    auto data = [&](int input) {
      return input < 0 ? static_cast<float const*>(call.output.data)
                       : call.inputs[static_cast<std::size_t>(input)].data;
    };
    // The kept taps start tap_lo into the weight block (dense over k_store).
    std::int64_t w_offset = 0;
    for (std::size_t a = 0, step = 1; a < c.tap_lo.size(); ++a) {
      std::size_t d = c.tap_lo.size() - 1 - a;
      w_offset += c.tap_lo[d] * static_cast<std::int64_t>(step);
      step *= static_cast<std::size_t>(c.k_store[d]);
    }
    // Which of the three is the call's output.
    Direction d = c.direction;
    bool src_in = d != Direction::backward_data, weights_in = d != Direction::backward_weights;
    bool dst_in = d != Direction::forward;
    CLEAVE_TRY(dnnl::memory src, detail::stage_in(name(), e.src, data(c.src), 0, src_in));
    CLEAVE_TRY(dnnl::memory weights,
               detail::stage_in(name(), e.weights, data(c.weights) + w_offset, 1, weights_in));
    CLEAVE_TRY(dnnl::memory dst, detail::stage_in(name(), e.dst, data(c.dst), 2, dst_in));
    int src_arg = d == Direction::backward_data ? DNNL_ARG_DIFF_SRC : DNNL_ARG_SRC;
    int weights_arg = d == Direction::backward_weights ? DNNL_ARG_DIFF_WEIGHTS : DNNL_ARG_WEIGHTS;
    int dst_arg = d == Direction::forward ? DNNL_ARG_DST : DNNL_ARG_DIFF_DST;
    CLEAVE_CHECK_OK(detail::execute(name(), e.primitive, e.scratch,
                                    {{src_arg, src}, {weights_arg, weights}, {dst_arg, dst}}));
    if (!src_in) return detail::stage_out(name(), e.src, src, call.output.data);
    if (!weights_in)
      return detail::stage_out(name(), e.weights, weights, call.output.data + w_offset);
    return detail::stage_out(name(), e.dst, dst, call.output.data);
  }

  std::shared_ptr<ConvEntry const> entry(ConvShape const& c) const {
    std::string key = detail::make_key(
        "conv", {{static_cast<std::int64_t>(c.direction), c.n, c.ic, c.oc, c.groups},
                 c.i,
                 c.o,
                 c.k,
                 c.i_store,
                 c.strides,
                 c.dilates,
                 c.pad_l,
                 c.pad_r,
                 c.k_store,
                 c.tap_lo});
    return cache_.get(key, [&] {
      auto e = std::make_shared<ConvEntry>();
      // The plain variant may be refused (strided dX blocks); the blocked one then runs alone.
      try {
        e->variants.push_back(make_variant(c, /*blocked=*/false));
      } catch (dnnl::error const&) {
      }
      ConvVariant blocked = make_variant(c, /*blocked=*/true);
      // oneDNN's reference kernel on plain layouts (strided dX blocks, some 1x1 strided
      // backward-data shapes) is 10-60x slower than its blocked kernel plus reorders: not tried.
      if (!e->variants.empty() && e->variants[0].reference && !blocked.reference)
        e->variants.clear();
      if (e->variants.empty() || blocked.src.staged() || blocked.weights.staged() ||
          blocked.dst.staged())
        e->variants.push_back(std::move(blocked));
      // Deterministic: the first variant, on the data's own (plain) layouts where oneDNN has a
      // kernel for them.
      if (e->variants.size() == 1 || choice_ == KernelChoice::deterministic) e->chosen = 0;
      return std::shared_ptr<ConvEntry const>(std::move(e));
    });
  }

  KernelChoice choice_;
  detail::PrimitiveCache<ConvEntry> cache_;
};

}  // namespace

std::unique_ptr<Kernel> make_conv_kernel(KernelChoice choice) {
  return std::make_unique<ConvKernel>(choice);
}

}  // namespace cleave::runtime
