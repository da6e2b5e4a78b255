// Contractions on oneDNN's matmul: any op whose TDL statement is `Y[..] = sum(..) A[..] * B[..]`
// with every index a plain iteration variable. That is matmul and batch_matmul with either
// transpose, linear, their gradients (linear_grad_input, linear_grad_weight,
// batch_matmul_grad_shared, and the matmuls autodiff emits) and custom ops of the same form.
//
// Each iteration dimension of the piece is batch (in A, B and Y), M (A and Y), N (B and Y) or K
// (A and B: the reduction). Each group collapses into one dimension when its dimensions are
// consecutive in every block that holds them, so the piece is one (batched) GEMM on the blocks as
// they lie, transposes expressed as strides: no reorder, no copy. A piece that splits K is just a
// smaller GEMM over its slice: its output is the partial sum the call asks for.
#include <optional>

#include "runtime/kernels/onednn_kernels.h"
#include "runtime/kernels/onednn_util.h"

namespace cleave::runtime {
namespace {

using detail::Dims;

// The iteration slot of each index when every index is a plain variable (`A[i,k]`), else none.
std::optional<std::vector<int>> plain_slots(std::vector<tdl::BoundIndex> const& indices) {
  std::vector<int> slots;
  for (auto const& ix : indices) {
    if (ix.kind != tdl::BoundIndex::Kind::linear || ix.constant != 0 || !ix.children.empty() ||
        ix.var_terms.size() != 1 || ix.var_terms[0].second != 1)
      return std::nullopt;
    slots.push_back(ix.var_terms[0].first);
  }
  return slots;
}

struct Operand {
  std::vector<int> slots;  // per block dimension
  Dims strides;            // of the block, row-major
  std::int64_t elements = 1;

  int position(int slot) const {
    for (std::size_t p = 0; p < slots.size(); ++p)
      if (slots[p] == slot) return static_cast<int>(p);
    return -1;
  }
};

// One collapsed dimension of an operand: size and stride, or nothing when it cannot collapse.
std::optional<std::pair<std::int64_t, std::int64_t>>
collapse(std::vector<int> const& group, Operand const& operand, Dims const& size) {
  if (group.empty()) return std::pair<std::int64_t, std::int64_t>{1, operand.elements};
  std::int64_t total = 1;
  for (std::size_t t = 0; t < group.size(); ++t) {
    int p = operand.position(group[t]);
    if (p < 0) return std::nullopt;
    if (t + 1 < group.size()) {
      int q = operand.position(group[t + 1]);
      if (q < 0 || operand.strides[static_cast<std::size_t>(p)] !=
                       operand.strides[static_cast<std::size_t>(q)] *
                           size[static_cast<std::size_t>(group[t + 1])])
        return std::nullopt;
    }
    total *= size[static_cast<std::size_t>(group[t])];
  }
  int last = operand.position(group.back());
  return std::pair{total, operand.strides[static_cast<std::size_t>(last)]};
}

struct Gemm {
  int a = 0, b = 0;  // input positions of A and B
  Dims a_dims, a_strides, b_dims, b_strides, y_dims, y_strides;
};

std::optional<Gemm> analyze(KernelCall const& call) {
  if (!detail::inputs_dense(call)) return std::nullopt;
  auto const& op = *call.bound;
  auto const& body = op.body();
  if (op.reducer() != tdl::Reducer::sum || op.num_slots() != static_cast<int>(op.dims().size()) ||
      body.kind != tdl::BoundExpr::Kind::binary || body.op != "*" || body.args.size() != 2 ||
      body.args[0].kind != tdl::BoundExpr::Kind::access ||
      body.args[1].kind != tdl::BoundExpr::Kind::access)
    return std::nullopt;
  auto sa = plain_slots(body.args[0].indices);
  auto sb = plain_slots(body.args[1].indices);
  auto sy = plain_slots(op.output_indices());
  if (!sa || !sb || !sy) return std::nullopt;

  Dims size = detail::box_sizes(call.piece->iter_box);
  auto operand = [&](std::vector<int> slots, tdl::Box const& region) -> std::optional<Operand> {
    Operand o{std::move(slots), detail::row_major_strides(detail::box_sizes(region)), 1};
    if (o.slots.size() != region.size()) return std::nullopt;
    for (std::size_t p = 0; p < o.slots.size(); ++p) {
      if (region[p].size() != size[static_cast<std::size_t>(o.slots[p])]) return std::nullopt;
      for (std::size_t q = 0; q < p; ++q)
        if (o.slots[q] == o.slots[p]) return std::nullopt;  // a diagonal, A[i,i]
      o.elements *= region[p].size();
    }
    return o;
  };
  Gemm g;
  g.a = body.args[0].input;
  g.b = body.args[1].input;
  // The piece's regions (the blocks' regions by the call's contract; handles() may see a call
  // whose blocks are not filled in yet).
  auto a = operand(*sa, call.piece->inputs[static_cast<std::size_t>(g.a)].box);
  auto b = operand(*sb, call.piece->inputs[static_cast<std::size_t>(g.b)].box);
  auto y = operand(*sy, call.piece->output);
  if (!a || !b || !y) return std::nullopt;

  // Groups in the order of Y (batch, M, N) and of A (K); dimensions of size 1 play no part.
  std::vector<int> batch, m, n, k;
  auto classify = [&](int slot) -> bool {
    if (size[static_cast<std::size_t>(slot)] == 1) return true;
    bool in_a = a->position(slot) >= 0, in_b = b->position(slot) >= 0;
    bool in_y = y->position(slot) >= 0;
    if (in_a && in_b && in_y)
      batch.push_back(slot);
    else if (in_a && in_y)
      m.push_back(slot);
    else if (in_b && in_y)
      n.push_back(slot);
    else if (in_a && in_b)
      k.push_back(slot);
    else
      return false;  // a dimension only one operand has (a sum over A alone, a broadcast)
    return true;
  };
  for (int slot : y->slots)
    if (!classify(slot)) return std::nullopt;
  for (int slot : a->slots)
    if (y->position(slot) < 0 && !classify(slot)) return std::nullopt;
  for (int slot : b->slots)
    if (y->position(slot) < 0 && a->position(slot) < 0) return std::nullopt;

  auto ab = collapse(batch, *a, size), am = collapse(m, *a, size), ak = collapse(k, *a, size);
  auto bb = collapse(batch, *b, size), bk = collapse(k, *b, size), bn = collapse(n, *b, size);
  auto yb = collapse(batch, *y, size), ym = collapse(m, *y, size), yn = collapse(n, *y, size);
  if (!ab || !am || !ak || !bb || !bk || !bn || !yb || !ym || !yn) return std::nullopt;
  if (batch.empty()) {
    g.a_dims = {am->first, ak->first};
    g.a_strides = {am->second, ak->second};
    g.b_dims = {bk->first, bn->first};
    g.b_strides = {bk->second, bn->second};
    g.y_dims = {ym->first, yn->first};
    g.y_strides = {ym->second, yn->second};
  } else {
    g.a_dims = {ab->first, am->first, ak->first};
    g.a_strides = {ab->second, am->second, ak->second};
    g.b_dims = {bb->first, bk->first, bn->first};
    g.b_strides = {bb->second, bk->second, bn->second};
    g.y_dims = {yb->first, ym->first, yn->first};
    g.y_strides = {yb->second, ym->second, yn->second};
  }
  return g;
}

struct MatmulEntry {
  dnnl::matmul primitive;
  dnnl::memory::desc a, b, y, scratch;
};

class ContractionKernel final : public Kernel {
 public:
  std::string_view name() const override { return "onednn_matmul"; }

