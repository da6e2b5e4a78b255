// The plain-loop kernel for everything oneDNN has no primitive for: any op whose TDL statement has
// no nested reduction (optimizer updates, activation and normalization gradients, batch norm's
// statistics and apply, dropout, scale, cast, transpose, slice, concat, reshape, embedding's
// gather, global pooling, sum_to_shape, ...). It evaluates the statement's expression in fp32
// over one row of the piece at a time (the innermost iteration dimension), node by node on
// vectors, instead of element by element through a tree as the interpreter does; reads whose
// indices are affine and stay inside their block are strided loads, the rest (padding, floor
// division, gathers) compute their coordinates per element. A top-level reduction accumulates in
// the output block, which starts at the reducer's identity (a partial piece yields its partial).
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/kernels/onednn_kernels.h"
#include "support/assert.h"

namespace cleave::runtime {
namespace {

using tdl::BoundExpr;
using tdl::BoundIndex;

enum class Fn {
  constant,
  var,
  access,
  neg,
  add,
  sub,
  mul,
  div,
  mod,
  lt,
  le,
  gt,
  ge,
  eq,
  ne,
  exp,
  log,
  sqrt,
  rsqrt,
  tanh,
  sigmoid,
  relu,
  erf,
  abs,
  max,
  min,
  pow,
  select
};

std::optional<Fn> function_of(BoundExpr const& e) {
  static std::pair<char const*, Fn> const binary[] = {
      {"+", Fn::add}, {"-", Fn::sub}, {"*", Fn::mul}, {"/", Fn::div}, {"%", Fn::mod}, {"<", Fn::lt},
      {"<=", Fn::le}, {">", Fn::gt},  {">=", Fn::ge}, {"==", Fn::eq}, {"!=", Fn::ne}};
  static std::pair<char const*, Fn> const calls[] = {
      {"exp", Fn::exp},      {"log", Fn::log},         {"sqrt", Fn::sqrt}, {"rsqrt", Fn::rsqrt},
      {"tanh", Fn::tanh},    {"sigmoid", Fn::sigmoid}, {"relu", Fn::relu}, {"erf", Fn::erf},
      {"abs", Fn::abs},      {"max", Fn::max},         {"min", Fn::min},   {"pow", Fn::pow},
      {"select", Fn::select}};
  switch (e.kind) {
  case BoundExpr::Kind::constant:
    return Fn::constant;
  case BoundExpr::Kind::var:
    return Fn::var;
  case BoundExpr::Kind::access:
    return Fn::access;
  case BoundExpr::Kind::neg:
    return Fn::neg;
  case BoundExpr::Kind::binary:
    for (auto const& [name, fn] : binary)
      if (e.op == name) return fn;
    return std::nullopt;
  case BoundExpr::Kind::call:
    for (auto const& [name, fn] : calls)
      if (e.op == name) return fn;
    return std::nullopt;
  case BoundExpr::Kind::reduce:
    return std::nullopt;  // nested reductions: the interpreter's
  }
  return std::nullopt;
}

// A read of a block (an input's, or the output's write).
struct Access {
  std::vector<BoundIndex> const* indices = nullptr;
  float const* data = nullptr;
  tdl::Box region;
  std::vector<std::int64_t> strides;
  float pad = 0;
  bool affine = false;  // every index linear in the slots and every read inside the block
  // Affine: the offset at a point is base + sum over slots of its value times steps[slot].
  std::int64_t base = 0;
  std::vector<std::int64_t> steps;
};

struct Node {
  Fn fn = Fn::constant;
  float value = 0;
  int slot = -1;
  int access = -1;
  int args[3] = {-1, -1, -1};
};

bool indices_supported(std::vector<BoundIndex> const& indices) {
  for (auto const& ix : indices) {
    for (auto const& child : ix.children)
      if (!indices_supported({child})) return false;
    if (ix.kind == BoundIndex::Kind::gather && ix.input < 0) return false;
  }
  return true;
}

bool linear(std::vector<BoundIndex> const& indices) {
  for (auto const& ix : indices)
    if (ix.kind != BoundIndex::Kind::linear || !ix.children.empty()) return false;
  return true;
}

class Evaluator {
 public:
  explicit Evaluator(KernelCall const& call) : call_(call), op_(*call.bound) {}

