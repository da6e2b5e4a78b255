// nasnet: NASNet-A for ImageNet (Zoph et al., "Learning Transferable Architectures for Scalable
// Image Recognition", CVPR 2018), SwapAdvisor's NasNet-25 (PAPERS.md §4, docs/zoo.md). The
// architecture is TF-slim's, wired as timm's `nasnetalarge` (Cadene's port of the TF weights) and
// with its weight names ("cell_7.comb_iter_0_left.separable_1.depthwise_conv2d.weight"):
//
//   conv0 (3x3 stride 2, no padding, batch norm) -> two stem cells (reduction cells of a quarter
//   and a half of the filters) -> N normal cells -> reduction cell -> N normal cells (twice the
//   filters) -> reduction cell -> N normal cells (four times) -> relu, global pool, linear.
//
// A cell combines the previous two cells' outputs in five blocks, each the sum of two operations
// (separable convolutions, pools or the identity). Windows use TensorFlow's SAME padding, which is
// asymmetric for stride 2 over an even side, and average pools divide by their window's part
// inside the input (count_include_pad=0), as TensorFlow's do. Where the previous cell's output is
// twice the size of the current one, a factorized reduction halves it: two 1x1-pool + 1x1-conv
// paths, the second shifted by one row and column. No auxiliary head and no dropout (timm's
// default rate is 0), as for the zoo's Inception-v4.
#include <algorithm>
#include <array>
#include <vector>

#include "models/layers.h"
#include "models/model_zoo.h"
#include "support/assert.h"

namespace cleave::models {
namespace {

using Ints = std::vector<std::int64_t>;

// The smallest image for which every stride-2 step halves a side of at least 2 (the factorized
// reductions read row 1): conv0 must give 9 or more, so that the last stage's input is 2.
constexpr std::int64_t min_image = 19;

// TensorFlow's SAME padding of a window of `kernel` at `stride` over `side`: the output is
// ceil(side / stride), and an odd total pad puts its extra row after.
struct SamePads {
  std::int64_t before = 0, after = 0;
};
SamePads same(std::int64_t side, std::int64_t kernel, std::int64_t stride) {
  std::int64_t out = (side + stride - 1) / stride;
  std::int64_t total = std::max<std::int64_t>((out - 1) * stride + kernel - side, 0);
  return {total / 2, total - total / 2};
}

enum class Pool { max, avg };

class NasNet {
 public:
  explicit NasNet(ops::OpBuilder& b) : b_(b) {}

  // TF-slim's imagenet stem, then three stages of `cells` normal cells (filters f, 2f, 4f for
  // f = penultimate / 24) with a reduction cell before the second and third.
  ir::TensorId features(ir::TensorId image, std::int64_t stem_filters, std::int64_t f,
                        std::int64_t cells) {
    ir::TensorId x0;
    {
      auto s = b_.scope("conv0");
      x0 = conv2d(b_, image,
                  Conv{.out_channels = stem_filters,
                       .kernel_h = 3,
                       .kernel_w = 3,
                       .stride_h = 2,
                       .stride_w = 2},
                  "conv");
      x0 = batch_norm(b_, x0, "bn", /*eps=*/1e-3);
    }
    // The first stem cell has no earlier cell: its second input is conv0's output as it is.
    ir::TensorId stem0;
    {
      auto s = b_.scope("cell_stem_0");
      stem0 = reduction_body(act_conv_bn(x0, f / 4, "conv_1x1"), x0, f / 4);
    }
    ir::TensorId cur, prev = stem0;
    {
      auto s = b_.scope("cell_stem_1");
      cur = reduction_body(act_conv_bn(stem0, f / 2, "conv_1x1"), factorized(x0, f / 2), f / 2);
    }
    int cell = 0;
    for (int stage = 0; stage < 3; ++stage) {
      std::int64_t filters = f << stage;
      if (stage > 0) {
        // timm's (and TF-slim's large model's) wiring: the cell after a reduction takes the
        // reduction's own earlier input as its second input.
        auto s = b_.scope("reduction_cell_" + std::to_string(stage - 1));
        cur = reduction_body(act_conv_bn(cur, filters, "conv_1x1"),
                             act_conv_bn(prev, filters, "conv_prev_1x1"), filters);
      }
      for (std::int64_t i = 0; i < cells; ++i, ++cell) {
        auto s = b_.scope("cell_" + std::to_string(cell));
        // The stage's first cell reads a previous output of twice its size.
        ir::TensorId left =
            i == 0 ? factorized(prev, filters) : act_conv_bn(prev, filters, "conv_prev_1x1");
        ir::TensorId out = normal_body(act_conv_bn(cur, filters, "conv_1x1"), left, filters);
        prev = cur;
        cur = out;
      }
    }
    return b_.op("relu", {cur}, {}, "act");
  }

