// Batch norm's ops (bn_mean, bn_var, bn_apply, bn_channel_sum and the gradients of docs/tdl.md)
// as loops over (n, c) planes: a plane of one sample and channel is contiguous in an NCHW block
// and shares the channel's statistics and parameters, so each op is one pass computing the
// channel's factors once and a tight loop over the plane (sums in double, in four independent
// accumulators). The expression kernel evaluates the same statements node by node over short rows
// (8x8 maps, 2x2 in the last stage of a ResNet on 32x32 images): MobileNet-v2's 52 batch norms
// (32x32 images, batch 16) took 130 ms of a 160 ms step there. A piece that splits n or the
// spatial dimensions of a channel sum writes its partial sum, as the statement says. A piece of
// 16K elements or more is split among the worker's OpenMP threads (`cleave run --threads`): a
// channel sum by channels, an X-shaped op by planes; each channel's sum adds the same terms in the
// same order whatever the threads, so the results do not depend on them.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "runtime/kernels/onednn_kernels.h"
#include "runtime/kernels/onednn_util.h"

namespace cleave::runtime {
namespace {

enum class BnOp {
  mean,              // M[c] = sum X * inv
  var,               // V[c] = sum (X - M)^2 * inv
  apply,             // Y = (X - M) * s * G + B, s = rsqrt(V + eps)
  channel_sum,       // dB[c] = sum dY
  apply_grad_input,  // dX = dY * G * s
  apply_grad_mean,   // dM[c] = -sum dY * G * s
  apply_grad_var,    // dV[c] = sum dY * G * (X - M) * -0.5 * (V + eps)^-1.5
  apply_grad_gamma,  // dG[c] = sum dY * (X - M) * s
  var_grad_input,    // dX = dV * 2 * (X - M) * inv
  var_grad_mean,     // dM[c] = sum (X - M) * dV * -2 * inv
  mean_grad_input    // dX = dM * inv
};

struct BnInfo {
  BnOp op;
  char const* letters;  // the inputs: X and D (dY) X-shaped, the others [C]
  bool channel;         // a per-channel sum (else X-shaped)
};

std::optional<BnInfo> bn_info(std::string const& type) {
  static std::pair<char const*, BnInfo> const ops[] = {
      {"bn_mean", {BnOp::mean, "X", true}},
      {"bn_var", {BnOp::var, "XM", true}},
      {"bn_apply", {BnOp::apply, "XMVGB", false}},
      {"bn_channel_sum", {BnOp::channel_sum, "D", true}},
      {"bn_apply_grad_input", {BnOp::apply_grad_input, "XMVGD", false}},
      {"bn_apply_grad_mean", {BnOp::apply_grad_mean, "XMVGD", true}},
      {"bn_apply_grad_var", {BnOp::apply_grad_var, "XMVGD", true}},
      {"bn_apply_grad_gamma", {BnOp::apply_grad_gamma, "XMVD", true}},
      {"bn_var_grad_input", {BnOp::var_grad_input, "XMv", false}},
      {"bn_var_grad_mean", {BnOp::var_grad_mean, "XMv", true}},
      {"bn_mean_grad_input", {BnOp::mean_grad_input, "Xm", false}}};
  for (auto const& [name, info] : ops)
    if (type == name) return info;
  return std::nullopt;
}

bool x_shaped(char letter) {
  return letter == 'X' || letter == 'D';
}

// Sum of f(i) over [0, n) in double, four sums at a time.
template <typename F> double sum(std::int64_t n, F f) {
  double acc[4] = {0, 0, 0, 0};
  std::int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (int k = 0; k < 4; ++k)
      acc[k] += f(i + k);
  for (; i < n; ++i)
    acc[0] += f(i);
  return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

class BatchNormKernel final : public Kernel {
 public:
  std::string_view name() const override { return "loop_batch_norm"; }

  bool handles(KernelCall const& call) const override { return plan(call).has_value(); }

  Status run(KernelCall const& call) const override {
    auto p = plan(call);
    if (!p) return Error(ErrorCode::unsupported, "loop_batch_norm: not a batch-norm piece");
    CLEAVE_CHECK_OK(detail::check_data(name(), call));
    compute(call, *p);
    return Status::ok();
  }

 private:
  struct Plan {
    BnInfo info;
    tdl::Box box;            // the X-shaped elements the piece covers: [n, c, spatial...]
    std::int64_t plane = 1;  // elements of one (n, c) plane
    double inv = 0;          // 1 / elements per channel of the whole tensor
  };

  // The piece's geometry, where every X-shaped input is read densely as the box and every [C]
  // input covers the box's channels.
  static std::optional<Plan> plan(KernelCall const& call) {
    if (call.op == nullptr || call.piece == nullptr || call.graph == nullptr) return std::nullopt;
    auto info = bn_info(call.op->type);
    std::string letters = info ? info->letters : "";
    if (!info || call.inputs.size() != letters.size() ||
        call.piece->inputs.size() != letters.size() || !call.piece->output_exact)
      return std::nullopt;
    Plan p{*info, {}, 1, 0};
    // An X-shaped output is the box; a channel sum's box is what its X-shaped inputs read.
    p.box = call.piece->output;
    for (std::size_t i = 0; i < letters.size() && info->channel; ++i)
      if (x_shaped(letters[i]) && !call.piece->inputs[i].empty()) p.box = call.piece->inputs[i].box;
    if (p.box.size() < 2) return std::nullopt;
    for (std::size_t i = 0; i < letters.size(); ++i) {
      auto const& r = call.piece->inputs[i];
      if (r.has_padding()) return std::nullopt;
      if (r.empty()) continue;  // an input the statement does not read (X giving only a shape)
      if (x_shaped(letters[i]) ? r.box != p.box : r.box != tdl::Box{p.box[1]}) return std::nullopt;
    }
    if (info->channel && call.piece->output != tdl::Box{p.box[1]}) return std::nullopt;
    for (std::size_t d = 2; d < p.box.size(); ++d)
      p.plane *= p.box[d].size();
    auto const& x = call.graph->tensor(call.op->inputs[0]).type.shape;
    p.inv = static_cast<double>(x[1]) / static_cast<double>(ir::num_elements(x));
    return p;
  }

  // The call's blocks by letter (null where the op has no such input) and, where it reads V,
  // 1 / sqrt(V + eps) per channel (computed once: a plane of layer 4 of a ResNet on 32x32 images
  // is one element, and a square root per plane was most of the op).
  struct Args {
    float const *x, *dy, *m, *v, *g, *b, *dv, *dm;
    float* out;
    double const* s;
  };

  static constexpr bool is_channel_sum(BnOp op) {
    return op == BnOp::mean || op == BnOp::var || op == BnOp::channel_sum ||
           op == BnOp::apply_grad_mean || op == BnOp::apply_grad_var ||
           op == BnOp::apply_grad_gamma || op == BnOp::var_grad_mean;
  }

  static void compute(KernelCall const& call, Plan const& p) {
    auto input = [&](char letter) -> float const* {
      char const* at = std::strchr(p.info.letters, letter);
      if (at == nullptr) return nullptr;
      auto i = static_cast<std::size_t>(at - p.info.letters);
      return call.piece->inputs[i].empty() ? nullptr : call.inputs[i].data;
    };
    Args a{input('X'), input('D'), input('M'), input('V'),       input('G'),
           input('B'), input('v'), input('m'), call.output.data, nullptr};
    std::int64_t channels = p.box[1].size();
    std::vector<double> s;
    if (a.v != nullptr) {
      double eps = call.op->attrs.get_float("eps", 1e-5);
      s.resize(static_cast<std::size_t>(channels));
      for (std::int64_t c = 0; c < channels; ++c)
        s[static_cast<std::size_t>(c)] = 1.0 / std::sqrt(static_cast<double>(a.v[c]) + eps);
      a.s = s.data();
    }
    switch (p.info.op) {
    case BnOp::mean:
      return run<BnOp::mean>(a, p);
    case BnOp::var:
      return run<BnOp::var>(a, p);
    case BnOp::apply:
      return run<BnOp::apply>(a, p);
    case BnOp::channel_sum:
      return run<BnOp::channel_sum>(a, p);
    case BnOp::apply_grad_input:
      return run<BnOp::apply_grad_input>(a, p);
    case BnOp::apply_grad_mean:
      return run<BnOp::apply_grad_mean>(a, p);
    case BnOp::apply_grad_var:
      return run<BnOp::apply_grad_var>(a, p);
    case BnOp::apply_grad_gamma:
      return run<BnOp::apply_grad_gamma>(a, p);
    case BnOp::var_grad_input:
      return run<BnOp::var_grad_input>(a, p);
    case BnOp::var_grad_mean:
      return run<BnOp::var_grad_mean>(a, p);
    case BnOp::mean_grad_input:
      return run<BnOp::mean_grad_input>(a, p);
    }
  }

  // The channels' sums, or the X-shaped output, split among the worker's threads from 16K
  // elements on: a channel sum by channels (each channel's total adds its planes in n order, as on
  // one thread, so the result does not depend on the threads), an X-shaped output by planes.
  template <BnOp Op> static void run(Args const& a, Plan const& p) {
    std::int64_t channels = p.box[1].size(), batch = p.box[0].size();
    int threads = detail::threads_for(batch * channels * p.plane, std::int64_t{1} << 14);
    if constexpr (is_channel_sum(Op)) {
      detail::parallel_for(channels, threads, [&](std::int64_t c) {
        double total = 0;
        for (std::int64_t n = 0; n < batch; ++n)
          total += plane_op<Op>(a, p, n, c);
        a.out[c] = static_cast<float>(total);
      });
    } else {
      detail::parallel_for(batch * channels, threads,
                           [&](std::int64_t i) { plane_op<Op>(a, p, i / channels, i % channels); });
    }
  }

  // The op on the plane of sample n and channel c: its sum (a channel sum), or its part of the
  // output written (an X-shaped op; returns 0).
  template <BnOp Op>
  static double plane_op(Args const& a, Plan const& p, std::int64_t n, std::int64_t c) {
    std::int64_t plane = p.plane;
    std::int64_t at = (n * p.box[1].size() + c) * plane;
    float const* xp = a.x ? a.x + at : nullptr;
    float const* dyp = a.dy ? a.dy + at : nullptr;
    float* op = is_channel_sum(Op) ? nullptr : a.out + at;
    double s = a.s ? a.s[c] : 0.0;
    auto mc = a.m ? a.m[c] : 0.f;
    if constexpr (Op == BnOp::mean) {
      return sum(plane, [&](auto i) { return xp[i]; }) * p.inv;
    } else if constexpr (Op == BnOp::var) {
      return sum(plane,
                 [&](auto i) {
                   float d = xp[i] - mc;
                   return static_cast<double>(d) * d;
                 }) *
             p.inv;
    } else if constexpr (Op == BnOp::apply) {
      auto k = static_cast<float>(s * a.g[c]);
      float bc = a.b[c];
      for (std::int64_t i = 0; i < plane; ++i)
        op[i] = (xp[i] - mc) * k + bc;
    } else if constexpr (Op == BnOp::channel_sum) {
      return sum(plane, [&](auto i) { return dyp[i]; });
    } else if constexpr (Op == BnOp::apply_grad_input) {
      auto k = static_cast<float>(s * a.g[c]);
      for (std::int64_t i = 0; i < plane; ++i)
        op[i] = dyp[i] * k;
    } else if constexpr (Op == BnOp::apply_grad_mean) {
      return -sum(plane, [&](auto i) { return dyp[i]; }) * a.g[c] * s;
    } else if constexpr (Op == BnOp::apply_grad_var) {
      return sum(plane, [&](auto i) { return static_cast<double>(dyp[i]) * (xp[i] - mc); }) *
             a.g[c] * -0.5 * s * s * s;
    } else if constexpr (Op == BnOp::apply_grad_gamma) {
      return sum(plane, [&](auto i) { return static_cast<double>(dyp[i]) * (xp[i] - mc); }) * s;
    } else if constexpr (Op == BnOp::var_grad_input) {
      auto k = static_cast<float>(a.dv[c] * 2 * p.inv);
      for (std::int64_t i = 0; i < plane; ++i)
        op[i] = (xp[i] - mc) * k;
    } else if constexpr (Op == BnOp::var_grad_mean) {
      return sum(plane, [&](auto i) { return xp[i] - mc; }) * a.dv[c] * -2 * p.inv;
    } else if constexpr (Op == BnOp::mean_grad_input) {
      std::fill(op, op + plane, static_cast<float>(a.dm[c] * p.inv));
    }
    return 0;
  }
};

}  // namespace

std::unique_ptr<Kernel> make_batch_norm_kernel() {
  return std::make_unique<BatchNormKernel>();
}

}  // namespace cleave::runtime