  // Flattens the body into nodes in post-order; false when some part is not supported.
  bool compile() {
    for (std::size_t in = 0; in < call_.inputs.size() && in < call_.piece->inputs.size(); ++in) {
      auto const& box = call_.piece->inputs[in].box;
      blocks_.push_back(
          Access{nullptr, call_.inputs[in].data, box, row_major(box), 0, false, 0, {}});
    }
    if (op_.opaque() || op_.num_slots() != static_cast<int>(op_.dims().size())) return false;
    if (call_.inputs.size() != op_.inputs().size() || call_.piece == nullptr) return false;
    if (!indices_supported(op_.output_indices()) || !linear(op_.output_indices())) return false;
    return add(op_.body()) >= 0;
  }

  void run(float* out) {
    std::size_t dims = op_.dims().size();
    auto const& box = call_.piece->iter_box;
    for (auto& a : accesses_) {
      a.affine = a.affine && a.data != nullptr;
      if (a.affine) flatten(a, dims);
    }
    Access out_access{&op_.output_indices(),
                      nullptr,
                      call_.piece->output,
                      row_major(call_.piece->output),
                      0,
                      true,
                      0,
                      {}};
    flatten(out_access, dims);
    // A row spans the innermost dimension, and the ones outside it wherever every access steps
    // through them as through one dimension (contiguous blocks, element-wise ops): long rows,
    // few of them.
    std::size_t merged = dims == 0 ? 0 : 1;
    bool all_affine =
        std::all_of(accesses_.begin(), accesses_.end(), [](Access const& a) { return a.affine; });
    while (all_affine && merged < dims) {
      std::size_t d = dims - 1 - merged;  // the candidate, just outside the row
      auto fits = [&](Access const& a) {
        return slot_step(a, d) == slot_step(a, d + 1) * box[d + 1].size();
      };
      if (d + 1 >= 64 || (var_slots_ >> d & 3u) != 0 || !fits(out_access) ||
          !std::all_of(accesses_.begin(), accesses_.end(), fits))
        break;
      ++merged;
    }
    std::int64_t len = 1;
    for (std::size_t d = dims - merged; d < dims; ++d)
      len *= box[d].size();
    // Short rows (a [C] parameter broadcast over small images, or a [C, 1, 1] bias) are
    // evaluated several at once: loads and stores go row by row, the arithmetic over all of them,
    // so the per-row cost is the loads', not every node's.
    std::int64_t rows = len >= chunk ? 1 : chunk / std::max<std::int64_t>(len, 1);
    buffers_.assign(nodes_.size(),
                    std::vector<float>(static_cast<std::size_t>(std::min(len, chunk) * rows)));
    for (std::size_t k = 0; k < nodes_.size(); ++k)  // constants once, not per chunk
      if (nodes_[k].fn == Fn::constant)
        std::fill(buffers_[k].begin(), buffers_[k].end(), nodes_[k].value);
    values_.assign(nodes_.size(), nullptr);
    tdl::Reducer reducer = op_.reducer();
    std::int64_t out_size = tdl::box_volume(call_.piece->output);
    if (reducer != tdl::Reducer::none)
      std::fill(out, out + out_size, static_cast<float>(tdl::reducer_identity(reducer)));
    if (reducer == tdl::Reducer::sum) sums_.assign(static_cast<std::size_t>(out_size), 0.0);
    env_.assign(dims, 0);
    for (std::size_t d = 0; d < dims; ++d)
      env_[d] = box[d].lo;
    outer_ = static_cast<int>(dims - merged) - 1;
    Rows at{out, &out_access, reducer, 1};
    while (true) {
      if (rows == 1) {
        for (std::int64_t from = 0; from < len; from += chunk)
          chunk_of_rows(at, from, std::min(chunk, len - from));
        if (!next_row()) break;
        continue;
      }
      // The group: up to `rows` rows from here; env_ ends on the row after it.
      group_start_ = env_;
      at.count = 1;
      bool more = next_row();
      for (; more && at.count < rows; ++at.count)
        more = next_row();
      auto after = env_;
      env_ = group_start_;
      chunk_of_rows(at, 0, len);
      if (!more) break;
      env_ = std::move(after);
    }
    if (reducer == tdl::Reducer::sum)
      std::transform(sums_.begin(), sums_.end(), out,
                     [](double x) { return static_cast<float>(x); });
  }

 private:
  // Where a chunk's values go, and how many rows it holds.
  struct Rows {
    float* out;
    Access const* out_access;
    tdl::Reducer reducer;
    std::int64_t count;
  };