 private:
  // The normal cell's five blocks over the current input (after its 1x1) and the previous one;
  // the output joins the previous input and the five blocks: 6 x filters channels. Branches are
  // separables(input, filters, kernel, stride, name) and pool(input, kind, stride, name).
  ir::TensorId normal_body(ir::TensorId cur, ir::TensorId prev, std::int64_t f) {
    auto c0 = add(separables(cur, f, 5, 1, "comb_iter_0_left"),
                  separables(prev, f, 3, 1, "comb_iter_0_right"), "comb_iter_0");
    auto c1 = add(separables(prev, f, 5, 1, "comb_iter_1_left"),
                  separables(prev, f, 3, 1, "comb_iter_1_right"), "comb_iter_1");
    auto c2 = add(pool(cur, Pool::avg, 1, "comb_iter_2_left"), prev, "comb_iter_2");
    auto c3 = add(pool(prev, Pool::avg, 1, "comb_iter_3_left"),
                  pool(prev, Pool::avg, 1, "comb_iter_3_right"), "comb_iter_3");
    auto c4 = add(separables(cur, f, 3, 1, "comb_iter_4_left"), cur, "comb_iter_4");
    return concat({prev, c0, c1, c2, c3, c4});
  }

  // The reduction cell's five blocks, halving the sides; the output joins blocks 1-4:
  // 4 x filters channels.
  ir::TensorId reduction_body(ir::TensorId cur, ir::TensorId prev, std::int64_t f) {
    auto c0 = add(separables(cur, f, 5, 2, "comb_iter_0_left"),
                  separables(prev, f, 7, 2, "comb_iter_0_right"), "comb_iter_0");
    auto c1 = add(pool(cur, Pool::max, 2, "comb_iter_1_left"),
                  separables(prev, f, 7, 2, "comb_iter_1_right"), "comb_iter_1");
    auto c2 = add(pool(cur, Pool::avg, 2, "comb_iter_2_left"),
                  separables(prev, f, 5, 2, "comb_iter_2_right"), "comb_iter_2");
    auto c3 = add(pool(c0, Pool::avg, 1, "comb_iter_3_right"), c1, "comb_iter_3");
    auto c4 = add(separables(c0, f, 3, 1, "comb_iter_4_left"),
                  pool(cur, Pool::max, 2, "comb_iter_4_right"), "comb_iter_4");
    return concat({c1, c2, c3, c4});
  }

  // relu, 1x1 convolution, batch norm (timm's ActConvBn).
  ir::TensorId act_conv_bn(ir::TensorId x, std::int64_t out, std::string const& name) {
    auto s = b_.scope(name);
    x = b_.op("relu", {x}, {}, "act");
    x = conv2d(b_, x, Conv{.out_channels = out}, "conv");
    return batch_norm(b_, x, "bn", /*eps=*/1e-3);
  }

  // Two rounds of relu, separable convolution (depthwise k x k, then pointwise 1x1) and batch
  // norm; only the first is strided (timm's BranchSeparables).
  ir::TensorId separables(ir::TensorId x, std::int64_t out, std::int64_t k, std::int64_t stride,
                          std::string const& name) {
    auto s = b_.scope(name);
    x = b_.op("relu", {x}, {}, "act_1");
    x = batch_norm(b_, separable(x, out, k, stride, "separable_1"), "bn_sep_1", /*eps=*/1e-3);
    x = b_.op("relu", {x}, {}, "act_2");
    return batch_norm(b_, separable(x, out, k, 1, "separable_2"), "bn_sep_2", /*eps=*/1e-3);
  }

  ir::TensorId separable(ir::TensorId x, std::int64_t out, std::int64_t k, std::int64_t stride,
                         std::string const& name) {
    auto s = b_.scope(name);
    ir::Shape const shape = b_.shape_of(x);  // a copy: adding ops moves the graph's tensors
    std::int64_t channels = shape[1];
    SamePads ph = same(shape[2], k, stride), pw = same(shape[3], k, stride);
    Conv depthwise{.out_channels = channels,
                   .kernel_h = k,
                   .kernel_w = k,
                   .stride_h = stride,
                   .stride_w = stride,
                   .pad_h = ph.before,
                   .pad_w = pw.before,
                   .groups = channels};
    if (ph.after != ph.before || pw.after != pw.before)
      depthwise.pad_after = std::array{ph.after, pw.after};
    x = conv2d(b_, x, depthwise, "depthwise_conv2d");
    return conv2d(b_, x, Conv{.out_channels = out}, "pointwise_conv2d");
  }

  // A 3x3 pool with SAME padding; the average divides by the window's part inside x.
  ir::TensorId pool(ir::TensorId x, Pool kind, std::int64_t stride, std::string const& name) {
    ir::Shape const shape = b_.shape_of(x);  // a copy: adding ops moves the graph's tensors
    SamePads ph = same(shape[2], 3, stride), pw = same(shape[3], 3, stride);
    ir::Attrs attrs{{"kernel", Ints{3, 3}},
                    {"stride", Ints{stride, stride}},
                    {"padding", Ints{ph.before, pw.before, ph.after, pw.after}}};
    if (kind == Pool::max) return b_.op("max_pool2d", {x}, std::move(attrs), name);
    attrs.set("count_include_pad", std::int64_t{0});
    return b_.op("avg_pool2d", {x}, std::move(attrs), name);
  }

