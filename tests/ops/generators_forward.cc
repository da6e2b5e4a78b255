// Generators for the forward built-in ops.
#include <algorithm>

#include "generators.h"

namespace cleave::ops::testing {

void add_forward_generators(Generators& g) {
  auto unary = [](Rng& r) {
    return Case{{f32({pick(r, 1, 4), pick(r, 1, 5), pick(r, 2, 6)})}, {}, {}};
  };
  for (char const* name : {"relu", "tanh", "sigmoid"})
    g[name] = unary;
  g["gelu"] = [](Rng& r) {
    return Case{{f32({pick(r, 1, 4), pick(r, 2, 6)})},
                {{"approximate", std::string(pick(r, 0, 1) ? "tanh" : "none")}},
                {}};
  };
  // Activations with kinks: inputs span them; finite differences land on one with probability 0.
  g["hardswish"] = [](Rng& r) {
    return Case{{f32({pick(r, 1, 4), pick(r, 2, 6)})}, {}, {{-5, 5, 0}}};
  };
  g["hardsigmoid"] = [](Rng& r) {
    return Case{{f32({pick(r, 1, 4), pick(r, 2, 6)})}, {{"alpha", 1.0 / 6}}, {{-5, 5, 0}}};
  };
  g["clip"] = [](Rng& r) {
    return Case{{f32({pick(r, 1, 4), pick(r, 2, 6)})}, {{"min", -0.5}, {"max", 0.25}}, {}};
  };
  g["scale"] = [](Rng& r) {
    return Case{{f32({pick(r, 1, 5), pick(r, 2, 6)})}, {{"alpha", 0.37}}, {}};
  };
  g["cast"] = [](Rng& r) {
    return Case{{f32({pick(r, 1, 5), pick(r, 2, 6)})}, {{"dtype", std::string("fp16")}}, {}};
  };
  g["dropout"] = [](Rng& r) {
    ir::Shape s = {pick(r, 1, 5), pick(r, 2, 6)};
    return Case{{f32(s), f32(s)}, {{"p", 0.25}}, {{-1, 1, 0}, {0, 0, 2}}};
  };
  auto binary = [](Rng& r) {
    // Broadcasting: B is a suffix of A's shape with some dims set to 1, or A and B swapped.
    ir::Shape a = {pick(r, 1, 4), pick(r, 1, 5), pick(r, 2, 5)};
    ir::Shape b(a.begin() + pick(r, 0, 2), a.end());
    for (auto& d : b)
      if (pick(r, 0, 2) == 0) d = 1;
    if (pick(r, 0, 1)) std::swap(a, b);
    return Case{{f32(a), f32(b)}, {}, {{-1, 1, 0}, {0.5, 1.5, 0}}};
  };
  for (char const* name : {"add", "sub", "mul", "div"})
    g[name] = binary;
  g["matmul"] = [](Rng& r) {
    std::int64_t m = pick(r, 1, 6), k = pick(r, 1, 6), n = pick(r, 1, 6);
    bool ta = pick(r, 0, 1), tb = pick(r, 0, 1);
    return Case{
        {f32(ta ? ir::Shape{k, m} : ir::Shape{m, k}), f32(tb ? ir::Shape{n, k} : ir::Shape{k, n})},
        {{"transpose_a", std::int64_t{ta}}, {"transpose_b", std::int64_t{tb}}},
        {}};
  };
  g["batch_matmul"] = [](Rng& r) {
    std::int64_t b = pick(r, 1, 3), m = pick(r, 1, 4), k = pick(r, 1, 4), n = pick(r, 1, 4);
    bool shared = pick(r, 0, 1);
    return Case{{f32({b, 2, m, k}), f32(shared ? ir::Shape{n, k} : ir::Shape{b, 2, n, k})},
                {{"transpose_b", std::int64_t{1}}},
                {}};
  };
  g["linear"] = [](Rng& r) {
    std::int64_t i = pick(r, 1, 6);
    return Case{{f32({pick(r, 1, 3), pick(r, 1, 4), i}), f32({pick(r, 1, 5), i})}, {}, {}};
  };
  g["conv2d"] = [](Rng& r) {
    std::int64_t groups = pick(r, 1, 2), cig = pick(r, 1, 2), cog = pick(r, 1, 2);
    std::int64_t kh = pick(r, 1, 3), kw = pick(r, 1, 3);
    std::int64_t pt = pick(r, 0, 1), pl = pick(r, 0, 1), pb = pick(r, 0, 2), pr = pick(r, 0, 1);
    ir::Attrs a{{"stride", ints({pick(r, 1, 2), pick(r, 1, 2)})},
                {"padding", ints({pt, pl, pb, pr})},
                {"dilation", ints({pick(r, 1, 2), 1})},
                {"groups", groups}};
    return Case{{f32({pick(r, 1, 2), groups * cig, pick(r, 5, 8), pick(r, 4, 7)}),
                 f32({groups * cog, cig, kh, kw})},
                a,
                {}};
  };
  g["conv3d"] = [](Rng& r) {
    std::int64_t groups = pick(r, 1, 2), cig = pick(r, 1, 2), cog = pick(r, 1, 2);
    ir::Attrs a{{"stride", ints({pick(r, 1, 2), pick(r, 1, 2), 1})},
                {"padding", ints({pick(r, 0, 1), pick(r, 0, 1), 1, 0, pick(r, 0, 2), 1})},
                {"dilation", ints({1, pick(r, 1, 2), 1})},
                {"groups", groups}};
    return Case{{f32({pick(r, 1, 2), groups * cig, pick(r, 2, 4), pick(r, 5, 6), pick(r, 3, 4)}),
                 f32({groups * cog, cig, pick(r, 1, 2), pick(r, 1, 3), pick(r, 1, 2)})},
                a,
                {}};
  };
  auto pool = [](bool is_max) {
    return [is_max](Rng& r) {
      std::int64_t kh = pick(r, 1, 3), kw = pick(r, 1, 3);
      ir::Attrs a{{"kernel", ints({kh, kw})}, {"stride", ints({pick(r, 1, 2), pick(r, 1, 2)})}};
      // Symmetric (h, w) pads, or (top, left, bottom, right) ones as TensorFlow's SAME gives
      // at stride 2 (nasnet).
      if (pick(r, 0, 1)) {
        a.set("padding", ints({pick(r, 0, kh / 2), 0}));
      } else {
        a.set("padding", ints({pick(r, 0, kh / 2), pick(r, 0, kw / 2), pick(r, 0, kh / 2),
                               pick(r, 0, kw / 2)}));
      }
      if (is_max) {
        a.set("ceil_mode", pick(r, 0, 1));
      } else {
        a.set("count_include_pad", pick(r, 0, 1));
      }
      return Case{{f32({pick(r, 1, 2), pick(r, 1, 3), pick(r, 4, 7), pick(r, 4, 7)})}, a, {}};
    };
  };
  g["max_pool2d"] = pool(true);
  g["avg_pool2d"] = pool(false);
  auto global = [](Rng& r) {
    return Case{{f32({pick(r, 1, 3), pick(r, 1, 4), pick(r, 1, 4), pick(r, 1, 4)})}, {}, {}};
  };
  g["global_avg_pool"] = global;
  g["global_max_pool"] = global;
  g["softmax"] = [](Rng& r) {
    return Case{
        {f32({pick(r, 1, 3), pick(r, 2, 5), pick(r, 2, 5)})}, {{"axis", pick(r, -3, 2)}}, {}};
  };
  g["layer_norm"] = [](Rng& r) {
    std::int64_t d = pick(r, 2, 5);
    return Case{{f32({pick(r, 1, 3), pick(r, 1, 3), d}), f32({d}), f32({d})}, {{"eps", 1e-3}}, {}};
  };
  auto bn_x = [](Rng& r) {
    return f32({pick(r, 1, 3), pick(r, 1, 4), pick(r, 1, 3), pick(r, 1, 3)});
  };
  g["bn_mean"] = [bn_x](Rng& r) { return Case{{bn_x(r)}, {}, {}}; };
  g["bn_var"] = [bn_x](Rng& r) {
    auto x = bn_x(r);
    return Case{{x, f32({x.shape[1]})}, {}, {}};
  };
  g["bn_apply"] = [bn_x](Rng& r) {
    auto x = bn_x(r);
    auto c = f32({x.shape[1]});
    return Case{{x, c, c, c, c}, {}, {{-1, 1, 0}, {-1, 1, 0}, {0.1, 2, 0}, {-1, 1, 0}, {-1, 1, 0}}};
  };
  g["cross_entropy"] = [](Rng& r) {
    std::int64_t b = pick(r, 1, 5), c = pick(r, 2, 5);
    return Case{{f32({b, c}), i64({b})}, {}, {{-2, 2, 0}, {0, 0, c}}};
  };
  g["concat"] = [](Rng& r) {
    std::int64_t n = pick(r, 1, 3), rows = pick(r, 1, 4), axis = pick(r, 0, 1);
    std::vector<ir::TensorType> in;
    for (std::int64_t i = 0; i < n; ++i) {
      std::int64_t w = pick(r, 1, 4);
      in.push_back(f32(axis == 0 ? ir::Shape{w, rows} : ir::Shape{rows, w}));
    }
    return Case{in, {{"axis", axis}}, {}};
  };
  g["slice"] = [](Rng& r) {
    ir::Shape s = {pick(r, 2, 5), pick(r, 3, 9)};
    std::int64_t start = pick(r, 0, s[1] - 2);
    return Case{{f32(s)},
                {{"starts", ints({start})},
                 {"ends", ints({pick(r, start + 1, s[1] + 2)})},
                 {"axes", ints({1})},
                 {"steps", ints({pick(r, 1, 3)})}},
                {}};
  };
  g["pad"] = [](Rng& r) {
    return Case{
        {f32({pick(r, 1, 3), pick(r, 1, 4), pick(r, 2, 5)})},
        {{"pads", ints({0, pick(r, 0, 2), pick(r, 0, 1), pick(r, 0, 1), 0, pick(r, 0, 3)})}},
        {}};
  };
  g["expand"] = [](Rng& r) {
    // X [1, C] or [B, 1, C] stretched to [B, S, C].
    std::int64_t b = pick(r, 1, 3), s = pick(r, 2, 4), c = pick(r, 1, 4);
    bool leading = pick(r, 0, 1);
    return Case{
        {f32(leading ? ir::Shape{1, c} : ir::Shape{b, 1, c})}, {{"shape", ints({b, s, c})}}, {}};
  };
  g["einsum"] = [](Rng& r) {
    // Attention's two contractions (MaxViT), a transposed output, and a sum inside one operand.
    static char const* const equations[] = {"bhid,bhjd->bhij", "bhij,bhjd->bhid", "ij,kj->ki",
                                            "ijk->ik"};
    std::string eq = equations[pick(r, 0, 3)];
    std::int64_t b = pick(r, 1, 2), h = pick(r, 1, 2), i = pick(r, 1, 3), j = pick(r, 1, 3),
                 d = pick(r, 1, 3);
    if (eq == "bhid,bhjd->bhij")
      return Case{{f32({b, h, i, d}), f32({b, h, j, d})}, {{"equation", eq}}, {}};
    if (eq == "bhij,bhjd->bhid")
      return Case{{f32({b, h, i, j}), f32({b, h, j, d})}, {{"equation", eq}}, {}};
    if (eq == "ij,kj->ki") return Case{{f32({i, j}), f32({d, j})}, {{"equation", eq}}, {}};
    return Case{{f32({i, j, d})}, {{"equation", eq}}, {}};
  };
  g["transpose"] = [](Rng& r) {
    std::vector<std::int64_t> perm = {0, 1, 2};
    std::shuffle(perm.begin(), perm.end(), r);
    return Case{{f32({pick(r, 1, 3), pick(r, 1, 4), pick(r, 1, 5)})}, {{"perm", perm}}, {}};
  };
  g["reshape"] = [](Rng& r) {
    static const std::vector<std::pair<ir::Shape, std::vector<std::int64_t>>> shapes = {
        {{6, 4}, {4, 6}},  {{2, 3, 4}, {6, 4}},    {{2, 3, 4}, {2, 12}},
        {{24}, {2, 3, 4}}, {{4, 6}, {2, 2, 6}},    {{3, 4, 1}, {12}},
        {{1, 6}, {3, -1}}, {{2, 6, 2}, {4, 3, 2}}, {{2, 3, 4}, {0, 4, 3}}};
    auto const& [in, out] = shapes[static_cast<std::size_t>(pick(r, 0, shapes.size() - 1))];
    return Case{{f32(in)}, {{"shape", out}}, {}};
  };
  g["embedding"] = [](Rng& r) {
    std::int64_t v = pick(r, 2, 6);
    return Case{{f32({v, pick(r, 1, 4)}), i64({pick(r, 1, 3), pick(r, 1, 3)})},
                {},
                {{-1, 1, 0}, {0, 0, v}}};
  };
}

}  // namespace cleave::ops::testing