  // The next point of the dimensions outside the row (an odometer); false past the last.
  bool next_row() {
    for (int d = outer_; d >= 0; --d) {
      auto du = static_cast<std::size_t>(d);
      if (++env_[du] < call_.piece->iter_box[du].hi) return true;
      env_[du] = call_.piece->iter_box[du].lo;
    }
    return false;
  }

  // Runs `f(r)` at each row of the group from its first (env_ is left on the group's first row).
  template <typename F> void each_row(std::int64_t count, F f) {
    if (count == 1) return f(0);
    for (std::int64_t r = 0; r < count; ++r) {
      f(r);
      next_row();
    }
    env_ = group_start_;
  }

  static std::vector<std::int64_t> row_major(tdl::Box const& region) {
    std::vector<std::int64_t> s(region.size(), 1);
    for (std::size_t i = region.size(); i-- > 1;)
      s[i - 1] = s[i] * region[i].size();
    return s;
  }

  // How far an affine access moves in its block per step of `slot`.
  static std::int64_t slot_step(Access const& a, std::size_t slot) {
    std::int64_t step = 0;
    for (std::size_t t = 0; t < a.indices->size(); ++t)
      for (auto [s, coef] : (*a.indices)[t].var_terms)
        if (static_cast<std::size_t>(s) == slot) step += coef * a.strides[t];
    return step;
  }

  int add(BoundExpr const& e) {
    auto fn = function_of(e);
    if (!fn) return -1;
    Node n;
    n.fn = *fn;
    n.value = static_cast<float>(e.value);
    n.slot = e.slot;
    if (*fn == Fn::var && e.slot >= 0 && e.slot < 64) var_slots_ |= std::uint64_t{1} << e.slot;
    if (*fn == Fn::access) {
      auto in = static_cast<std::size_t>(e.input);
      if (!indices_supported(e.indices)) return -1;
      auto const& region = call_.piece->inputs[in];
      Access a{&e.indices,
               call_.inputs[in].data,
               region.box,
               row_major(region.box),
               static_cast<float>(op_.inputs()[in].pad_value),
               linear(e.indices) && !region.has_padding(),
               0,
               {}};
      n.access = static_cast<int>(accesses_.size());
      accesses_.push_back(std::move(a));
    }
    for (std::size_t i = 0; i < e.args.size() && i < 3; ++i) {
      n.args[i] = add(e.args[i]);
      if (n.args[i] < 0) return -1;
    }
    nodes_.push_back(n);
    return static_cast<int>(nodes_.size()) - 1;
  }

  std::int64_t index(BoundIndex const& b) const {
    switch (b.kind) {
    case BoundIndex::Kind::linear: {
      std::int64_t v = b.constant;
      for (auto [slot, coef] : b.var_terms)
        v += coef * env_[static_cast<std::size_t>(slot)];
      for (std::size_t c = 0; c < b.children.size(); ++c)
        v += b.child_coefs[c] * index(b.children[c]);
      return v;
    }
    case BoundIndex::Kind::floordiv:
    case BoundIndex::Kind::mod: {
      std::int64_t a = index(b.children[0]);
      std::int64_t q = a / b.divisor;
      if (a % b.divisor != 0 && a < 0) --q;
      return b.kind == BoundIndex::Kind::floordiv ? q : a - q * b.divisor;
    }
    case BoundIndex::Kind::gather: {
      Access const& block = blocks_[static_cast<std::size_t>(b.input)];
      std::int64_t at = offset(b.children, block);
      return at < 0 || block.data == nullptr ? -1 : static_cast<std::int64_t>(block.data[at]);
    }
    }
    return 0;
  }

  // The offset of the access at the current point in its block, or -1 outside it.
  std::int64_t offset(std::vector<BoundIndex> const& indices, Access const& a) const {
    std::int64_t at = 0;
    for (std::size_t t = 0; t < indices.size(); ++t) {
      std::int64_t c = index(indices[t]);
      if (c < a.region[t].lo || c >= a.region[t].hi) return -1;
      at += (c - a.region[t].lo) * a.strides[t];
    }
    return at;
  }

  // An affine access's offset as one linear function of the slots (computed once per call, so
  // a row's start costs a dot product, however short the rows).
  static void flatten(Access& a, std::size_t dims) {
    a.base = 0;
    a.steps.assign(dims, 0);
    for (std::size_t t = 0; t < a.indices->size(); ++t) {
      auto const& ix = (*a.indices)[t];
      a.base += (ix.constant - a.region[t].lo) * a.strides[t];
      for (auto [slot, coef] : ix.var_terms)
        a.steps[static_cast<std::size_t>(slot)] += coef * a.strides[t];
    }
  }

