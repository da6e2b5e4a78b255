// Softmax, normalizations and the loss. Batch norm's statistics are explicit reductions (separate
// ops), so splitting a batch yields partial sums that a plan must reduce (DESIGN.md, "Operator
// semantics"). Softmax and layer norm keep their row statistics inside one op: their normalized
// axis is marked nosplit, since every piece of a split row would recompute the row's statistics.
#include "ops/builtin_util.h"
#include "support/assert.h"

namespace cleave::ops {
namespace {

using namespace detail;

Expected<OpInstance> softmax(ir::Attrs const& a, std::span<ir::TensorType const> in) {
  CLEAVE_CHECK_OK(expect_rank("softmax", "X", in[0], 1, 12));
  CLEAVE_TRY(std::size_t axis,
             normalize_axis("softmax", a.get_int("axis", -1), in[0].shape.size()));
  auto d = dim_vars(in[0].shape.size());
  std::string xj = ref("X", with_axis(d, axis, "j"));
  std::string row_max = "max(k) " + ref("X", with_axis(d, axis, "k"));
  return instance(ref("Y", d) + " = exp(" + ref("X", d) + " - " + row_max + ") / sum(j) exp(" + xj +
                      " - " + row_max + ") ; nosplit(" + d[axis] + ")",
                  {"X"});
}

Expected<OpInstance> layer_norm(ir::Attrs const& a, std::span<ir::TensorType const> in) {
  CLEAVE_CHECK_OK(expect_rank("layer_norm", "X", in[0], 1, 12));
  std::size_t r = in[0].shape.size();
  std::int64_t dim = in[0].shape[r - 1];
  for (int i = 1; i <= 2; ++i)
    if (in[static_cast<std::size_t>(i)].shape != ir::Shape{dim})
      return shape_error("layer_norm",
                         std::string(i == 1 ? "gamma G" : "beta B") + " must be [" +
                             std::to_string(dim) + "] (X's last dimension), got " +
                             ir::shape_to_string(in[static_cast<std::size_t>(i)].shape));
  auto d = dim_vars(r);
  auto at = [&](char const* v) { return ref("X", with_axis(d, r - 1, v)); };
  std::string mean_k = "sum(k) " + at("k") + " * invD";
  std::string var =
      "sum(j) (" + at("j") + " - " + mean_k + ") * (" + at("j") + " - " + mean_k + ") * invD";
  return instance(ref("Y", d) + " = (" + ref("X", d) + " - " + mean_k + ") * rsqrt(" + var +
                      " + eps) * G[" + d[r - 1] + "] + B[" + d[r - 1] + "] ; nosplit(" + d[r - 1] +
                      ")",
                  {"X", "G", "B"},
                  {{"invD", 1.0 / static_cast<double>(dim)}, {"eps", a.get_float("eps", 1e-5)}});
}

Status expect_channels(std::string const& op, std::span<ir::TensorType const> in, std::size_t from,
                       char const* names) {
  std::int64_t c = in[0].shape[1];
  for (std::size_t i = from; i < in.size(); ++i)
    if (in[i].shape != ir::Shape{c})
      return shape_error(op, std::string("inputs ") + names + " must each be [" +
                                 std::to_string(c) + "] (X's channels), input " +
                                 std::to_string(i) + " is " + ir::shape_to_string(in[i].shape));
  return Status::ok();
}

Expected<OpInstance> bn_mean(ir::Attrs const&, std::span<ir::TensorType const> in) {
  CLEAVE_TRY(BnDims b, bn_dims("bn_mean", "X", in[0]));
  return instance("M[c] = sum(" + b.others + ") " + ref("X", b.d) + " * inv", {"X"},
                  {{"inv", b.inv_count}});
}

Expected<OpInstance> bn_var(ir::Attrs const&, std::span<ir::TensorType const> in) {
  CLEAVE_TRY(BnDims b, bn_dims("bn_var", "X", in[0]));
  CLEAVE_CHECK_OK(expect_channels("bn_var", in, 1, "M"));
  std::string x = ref("X", b.d);
  return instance("V[c] = sum(" + b.others + ") (" + x + " - M[c]) * (" + x + " - M[c]) * inv",
                  {"X", "M"}, {{"inv", b.inv_count}});
}

Expected<OpInstance> bn_apply(ir::Attrs const& a, std::span<ir::TensorType const> in) {
  CLEAVE_TRY(BnDims b, bn_dims("bn_apply", "X", in[0]));
  CLEAVE_CHECK_OK(expect_channels("bn_apply", in, 1, "M, V, G, B"));
  return instance(ref("Y", b.d) + " = (" + ref("X", b.d) +
                      " - M[c]) * rsqrt(V[c] + eps) * G[c] + B[c]",
                  {"X", "M", "V", "G", "B"}, {{"eps", a.get_float("eps", 1e-5)}});
}

Expected<OpInstance> cross_entropy(ir::Attrs const&, std::span<ir::TensorType const> in) {
  CLEAVE_CHECK_OK(expect_rank("cross_entropy", "X", in[0], 2, 2));
  if (in[1].shape != ir::Shape{in[0].shape[0]} || ir::is_floating(in[1].dtype))
    return shape_error("cross_entropy",
                       "labels T must be an int32/int64 [" + std::to_string(in[0].shape[0]) +
                           "] tensor (one class per row of X), got " + ir::type_to_string(in[1]));
  std::string row_max = "max(k) X[b,k]";
  OpInstance inst = instance("L[] = sum(b) (log(sum(j) exp(X[b,j] - " + row_max + ")) + " +
                                 row_max + " - X[b,T[b]]) * invB",
                             {"X", "T"}, {{"invB", 1.0 / static_cast<double>(in[0].shape[0])}});
  inst.output = ir::TensorType{{}, in[0].dtype};
  return inst;
}

ir::TensorType i64(ir::Shape shape) {
  return {std::move(shape), ir::DType::int64};
}

}  // namespace

void add_normalization_ops(OpRegistry& r) {
  auto must = [](Status s) { CLEAVE_ASSERT(s.is_ok(), "duplicate built-in op"); };
  auto eps = real_attr("eps", 1e-5, "added to the variance");
  must(r.add({"softmax",
              "Y = exp(X) / sum(exp(X)) along axis (max-subtracted)",
              {int_attr("axis", -1, "the normalized axis")},
              false,
              1,
              1,
              {f32({8, 4, 16})},
              {},
              softmax}));
  must(r.add({"layer_norm",
              "normalize the last axis, then * G + B",
              {eps},
              false,
              3,
              3,
              {f32({8, 16, 64}), f32({64}), f32({64})},
              {},
              layer_norm}));
  must(r.add({"bn_mean",
              "batch norm statistic: per-channel mean of X [N, C, ...]",
              {},
              false,
              1,
              1,
              {f32({8, 16, 8, 8})},
              {},
              bn_mean}));
  must(r.add({"bn_var",
              "batch norm statistic: per-channel biased variance given the mean M",
              {},
              false,
              2,
              2,
              {f32({8, 16, 8, 8}), f32({16})},
              {},
              bn_var}));
  must(r.add({"bn_apply",
              "batch norm: (X - M) / sqrt(V + eps) * G + B",
              {eps},
              false,
              5,
              5,
              {f32({8, 16, 8, 8}), f32({16}), f32({16}), f32({16}), f32({16})},
              {},
              bn_apply}));
  must(r.add({"cross_entropy",
              "mean softmax cross-entropy of logits X [B, C] and labels T [B]",
              {},
              false,
              2,
              2,
              {f32({8, 10}), i64({8})},
              {},
              cross_entropy}));
}

}  // namespace cleave::ops