  bool handles(KernelCall const& call) const override {
    auto g = analyze(call);
    return g && entry(*g) != nullptr;
  }

  Status run(KernelCall const& call) const override {
    auto g = analyze(call);
    std::shared_ptr<MatmulEntry const> e = g ? entry(*g) : nullptr;
    if (!e) return Error(ErrorCode::unsupported, "onednn_matmul: not a contraction it handles");
    CLEAVE_CHECK_OK(detail::check_data(name(), call));
    return detail::execute(name(), e->primitive, e->scratch,
                           {{DNNL_ARG_SRC, detail::wrap(e->a, call.inputs[g->a].data)},
                            {DNNL_ARG_WEIGHTS, detail::wrap(e->b, call.inputs[g->b].data)},
                            {DNNL_ARG_DST, detail::wrap(e->y, call.output.data)}});
  }

 private:
  std::shared_ptr<MatmulEntry const> entry(Gemm const& g) const {
    std::string key = detail::make_key(
        "mm", {g.a_dims, g.a_strides, g.b_dims, g.b_strides, g.y_dims, g.y_strides});
    return cache_.get(key, [&] {
      auto e = std::make_shared<MatmulEntry>();
      e->a = detail::plain_desc(g.a_dims, g.a_strides);
      e->b = detail::plain_desc(g.b_dims, g.b_strides);
      e->y = detail::plain_desc(g.y_dims, g.y_strides);
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(e->a, e->b, e->y), detail::default_attr(),
                                      detail::cpu_engine());
      e->scratch = pd.scratchpad_desc();
      e->primitive = dnnl::matmul(pd);
      return std::shared_ptr<MatmulEntry const>(std::move(e));
    });
  }

  detail::PrimitiveCache<MatmulEntry> cache_;
};

}  // namespace

std::unique_ptr<Kernel> make_contraction_kernel() {
  return std::make_unique<ContractionKernel>();
}

}  // namespace cleave::runtime