  // Offset at the row's start and the step along the innermost slot (affine accesses).
  std::pair<std::int64_t, std::int64_t> affine_row(Access const& a, int inner) const {
    std::int64_t base = a.base;
    for (std::size_t d = 0; d < env_.size(); ++d)
      base += env_[d] * a.steps[d];
    return {base, inner >= 0 ? a.steps[static_cast<std::size_t>(inner)] : 0};
  }

  // Elements [from, from + len) of the row: in place where they are contiguous in the block,
  // else loaded into v.
  float const* load(Access const& a, float* v, std::int64_t from, std::int64_t len, int inner) {
    if (a.affine) {
      auto [base, step] = affine_row(a, inner);
      float const* p = a.data + base + from * step;
      if (step == 1) return p;
      for (std::int64_t i = 0; i < len; ++i)
        v[i] = p[i * step];
      return v;
    }
    std::int64_t start = inner >= 0 ? env_[static_cast<std::size_t>(inner)] : 0;
    for (std::int64_t i = 0; i < len; ++i) {
      if (inner >= 0) env_[static_cast<std::size_t>(inner)] = start + from + i;
      std::int64_t at = offset(*a.indices, a);
      v[i] = at < 0 ? a.pad : a.data[at];
    }
    if (inner >= 0) env_[static_cast<std::size_t>(inner)] = start;
    return v;
  }

  // Elements [from, from + len) of each of the group's rows (a long row goes a chunk at a time,
  // so that the nodes' buffers stay in cache: a row spanning a whole 512x512x3x3 weight's update
  // once took 47 MB of buffers, allocated and faulted in per call).
  void chunk_of_rows(Rows const& at, std::int64_t from, std::int64_t len) {
    std::int64_t total = len * at.count;
    int inner = env_.empty() ? -1 : static_cast<int>(env_.size()) - 1;
    for (std::size_t k = 0; k < nodes_.size(); ++k) {
      Node const& n = nodes_[k];
      float* v = buffers_[k].data();
      values_[k] = v;
      auto arg = [&](int i) {
        return n.args[i] >= 0 ? values_[static_cast<std::size_t>(n.args[i])] : nullptr;
      };
      float const *a = arg(0), *b = arg(1), *c = arg(2);
      auto each = [&](auto f) {
        for (std::int64_t i = 0; i < total; ++i)
          v[i] = f(i);
      };
      switch (n.fn) {
      case Fn::constant:  // filled once by run()
        break;
      case Fn::var:
        each_row(at.count, [&](std::int64_t r) {
          auto x = env_[static_cast<std::size_t>(n.slot)];
          bool moves = n.slot == inner;
          if (moves) x += from;
          for (std::int64_t i = 0; i < len; ++i)
            v[r * len + i] = static_cast<float>(moves ? x + i : x);
        });
        break;
      case Fn::access: {
        Access const& access = accesses_[static_cast<std::size_t>(n.access)];
        if (at.count == 1) {
          values_[k] = load(access, v, from, len, inner);
          break;
        }
        each_row(at.count, [&](std::int64_t r) {
          float const* p = load(access, v + r * len, from, len, inner);
          if (p != v + r * len) std::copy(p, p + len, v + r * len);
        });
        break;
      }
      case Fn::neg:
        each([&](auto i) { return -a[i]; });
        break;
      case Fn::add:
        each([&](auto i) { return a[i] + b[i]; });
        break;
      case Fn::sub:
        each([&](auto i) { return a[i] - b[i]; });
        break;
      case Fn::mul:
        each([&](auto i) { return a[i] * b[i]; });
        break;
      case Fn::div:
        each([&](auto i) { return a[i] / b[i]; });
        break;
      case Fn::mod:
        each([&](auto i) {
          float r = std::fmod(a[i], b[i]);
          return r != 0 && (r < 0) != (b[i] < 0) ? r + b[i] : r;
        });
        break;
      case Fn::lt:
        each([&](auto i) { return a[i] < b[i] ? 1.f : 0.f; });
        break;
      case Fn::le:
        each([&](auto i) { return a[i] <= b[i] ? 1.f : 0.f; });
        break;
      case Fn::gt:
        each([&](auto i) { return a[i] > b[i] ? 1.f : 0.f; });
        break;
      case Fn::ge:
        each([&](auto i) { return a[i] >= b[i] ? 1.f : 0.f; });
        break;
      case Fn::eq:
        each([&](auto i) { return a[i] == b[i] ? 1.f : 0.f; });
        break;
      case Fn::ne:
        each([&](auto i) { return a[i] != b[i] ? 1.f : 0.f; });
        break;
      case Fn::exp:
        each([&](auto i) { return std::exp(a[i]); });
        break;
      case Fn::log:
        each([&](auto i) { return std::log(a[i]); });
        break;
      case Fn::sqrt:
        each([&](auto i) { return std::sqrt(a[i]); });
        break;
      case Fn::rsqrt:
        each([&](auto i) { return 1.f / std::sqrt(a[i]); });
        break;
      case Fn::tanh:
        each([&](auto i) { return std::tanh(a[i]); });
        break;
      case Fn::sigmoid:
        each([&](auto i) { return 1.f / (1.f + std::exp(-a[i])); });
        break;
      case Fn::relu:
        each([&](auto i) { return a[i] > 0 ? a[i] : 0.f; });
        break;
      case Fn::erf:
        each([&](auto i) { return std::erf(a[i]); });
        break;
      case Fn::abs:
        each([&](auto i) { return std::abs(a[i]); });
        break;
      case Fn::max:
        each([&](auto i) { return std::max(a[i], b[i]); });
        break;
      case Fn::min:
        each([&](auto i) { return std::min(a[i], b[i]); });
        break;
      case Fn::pow:
        pow(n, a, b, v, total);
        break;
      case Fn::select:
        each([&](auto i) { return a[i] != 0 ? b[i] : c[i]; });
        break;
      }
    }
    each_row(at.count, [&](std::int64_t r) { store(at, values_.back() + r * len, from, len); });
  }