  // Halves x's sides into `out` channels: relu, then two paths of a 1x1 pool at stride 2 and a
  // 1x1 convolution to out/2 channels, the second path on x shifted up and left by one (its last
  // row and column zeros), joined and normalized (TF-slim's factorized_reduction).
  ir::TensorId factorized(ir::TensorId x, std::int64_t out) {
    x = b_.op("relu", {x}, {}, "act");
    ir::Shape const shape = b_.shape_of(x);  // a copy: adding ops moves the graph's tensors
    auto path = [&](ir::TensorId in, std::string const& name) {
      auto s = b_.scope(name);
      in = b_.op(
          "avg_pool2d", {in},
          {{"kernel", Ints{1, 1}}, {"stride", Ints{2, 2}}, {"count_include_pad", std::int64_t{0}}},
          "avgpool");
      return conv2d(b_, in, Conv{.out_channels = out / 2}, "conv");
    };
    auto p1 = path(x, "path_1");
    ir::TensorId shifted;
    {
      auto s = b_.scope("path_2");
      shifted = b_.op("pad", {x}, {{"pads", Ints{0, 0, 0, 0, 0, 0, 1, 1}}}, "pad");
      shifted = b_.op("slice", {shifted},
                      {{"starts", Ints{1, 1}},
                       {"ends", Ints{shape[2] + 1, shape[3] + 1}},
                       {"axes", Ints{2, 3}}},
                      "crop");
    }
    auto p2 = path(shifted, "path_2");
    return batch_norm(b_, b_.op("concat", {p1, p2}, {{"axis", std::int64_t{1}}}, "path_concat"),
                      "final_path_bn", /*eps=*/1e-3);
  }

  ir::TensorId add(ir::TensorId a, ir::TensorId b, std::string const& name) {
    return b_.op("add", {a, b}, {}, name);
  }
  ir::TensorId concat(std::vector<ir::TensorId> parts) {
    return b_.op("concat", std::move(parts), {{"axis", std::int64_t{1}}}, "concat");
  }

  ops::OpBuilder& b_;
};

void build_nasnet(ops::OpBuilder& b, ModelArgs const& a) {
  std::int64_t filters = a.integer("filters"), image = a.integer("image");
  if (filters % 96 != 0) {
    b.fail(Error(ErrorCode::invalid_argument,
                 "model 'nasnet': filters=" + std::to_string(filters) +
                     " must be a multiple of 96: the stages' cells have filters/24, /12 and /6 "
                     "channels, the stem cells /96 and /48, and the second stem cell's factorized "
                     "reduction splits its channels in two (4032 and 1056 are multiples)"));
    return;
  }
  if (image < min_image) {
    b.fail(Error(ErrorCode::invalid_argument,
                 "model 'nasnet': image=" + std::to_string(image) +
                     " is too small for the five stride-2 steps; accepted images are " +
                     std::to_string(min_image) + " or larger (default 331)"));
    return;
  }
  auto x = b.input("input", {a.integer("batch"), 3, image, image}, a.dtype());
  x = NasNet(b).features(x, a.integer("stem"), filters / 24, a.integer("cells"));
  x = flatten(b, b.op("global_avg_pool", {x}, {}, "global_pool"), "flatten");
  classification_loss(b, linear(b, x, a.integer("classes"), "last_linear"));
}

}  // namespace

void add_nasnet(ModelZoo& zoo) {
  ModelDef def;
  def.name = "nasnet";
  def.summary = "NASNet-A for ImageNet (Zoph et al. 2018) as TF-slim and timm build it: normal and "
                "reduction cells of separable convolutions and pools; NASNet-A (N @ filters), "
                "SwapAdvisor's NasNet-25 is cells=25";
  def.keys = {{"cells", KeyKind::integer, "6", "normal cells per stage, N (3N in all)", 1, {}},
              {"filters",
               KeyKind::integer,
               "4032",
               "penultimate filters, a multiple of 96 (NASNet-A Large 4032, Mobile 1056)",
               96,
               {}},
              {"stem",
               KeyKind::integer,
               "96",
               "filters of the stem convolution (Large 96, Mobile 32)",
               1,
               {}},
              {"batch", KeyKind::integer, "64", "samples per step", 1, {}},
              {"classes", KeyKind::integer, "1000", "output classes", 2, {}},
              {"image",
               KeyKind::integer,
               "331",
               "side of the square input image (Large 331, Mobile 224; 19 or more)",
               1,
               {}}};
  def.build = build_nasnet;
  auto st = zoo.add(std::move(def));
  CLEAVE_ASSERT(st.is_ok(), "duplicate model");
}

}  // namespace cleave::models
