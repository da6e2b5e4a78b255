// Generators for the gradient and optimizer ops. Inputs that must agree (Y = max_pool2d(X), labels
// in range, positive variances) are kept valid with Fill; X and Y of the max-pool gradients are
// small integers so that "X equals its window's max" happens often.
#include <algorithm>

#include "generators.h"

namespace cleave::ops::testing {
namespace {

// Output size of a window op along one dimension, as conv2d and the pools compute it.
std::int64_t window_out(std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t d,
                        std::int64_t p0, std::int64_t p1, bool ceil = false) {
  std::int64_t span = in + p0 + p1 - d * (k - 1) - 1;
  std::int64_t o = (ceil ? (span + s - 1) / s : span / s) + 1;
  if (ceil && (o - 1) * s >= in + p0) --o;
  return o;
}

struct ConvCase {
  ir::Shape x, w, y;
  ir::Attrs attrs;
};

ConvCase conv_case(Rng& r) {
  std::int64_t groups = pick(r, 1, 2), cig = pick(r, 1, 2), cog = pick(r, 1, 2);
  std::int64_t kh = pick(r, 1, 3), kw = pick(r, 1, 3), sh = pick(r, 1, 2), sw = pick(r, 1, 3);
  std::int64_t dh = pick(r, 1, 2);
  std::int64_t pt = pick(r, 0, 1), pl = pick(r, 0, 1), pb = pick(r, 0, 2), pr = pick(r, 0, 1);
  ConvCase c;
  c.x = {pick(r, 1, 2), groups * cig, pick(r, 5, 8), pick(r, 4, 7)};
  c.w = {groups * cog, cig, kh, kw};
  c.y = {c.x[0], c.w[0], window_out(c.x[2], kh, sh, dh, pt, pb),
         window_out(c.x[3], kw, sw, 1, pl, pr)};
  c.attrs = {{"stride", ints({sh, sw})},
             {"padding", ints({pt, pl, pb, pr})},
             {"dilation", ints({dh, 1})},
             {"groups", groups}};
  return c;
}

// conv3d: small windows, strides and pads on every axis, no groups on the depth's behalf.
ConvCase conv3d_case(Rng& r) {
  std::int64_t groups = pick(r, 1, 2), cig = pick(r, 1, 2), cog = pick(r, 1, 2);
  std::int64_t kd = pick(r, 1, 2), kh = pick(r, 1, 3), kw = pick(r, 1, 2);
  std::int64_t sd = pick(r, 1, 2), sh = pick(r, 1, 2), dh = pick(r, 1, 2);
  std::int64_t pf = pick(r, 0, 1), pt = pick(r, 0, 1), pk = pick(r, 0, 1), pb = pick(r, 0, 2);
  ConvCase c;
  c.x = {pick(r, 1, 2), groups * cig, pick(r, 2, 4), pick(r, 5, 6), pick(r, 3, 4)};
  c.w = {groups * cog, cig, kd, kh, kw};
  c.y = {c.x[0], c.w[0], window_out(c.x[2], kd, sd, 1, pf, pk),
         window_out(c.x[3], kh, sh, dh, pt, pb), window_out(c.x[4], kw, 1, 1, 1, 0)};
  c.attrs = {{"stride", ints({sd, sh, 1})},
             {"padding", ints({pf, pt, 1, pk, pb, 0})},
             {"dilation", ints({1, dh, 1})},
             {"groups", groups}};
  return c;
}

struct PoolCase {
  ir::Shape x, y;
  ir::Attrs attrs;
};

PoolCase pool_case(Rng& r, bool is_max) {
  std::int64_t kh = pick(r, 1, 3), kw = pick(r, 1, 3), sh = pick(r, 1, 2), sw = pick(r, 1, 3);
  // (top, left) and (bottom, right) pads, asymmetric as TensorFlow's SAME at stride 2 (nasnet).
  std::int64_t ph = pick(r, 0, kh / 2), pw = pick(r, 0, kw / 2);
  std::int64_t pb = pick(r, 0, kh / 2), pr = pick(r, 0, kw / 2);
  std::int64_t dh = is_max ? pick(r, 1, 2) : 1;
  bool include_pad = is_max || pick(r, 0, 1);
  bool ceil = include_pad && pick(r, 0, 1);  // avg_pool2d: ceil_mode needs count_include_pad
  PoolCase c;
  c.x = {pick(r, 1, 2), pick(r, 1, 3), pick(r, 5, 7), pick(r, 4, 7)};  // H >= the dilated window
  c.y = {c.x[0], c.x[1], window_out(c.x[2], kh, sh, dh, ph, pb, ceil),
         window_out(c.x[3], kw, sw, 1, pw, pr, ceil)};
  c.attrs = {{"kernel", ints({kh, kw})},
             {"stride", ints({sh, sw})},
             {"padding", ints({ph, pw, pb, pr})},
             {"ceil_mode", std::int64_t{ceil}}};
  if (is_max) {
    c.attrs.set("dilation", ints({dh, 1}));
  } else {
    c.attrs.set("count_include_pad", std::int64_t{include_pad});
  }
  return c;
}

ir::Shape small_shape(Rng& r) {
  return {pick(r, 1, 4), pick(r, 1, 5), pick(r, 2, 6)};
}

ir::TensorType bn_x(Rng& r) {
  return f32({pick(r, 1, 3), pick(r, 1, 4), pick(r, 1, 3), pick(r, 1, 3)});
}

}  // namespace

void add_gradient_generators(Generators& g) {
  Fill const small_ints{0, 0, 3};
  Fill const positive{0.1, 2, 0};
  g["linear_grad_input"] = [](Rng& r) {
    std::int64_t o = pick(r, 1, 5);
    return Case{{f32({pick(r, 1, 3), pick(r, 1, 4), o}), f32({o, pick(r, 1, 6)})}, {}, {}};
  };
  g["linear_grad_weight"] = [](Rng& r) {
    std::int64_t a = pick(r, 1, 3), b = pick(r, 1, 4);
    return Case{{f32({a, b, pick(r, 1, 5)}), f32({a, b, pick(r, 1, 6)})}, {}, {}};
  };
  g["conv2d_grad_input"] = [](Rng& r) {
    ConvCase c = conv_case(r);
    c.attrs.set("input_shape", c.x);
    return Case{{f32(c.y), f32(c.w)}, c.attrs, {}};
  };
  g["conv2d_grad_weight"] = [](Rng& r) {
    ConvCase c = conv_case(r);
    c.attrs.set("kernel", ints({c.w[2], c.w[3]}));
    return Case{{f32(c.y), f32(c.x)}, c.attrs, {}};
  };
  g["conv3d_grad_input"] = [](Rng& r) {
    ConvCase c = conv3d_case(r);
    c.attrs.set("input_shape", c.x);
    return Case{{f32(c.y), f32(c.w)}, c.attrs, {}};
  };
  g["conv3d_grad_weight"] = [](Rng& r) {
    ConvCase c = conv3d_case(r);
    c.attrs.set("kernel", ints({c.w[2], c.w[3], c.w[4]}));
    return Case{{f32(c.y), f32(c.x)}, c.attrs, {}};
  };
  g["max_pool2d_grad"] = [small_ints](Rng& r) {
    PoolCase c = pool_case(r, true);
    return Case{{f32(c.x), f32(c.y), f32(c.y)}, c.attrs, {small_ints, small_ints, {}}};
  };
  g["avg_pool2d_grad"] = [](Rng& r) {
    PoolCase c = pool_case(r, false);
    c.attrs.set("input_shape", c.x);
    return Case{{f32(c.y)}, c.attrs, {}};
  };
  g["global_avg_pool_grad"] = [](Rng& r) {
    ir::Shape x = {pick(r, 1, 3), pick(r, 1, 4), pick(r, 1, 4), pick(r, 1, 4)};
    return Case{{f32({x[0], x[1], 1, 1})}, {{"input_shape", x}}, {}};
  };
  g["global_max_pool_grad"] = [small_ints](Rng& r) {
    ir::Shape x = {pick(r, 1, 3), pick(r, 1, 4), pick(r, 1, 4), pick(r, 1, 4)};
    ir::Shape y = {x[0], x[1], 1, 1};
    return Case{{f32(x), f32(y), f32(y)}, {}, {small_ints, small_ints, {}}};
  };
  g["batch_matmul_grad_shared"] = [](Rng& r) {
    std::int64_t b = pick(r, 1, 3), m = pick(r, 1, 4), k = pick(r, 1, 4), n = pick(r, 1, 4);
    bool ta = pick(r, 0, 1);
    return Case{{f32(ta ? ir::Shape{b, 2, k, m} : ir::Shape{b, 2, m, k}), f32({b, 2, m, n})},
                {{"transpose_a", std::int64_t{ta}}, {"transpose_b", pick(r, 0, 1)}},
                {}};
  };

  auto same2 = [](Rng& r) {
    auto s = small_shape(r);
    return Case{{f32(s), f32(s)}, {}, {}};
  };
  for (char const* name : {"relu_grad", "tanh_grad", "sigmoid_grad"})
    g[name] = same2;
  g["gelu_grad"] = [same2](Rng& r) {
    Case c = same2(r);
    c.attrs.set("approximate", std::string(pick(r, 0, 1) ? "tanh" : "none"));
    return c;
  };
  g["hardswish_grad"] = [same2](Rng& r) {
    Case c = same2(r);
    c.fills = {{-5, 5, 0}, {-1, 1, 0}};  // across both kinks at -3 and 3
    return c;
  };
  g["clip_grad"] = [same2](Rng& r) {
    Case c = same2(r);
    c.attrs = {{"min", -0.5}, {"max", 0.25}};
    return c;
  };
  g["hardsigmoid_grad"] = [same2](Rng& r) {
    Case c = same2(r);
    c.attrs = {{"alpha", 1.0 / 6}, {"beta", 0.5}};
    c.fills = {{-5, 5, 0}, {-1, 1, 0}};
    return c;
  };
  g["sum_to_shape"] = [](Rng& r) {
    ir::Shape x = {pick(r, 1, 4), pick(r, 1, 5), pick(r, 2, 5)};
    ir::Shape to(x.begin() + pick(r, 0, 3), x.end());
    for (auto& d : to)
      if (pick(r, 0, 2) == 0) d = 1;
    return Case{{f32(x)}, {{"shape", to}}, {}};
  };
  g["div_grad_rhs"] = [](Rng& r) {
    ir::Shape a = {pick(r, 1, 4), pick(r, 1, 5), pick(r, 2, 5)};
    ir::Shape out = a;
    ir::Shape b(a.begin() + pick(r, 0, 2), a.end());
    for (auto& d : b)
      if (pick(r, 0, 2) == 0) d = 1;
    if (pick(r, 0, 1)) std::swap(a, b);
    return Case{{f32(a), f32(b), f32(out)}, {}, {{-1, 1, 0}, {0.5, 1.5, 0}, {-1, 1, 0}}};
  };
  g["softmax_grad"] = [](Rng& r) {
    ir::Shape s = {pick(r, 1, 3), pick(r, 2, 5), pick(r, 2, 5)};
    return Case{{f32(s), f32(s)}, {{"axis", pick(r, -3, 2)}}, {{0, 1, 0}, {-1, 1, 0}}};
  };
  g["layer_norm_grad_input"] = [](Rng& r) {
    ir::Shape x = {pick(r, 1, 3), pick(r, 1, 3), pick(r, 2, 5)};
    return Case{{f32(x), f32({x[2]}), f32(x)}, {{"eps", 1e-3}}, {}};
  };
  g["layer_norm_grad_gamma"] = [](Rng& r) {
    ir::Shape x = {pick(r, 1, 3), pick(r, 2, 3), pick(r, 2, 5)};
    return Case{{f32(x), f32(x)}, {{"eps", 1e-3}}, {}};
  };
  // Batch norm: inputs by letter as the ops take them (X, M, V, G, D = dY, v = dV, m = dM).
  auto bn = [positive](std::string letters) {
    return [letters, positive](Rng& r) {
      auto x = bn_x(r);
      Case c;
      for (char k : letters) {
        c.inputs.push_back(k == 'X' || k == 'D' ? x : f32({x.shape[1]}));
        c.fills.push_back(k == 'V' ? positive : Fill{});
      }
      return c;
    };
  };
  g["bn_apply_grad_input"] = bn("XMVGD");
  g["bn_apply_grad_mean"] = bn("XMVGD");
  g["bn_apply_grad_var"] = bn("XMVGD");
  g["bn_apply_grad_gamma"] = bn("XMVD");
  g["bn_channel_sum"] = bn("D");
  g["bn_var_grad_input"] = bn("XMv");
  g["bn_var_grad_mean"] = bn("XMv");
  g["bn_mean_grad_input"] = bn("Xm");
  g["cross_entropy_grad"] = [](Rng& r) {
    std::int64_t b = pick(r, 1, 5), c = pick(r, 2, 5);
    return Case{{f32({b, c}), i64({b}), f32({})}, {}, {{-2, 2, 0}, {0, 0, c}, {-1, 1, 0}}};
  };
  g["embedding_grad"] = [](Rng& r) {
    std::int64_t v = pick(r, 2, 6), s0 = pick(r, 1, 3), s1 = pick(r, 1, 3);
    return Case{{i64({s0, s1}), f32({s0, s1, pick(r, 1, 4)})}, {{"vocab", v}}, {{0, 0, v}, {}}};
  };
  g["slice_grad"] = [](Rng& r) {
    ir::Shape x = {pick(r, 2, 5), pick(r, 3, 9)};
    std::int64_t start = pick(r, 0, x[1] - 2), end = pick(r, start + 1, x[1] + 2);
    std::int64_t step = pick(r, 1, 3);
    std::int64_t out = (std::min(end, x[1]) - start + step - 1) / step;
    return Case{{f32({x[0], out})},
                {{"starts", ints({start})},
                 {"ends", ints({end})},
                 {"axes", ints({1})},
                 {"steps", ints({step})},
                 {"input_shape", x}},
                {}};
  };

  g["fill"] = [](Rng& r) {
    bool integer = pick(r, 0, 1);
    return Case{{},
                {{"shape", ints({pick(r, 2, 4), pick(r, 1, 5)})},
                 {"value", integer ? 3.0 : -0.25},
                 {"dtype", std::string(integer ? "int32" : "fp32")}},
                {}};
  };
  auto optimizer = [](int inputs, ir::Attrs attrs) {
    return [inputs, attrs](Rng& r) {
      auto s = small_shape(r);
      Case c{std::vector<ir::TensorType>(static_cast<std::size_t>(inputs), f32(s)), attrs, {}};
      c.fills.assign(static_cast<std::size_t>(inputs), Fill{});
      c.fills.back() = Fill{0, 1, 0};  // adam_update's V must be >= 0; harmless for the others
      if (c.attrs.contains("step")) c.attrs.set("step", pick(r, 1, 5));
      return c;
    };
  };
  g["sgd_momentum"] = optimizer(2, {{"momentum", 0.8}});
  g["sgd_update"] = optimizer(2, {{"lr", 0.1}});
  g["adam_moment1"] = optimizer(2, {{"beta1", 0.85}});
  g["adam_moment2"] = optimizer(2, {{"beta2", 0.99}});
  g["adam_update"] = optimizer(3, {{"lr", 0.01}, {"step", std::int64_t{1}}});
}

}  // namespace cleave::ops::testing