  // A row summed into one element (a reduction along the row), in double like every sum here,
  // in four independent sums.
  static double sum(float const* v, std::int64_t len) {
    double acc[4] = {0, 0, 0, 0};
    std::int64_t i = 0;
    for (; i + 4 <= len; i += 4)
      for (int k = 0; k < 4; ++k)
        acc[k] += v[i + k];
    for (; i < len; ++i)
      acc[0] += v[i];
    return (acc[0] + acc[1]) + (acc[2] + acc[3]);
  }

  // x^y; a constant exponent that has a cheaper form (batch norm's variance gradients raise to
  // -1.5, squares) takes it: std::pow costs ten times a multiply.
  void pow(Node const& n, float const* a, float const* b, float* v, std::int64_t total) const {
    Node const& exponent = nodes_[static_cast<std::size_t>(n.args[1])];
    float e = exponent.fn == Fn::constant ? exponent.value : NAN;
    auto each = [&](auto f) {
      for (std::int64_t i = 0; i < total; ++i)
        v[i] = f(a[i]);
    };
    if (e == 2.f)
      each([](float x) { return x * x; });
    else if (e == 1.f)
      each([](float x) { return x; });
    else if (e == 0.5f)
      each([](float x) { return std::sqrt(x); });
    else if (e == -0.5f)
      each([](float x) { return 1.f / std::sqrt(x); });
    else if (e == -1.f)
      each([](float x) { return 1.f / x; });
    else if (e == -1.5f)
      each([](float x) { return 1.f / (x * std::sqrt(x)); });
    else
      for (std::int64_t i = 0; i < total; ++i)
        v[i] = std::pow(a[i], b[i]);
  }

  // One row's values into the output block (accumulated under a reducer).
  void store(Rows const& at, float const* v, std::int64_t from, std::int64_t len) {
    int inner = env_.empty() ? -1 : static_cast<int>(env_.size()) - 1;
    auto [base, step] = affine_row(*at.out_access, inner);
    float* o = at.out + base + from * step;
    switch (at.reducer) {
    case tdl::Reducer::none:
      if (step == 1) {
        std::copy(v, v + len, o);
        break;
      }
      for (std::int64_t i = 0; i < len; ++i)
        o[i * step] = v[i];
      break;
    case tdl::Reducer::sum: {
      double* total = sums_.data() + (o - at.out);
      if (step == 0) {
        total[0] += sum(v, len);
        break;
      }
      for (std::int64_t i = 0; i < len; ++i)
        total[i * step] += v[i];
      break;
    }
    case tdl::Reducer::max:
      for (std::int64_t i = 0; i < len; ++i)
        o[i * step] = std::max(o[i * step], v[i]);
      break;
    case tdl::Reducer::min:
      for (std::int64_t i = 0; i < len; ++i)
        o[i * step] = std::min(o[i * step], v[i]);
      break;
    case tdl::Reducer::prod:
      for (std::int64_t i = 0; i < len; ++i)
        o[i * step] *= v[i];
      break;
    }
  }

  static constexpr std::int64_t chunk = 2048;  // elements of a row evaluated at once

  KernelCall const& call_;
  tdl::BoundOp const& op_;
  std::vector<Node> nodes_;
  std::vector<Access> accesses_;
  std::vector<Access> blocks_;  // each input's block, for gathers
  std::vector<std::vector<float>> buffers_;
  std::vector<float const*> values_;  // per node: its values in the current chunk
  // A sum's output accumulated in double, rounded to the fp32 output once at the end: summed in
  // fp32, the thousands of terms of batch norm's statistics and gradients drift by about
  // n * eps / 2 relative, differently for each split of them, and batch norm's backward pass
  // (a gradient minus its mean) magnifies that past --check's tolerance (docs/runtime.md).
  std::vector<double> sums_;
  std::vector<std::int64_t> env_;
  std::vector<std::int64_t> group_start_;  // the first row of the group being evaluated
  int outer_ = -1;                         // the innermost dimension outside the row
  std::uint64_t var_slots_ = 0;            // slots whose values the expression uses (`c == T[b]`)
};

class ExpressionKernel final : public Kernel {
 public:
  std::string_view name() const override { return "loop_expression"; }

  bool handles(KernelCall const& call) const override {
    if (call.bound == nullptr || call.piece == nullptr || !call.piece->output_exact) return false;
    return Evaluator(call).compile();
  }

  Status run(KernelCall const& call) const override {
    if (call.bound == nullptr || call.piece == nullptr || !call.piece->output_exact)
      return Error(ErrorCode::unsupported, "loop_expression: not a piece it handles");
    Evaluator e(call);
    if (!e.compile())
      return Error(ErrorCode::unsupported, "loop_expression: the statement has nested reductions");
    if (call.output.data == nullptr)
      return Error(ErrorCode::invalid_argument, "loop_expression: the output has no data");
    for (std::size_t i = 0; i < call.inputs.size(); ++i)
      if (call.inputs[i].data == nullptr && !call.piece->inputs[i].empty())
        return Error(ErrorCode::invalid_argument,
                     "loop_expression: input " + std::to_string(i) + " has no data");
    auto parts = parallel_parts(call);
    if (parts.empty()) {
      e.run(call.output.data);
      return Status::ok();
    }
    // Element-wise: every output element is written by one point of the box, so the parts write
    // disjoint elements of the one output block, each by an Evaluator of its own.
#pragma omp parallel for num_threads(static_cast <int>(parts.size())) schedule(static, 1)
    for (std::size_t i = 0; i < parts.size(); ++i) {
      tdl::PieceInfo part = *call.piece;
      part.iter_box = parts[i];
      KernelCall sub = call;
      sub.piece = &part;
      Evaluator each(sub);
      bool compiled = each.compile();  // as the whole piece's did: the same statement
      CLEAVE_ASSERT(compiled, "loop_expression: a part of a piece does not compile");
      each.run(call.output.data);
    }
    return Status::ok();
  }

 private:
  // The worker's OpenMP threads (the executor sets them per device: `cleave run --threads`) share
  // a large element-wise piece: its box cut evenly along the outermost dimension with a part for
  // each. None (run whole) for one thread, a small piece, or a reduction, whose parts would add
  // into shared output elements. (Element-wise ops were a third of a ResNet-18 step on two
  // threads, the optimizer's updates most of it, while oneDNN's kernels used both.)
  // Under ThreadSanitizer none either: Debian's libgomp is not instrumented, so its barriers are
  // invisible to it and it reports the pool threads' reuse of memory across regions as races.
  static std::vector<tdl::Box> parallel_parts(KernelCall const& call) {
#if defined(__SANITIZE_THREAD__)
    (void)call;
    return {};
#else
    static constexpr std::int64_t min_points = 1 << 15;
    auto threads = static_cast<std::int64_t>(omp_get_max_threads());
    auto const& box = call.piece->iter_box;
    if (threads < 2 || call.bound->reducer() != tdl::Reducer::none ||
        tdl::box_volume(box) < min_points)
      return {};
    for (std::size_t d = 0; d < box.size(); ++d)
      if (box[d].size() >= threads) return tdl::split_evenly(box, static_cast<int>(d), threads);
    return {};
#endif
  }
};

}  // namespace

std::unique_ptr<Kernel> make_expression_kernel() {
  return std::make_unique<ExpressionKernel>();
}

}  // namespace cleave::runtime
