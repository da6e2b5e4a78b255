#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "support/checked.h"
#include "tdl/bound_op.h"
#include "tdl/parser.h"
#include "tdl/piece.h"

namespace cleave::tdl {

char const* reducer_name(Reducer r) {
  switch (r) {
  case Reducer::none:
    return "none";
  case Reducer::sum:
    return "sum";
  case Reducer::max:
    return "max";
  case Reducer::min:
    return "min";
  case Reducer::prod:
    return "prod";
  }
  return "?";
}

double reducer_identity(Reducer r) {
  switch (r) {
  case Reducer::max:
    return -std::numeric_limits<double>::infinity();
  case Reducer::min:
    return std::numeric_limits<double>::infinity();
  case Reducer::prod:
    return 1.0;
  case Reducer::none:
  case Reducer::sum:
    return 0.0;
  }
  return 0.0;
}

double reduce_values(Reducer r, double acc, double value) {
  switch (r) {
  case Reducer::max:
    return std::max(acc, value);
  case Reducer::min:
    return std::min(acc, value);
  case Reducer::prod:
    return acc * value;
  case Reducer::none:
  case Reducer::sum:
    return acc + value;
  }
  return acc;
}

std::string BoundOp::describe_space() const {
  std::string out = "parallel";
  for (int d = 0; d < num_parallel_; ++d)
    out += " " + dims_[d].name + "=" + std::to_string(dims_[d].extent);
  if (num_parallel_ == 0) out += " (none: scalar output)";
  if (static_cast<std::size_t>(num_parallel_) < dims_.size()) {
    out += std::string(" | reduction(") + reducer_name(reducer_) + ")";
    for (std::size_t d = num_parallel_; d < dims_.size(); ++d)
      out += " " + dims_[d].name + "=" + std::to_string(dims_[d].extent);
  }
  return out;
}

namespace {

Reducer parse_reducer(std::string const& name) {
  if (name == "sum") return Reducer::sum;
  if (name == "max") return Reducer::max;
  if (name == "min") return Reducer::min;
  return Reducer::prod;
}

int function_arity(std::string const& name) {
  static const std::pair<char const*, int> table[] = {
      {"exp", 1}, {"log", 1}, {"sqrt", 1}, {"rsqrt", 1}, {"tanh", 1}, {"sigmoid", 1}, {"relu", 1},
      {"erf", 1}, {"abs", 1}, {"max", 2},  {"min", 2},   {"pow", 2},  {"select", 3}};
  for (auto [n, a] : table)
    if (name == n) return a;
  return -1;
}

constexpr char const* known_functions =
    "exp, log, sqrt, rsqrt, tanh, sigmoid, relu, erf, abs (one argument), max, min, pow (two), "
    "select(cond, a, b)";

std::uint64_t bit(int slot) {
  return std::uint64_t{1} << slot;
}

}  // namespace

class Binder {
 public:
  Binder(Statement const& st, BindContext const& ctx) : st_(st), ctx_(ctx) {}

  Expected<std::shared_ptr<BoundOp const>> run() {
    op_ = std::make_shared<BoundOp>();
    op_->text_ = st_.text;
    op_->output_name_ = st_.output.name;
    for (auto const& [name, type] : ctx_.inputs) {
      if (name == st_.output.name)
        return err(st_.output.column, "the output '" + name + "' is also an input of the op");
      op_->inputs_.push_back({name, type, 0.0});
    }
    for (auto const& pad : st_.pads) {
      int i = input_position(pad.tensor);
      if (i < 0)
        return err(pad.column,
                   "pad(" + pad.tensor + "=...) names no input of the op" + inputs_hint());
      op_->inputs_[i].pad_value = pad.value;
    }

    // Parallel dims: every name in the output's indices that is not a parameter.
    if (st_.output.indices.size() > 12)
      return err(st_.output.column, "tensors of rank above 12 are not supported",
                 ErrorCode::unsupported);
    for (auto const& index : st_.output.indices)
      collect_output_vars(index);
    // Slots are bits of a 64-bit mask (BoundExpr::deps); reductions check their own (declare).
    if (op_->slot_names_.size() > 64)
      return err(st_.output.column, "more than 64 iteration variables; split the op into several ops", ErrorCode::unsupported);
    op_->num_parallel_ = static_cast<int>(op_->slot_names_.size());
    for (std::size_t d = 0; d < st_.output.extents.size(); ++d) {
      if (!st_.output.extents[d]) continue;
      IndexExpr const& index = st_.output.indices[d];
      auto slot = lookup_var(index.name);
      if (!slot) return err(index.column, "'" + index.name + "' is a parameter, not a variable");
      CLEAVE_TRY(BoundIndex ext, bind_index(*st_.output.extents[d]));
      if (!ext.is_constant() || ext.constant < 1)
        return err(st_.output.extents[d]->column,
                   "the extent of '" + index.name + "' must be a positive constant");
      op_->slot_extents_[*slot] = ext.constant;
      explicit_extent_[*slot] = true;
      extent_source_[*slot] = "its declaration";
    }

    Expr const* body = &st_.rhs;
    if (st_.rhs.kind == Expr::Kind::reduce) {
      op_->reducer_ = parse_reducer(st_.rhs.name);
      for (auto const& v : st_.rhs.vars) {
        CLEAVE_CHECK_OK(declare(v));
      }
      body = &st_.rhs.args[0];
    }
    int num_dims = static_cast<int>(op_->slot_names_.size());

    if (body->kind == Expr::Kind::opaque) {
      op_->opaque_ = true;
      CLEAVE_TRY(op_->body_, bind_opaque(*body));
    } else {
      CLEAVE_TRY(op_->body_, bind_expr(*body));
    }

    for (auto const& index : st_.output.indices) {
      CLEAVE_TRY(BoundIndex b, bind_index(index));
      if (b.kind != BoundIndex::Kind::linear || !b.children.empty())
        return err(index.column, "output indices must be affine (no division, modulo or gather)");
      for (auto [slot, coef] : b.var_terms)
        if (coef < 0)
          return err(index.column, "output indices must not have negative coefficients");
      op_->output_indices_.push_back(std::move(b));
    }

    collect_accesses(op_->body_);
    CLEAVE_CHECK_OK(infer_extents());
    CLEAVE_CHECK_OK(check_index_magnitudes());
    CLEAVE_CHECK_OK(bind_output(num_dims));
    for (int s = 0; s < num_dims; ++s) {
      op_->dims_.push_back({op_->slot_names_[s], op_->slot_extents_[s],
                            s < op_->num_parallel_ ? DimKind::parallel : DimKind::reduction, true,
                            ""});
    }
    CLEAVE_CHECK_OK(mark_splittable());
    // Every piece's FLOPs and bytes are at most the whole space's: if those fit in int64, no
    // piece's overflow (issue 23).
    Box whole;
    for (auto const& d : op_->dims_)
      whole.push_back({0, d.extent});
    if (auto all = analyze_piece(*op_, whole); !all) return std::move(all).error();
    return std::shared_ptr<BoundOp const>(std::move(op_));
  }

 private:
  Error err(int column, std::string message, ErrorCode code = ErrorCode::invalid_argument) const {
    return Error(code, message + " (column " + std::to_string(column) + ")\n" +
                           point_at(st_.text, column));
  }

  std::string inputs_hint() const {
    std::string out = "; the op's inputs are";
    if (ctx_.inputs.empty()) return out + " none";
    for (std::size_t i = 0; i < ctx_.inputs.size(); ++i)
      out += (i ? ", " : " ") + ctx_.inputs[i].first;
    return out;
  }

  int input_position(std::string const& name) const {
    for (std::size_t i = 0; i < ctx_.inputs.size(); ++i)
      if (ctx_.inputs[i].first == name) return static_cast<int>(i);
    return -1;
  }

  std::optional<int> lookup_var(std::string const& name) const {
    for (auto it = scope_.rbegin(); it != scope_.rend(); ++it)
      if (it->first == name) return it->second;
    return std::nullopt;
  }

  std::optional<double> lookup_param(std::string const& name) const {
    auto it = ctx_.params.find(name);
    if (it == ctx_.params.end()) return std::nullopt;
    return it->second;
  }

  int new_slot(std::string const& name) {
    int slot = static_cast<int>(op_->slot_names_.size());
    op_->slot_names_.push_back(name);
    auto fixed = ctx_.extents.find(name);
    op_->slot_extents_.push_back(fixed == ctx_.extents.end() ? -1 : fixed->second);
    explicit_extent_.push_back(fixed != ctx_.extents.end());
    extent_source_.emplace_back("the op's definition");
    scope_.emplace_back(name, slot);
    return slot;
  }

  void collect_output_vars(IndexExpr const& e) {
    if (e.kind == IndexExpr::Kind::name && !lookup_param(e.name) && !lookup_var(e.name)) {
      new_slot(e.name);
      output_var_columns_.push_back(e.column);
    }
    for (auto const& a : e.args)
      collect_output_vars(a);
  }

  Status declare(VarDecl const& v) {
    if (lookup_var(v.name) || lookup_param(v.name))
      return err(v.column, "'" + v.name + "' is already a variable or parameter; use a new name");
    if (op_->slot_names_.size() >= 64)
      return err(v.column, "more than 64 iteration variables; split the op into several ops", ErrorCode::unsupported);
    int slot = new_slot(v.name);
    if (v.extent) {
      auto ext = bind_index(*v.extent);
      if (!ext) return std::move(ext).error();
      if (!ext->is_constant() || ext->constant < 1)
        return err(v.extent->column, "the extent of '" + v.name +
                                         "' must be a positive constant (an integer or parameter)");
      op_->slot_extents_[slot] = ext->constant;
      explicit_extent_[slot] = true;
      extent_source_[slot] = "its declaration";
    }
    return Status::ok();
  }

  static BoundIndex as_linear(BoundIndex b) {
    if (b.kind == BoundIndex::Kind::linear) return b;
    BoundIndex out;
    out.child_coefs.push_back(1);
    out.children.push_back(std::move(b));
    return out;
  }

  // Affine index arithmetic; an overflow sets `overflow` (bind_index reports it).
  static BoundIndex scaled(BoundIndex b, std::int64_t c, bool& overflow) {
    auto mul = [&](std::int64_t& v) {
      auto r = checked_mul(v, c);
      overflow = overflow || !r;
      v = r.value_or(0);
    };
    b = as_linear(std::move(b));
    mul(b.constant);
    for (auto& t : b.var_terms)
      mul(t.second);
    for (auto& k : b.child_coefs)
      mul(k);
    return b;
  }

  static BoundIndex added(BoundIndex a, BoundIndex b, bool& overflow) {
    auto add = [&](std::int64_t& v, std::int64_t w) {
      auto r = checked_add(v, w);
      overflow = overflow || !r;
      v = r.value_or(0);
    };
    a = as_linear(std::move(a));
    b = as_linear(std::move(b));
    add(a.constant, b.constant);
    for (auto [slot, coef] : b.var_terms) {
      auto it = std::find_if(a.var_terms.begin(), a.var_terms.end(),
                             [s = slot](auto const& t) { return t.first == s; });
      if (it == a.var_terms.end()) {
        a.var_terms.emplace_back(slot, coef);
      } else {
        add(it->second, coef);
      }
    }
    std::erase_if(a.var_terms, [](auto const& t) { return t.second == 0; });
    for (std::size_t c = 0; c < b.children.size(); ++c) {
      a.child_coefs.push_back(b.child_coefs[c]);
      a.children.push_back(std::move(b.children[c]));
    }
    return a;
  }

  // A bound of |value| of `b` (and of every intermediate index_range computes) over the whole
  // iteration space, and so over every piece; nothing if it does not fit in int64.
  std::optional<std::int64_t> magnitude(BoundIndex const& b) const {
    auto abs = [](std::int64_t v) -> std::optional<std::int64_t> {
      if (v == std::numeric_limits<std::int64_t>::min()) return std::nullopt;
      return v < 0 ? -v : v;
    };
    auto plus_scaled = [&](std::optional<std::int64_t> sum, std::int64_t coef,
                           std::optional<std::int64_t> m) -> std::optional<std::int64_t> {
      auto c = abs(coef);
      if (!sum || !c || !m) return std::nullopt;
      auto term = checked_mul(*c, *m);
      return term ? checked_add(*sum, *term) : std::nullopt;
    };
    switch (b.kind) {
    case BoundIndex::Kind::gather:
      return 0;  // its value comes from data (index_range: unknown)
    case BoundIndex::Kind::floordiv:
      return magnitude(b.children[0]);
    case BoundIndex::Kind::mod:
      return plus_scaled(b.divisor, 2, magnitude(b.children[0]));
    case BoundIndex::Kind::linear: {
      std::optional<std::int64_t> sum = abs(b.constant);
      for (auto [slot, coef] : b.var_terms)
        sum = plus_scaled(sum, coef, op_->slot_extents_[static_cast<std::size_t>(slot)] - 1);
      for (std::size_t c = 0; c < b.children.size(); ++c)
        sum = plus_scaled(sum, b.child_coefs[c], magnitude(b.children[c]));
      return sum;
    }
    }
    return std::nullopt;
  }

  // Every index stays within int64 over the iteration space (with one to spare: an output's
  // extent is its index's maximum + 1), so that no piece's index range overflows.
  Status check_index_magnitudes() const {
    auto fits = [&](std::vector<BoundIndex> const& indices) {
      return std::all_of(indices.begin(), indices.end(), [&](BoundIndex const& b) {
        auto m = magnitude(b);
        return m && *m < std::numeric_limits<std::int64_t>::max();
      });
    };
    bool ok = fits(op_->output_indices_);
    for (auto const& lists : op_->accesses_)
      for (auto const* indices : lists)
        ok = ok && fits(*indices);
    if (ok) return Status::ok();
    return err(st_.output.column, "an index of this statement overflows 64-bit integers over the "
                                  "iteration space: its constants or extents are too large");
  }

  Expected<BoundIndex> unless_overflow(BoundIndex b, bool overflow, int column) const {
    if (overflow)
      return err(column, "this index's constants overflow 64-bit integers; use smaller ones");
    return b;
  }

  Expected<BoundIndex> bind_index(IndexExpr const& e) {
    BoundIndex out;
    switch (e.kind) {
    case IndexExpr::Kind::number:
      out.constant = e.number;
      return out;
    case IndexExpr::Kind::name: {
      if (auto slot = lookup_var(e.name)) {
        out.var_terms.emplace_back(*slot, 1);
        return out;
      }
      if (auto p = lookup_param(e.name)) {
        if (*p != std::floor(*p) || std::abs(*p) > 9e15)
          return err(e.column, "parameter '" + e.name + "' = " + std::to_string(*p) +
                                   " is used in an index but is not an integer");
        out.constant = static_cast<std::int64_t>(*p);
        return out;
      }
      return err(e.column, "unknown name '" + e.name +
                               "' in an index: not an iteration variable or a parameter of the op" +
                               params_hint());
    }
    case IndexExpr::Kind::neg: {
      CLEAVE_TRY(BoundIndex a, bind_index(e.args[0]));
      bool overflow = false;
      BoundIndex n = scaled(std::move(a), -1, overflow);
      return unless_overflow(std::move(n), overflow, e.column);
    }
    case IndexExpr::Kind::add:
    case IndexExpr::Kind::sub: {
      CLEAVE_TRY(BoundIndex a, bind_index(e.args[0]));
      CLEAVE_TRY(BoundIndex b, bind_index(e.args[1]));
      bool overflow = false;
      if (e.kind == IndexExpr::Kind::sub) b = scaled(std::move(b), -1, overflow);
      BoundIndex sum = added(std::move(a), std::move(b), overflow);
      return unless_overflow(std::move(sum), overflow, e.column);
    }
    case IndexExpr::Kind::mul: {
      CLEAVE_TRY(BoundIndex a, bind_index(e.args[0]));
      CLEAVE_TRY(BoundIndex b, bind_index(e.args[1]));
      bool overflow = false;
      if (a.is_constant() || b.is_constant()) {
        BoundIndex product = a.is_constant() ? scaled(std::move(b), a.constant, overflow)
                                             : scaled(std::move(a), b.constant, overflow);
        return unless_overflow(std::move(product), overflow, e.column);
      }
      return err(e.args[1].column,
                 "non-affine index: this product multiplies two expressions that both depend on "
                 "iteration variables; an index must be affine (variables times constants, plus "
                 "constants)");
    }
    case IndexExpr::Kind::div:
    case IndexExpr::Kind::mod: {
      CLEAVE_TRY(BoundIndex a, bind_index(e.args[0]));
      CLEAVE_TRY(BoundIndex b, bind_index(e.args[1]));
      if (!b.is_constant() || b.constant <= 0)
        return err(e.args[1].column,
                   "an index may only be divided (or taken modulo) by a positive constant");
      bool div = e.kind == IndexExpr::Kind::div;
      if (a.is_constant()) {
        std::int64_t q = a.constant / b.constant;
        if (a.constant % b.constant != 0 && a.constant < 0) --q;
        out.constant = div ? q : a.constant - q * b.constant;
        return out;
      }
      out.kind = div ? BoundIndex::Kind::floordiv : BoundIndex::Kind::mod;
      out.divisor = b.constant;
      out.children.push_back(std::move(a));
      return out;
    }
    case IndexExpr::Kind::access: {
      int i = input_position(e.name);
      if (i < 0) return err(e.column, "unknown tensor '" + e.name + "'" + inputs_hint());
      auto const& type = ctx_.inputs[i].second;
      if (ir::is_floating(type.dtype))
        return err(e.column, "tensor '" + e.name + "' is used as an index but has dtype " +
                                 std::string(ir::dtype_name(type.dtype)) +
                                 "; gathers need an int32 or int64 tensor");
      CLEAVE_CHECK_OK(check_rank(e.name, type, e.args.size(), e.column));
      out.kind = BoundIndex::Kind::gather;
      out.input = i;
      for (auto const& a : e.args) {
        CLEAVE_TRY(BoundIndex b, bind_index(a));
        out.children.push_back(std::move(b));
      }
      return out;
    }
    }
    return out;
  }

  std::string params_hint() const {
    if (ctx_.params.empty()) return " (the op has no parameters)";
    std::string out = " (parameters:";
    for (auto const& [name, value] : ctx_.params)
      out += " " + name;
    return out + ")";
  }

  Status check_rank(std::string const& name, ir::TensorType const& type, std::size_t n,
                    int column) const {
    if (n > 12)
      return err(column, "tensors of rank above 12 are not supported", ErrorCode::unsupported);
    if (type.shape.size() == n) return Status::ok();
    return err(column,
               "'" + name + "' has rank " + std::to_string(type.shape.size()) + " (" +
                   ir::shape_to_string(type.shape) + ") but is read with " + std::to_string(n) +
                   " indices",
               ErrorCode::shape_mismatch);
  }

  static std::uint64_t index_deps(BoundIndex const& b) {
    std::uint64_t d = 0;
    for (auto [slot, coef] : b.var_terms)
      d |= bit(slot);
    for (auto const& c : b.children)
      d |= index_deps(c);
    return d;
  }

  Expected<BoundExpr> bind_access(Expr const& e) {
    BoundExpr out;
    int i = input_position(e.name);
    if (i < 0) return err(e.column, "unknown tensor '" + e.name + "'" + inputs_hint());
    CLEAVE_CHECK_OK(check_rank(e.name, ctx_.inputs[i].second, e.indices.size(), e.column));
    out.kind = BoundExpr::Kind::access;
    out.input = i;
    for (auto const& index : e.indices) {
      CLEAVE_TRY(BoundIndex b, bind_index(index));
      out.deps |= index_deps(b);
      out.indices.push_back(std::move(b));
    }
    out.column = e.column;
    return out;
  }

  // Names in an index that are neither variables nor parameters.
  void collect_free_names(IndexExpr const& e, std::vector<IndexExpr const*>& out) const {
    if (e.kind == IndexExpr::Kind::name && !lookup_var(e.name) && !lookup_param(e.name)) {
      bool seen = std::any_of(out.begin(), out.end(), [&](auto* n) { return n->name == e.name; });
      if (!seen) out.push_back(&e);
    }
    for (auto const& a : e.args)
      collect_free_names(a, out);
  }

  // An opaque op's reads may use variables the output does not: they range fully, like the
  // variables of a nested reduction.
  Expected<BoundExpr> bind_opaque(Expr const& e) {
    BoundExpr out;
    out.kind = BoundExpr::Kind::call;
    out.op = "opaque";
    std::vector<IndexExpr const*> free;
    for (auto const& a : e.args)
      for (auto const& index : a.indices)
        collect_free_names(index, free);
    for (auto const* name : free)
      CLEAVE_CHECK_OK(declare(VarDecl{name->name, std::nullopt, name->column}));
    for (auto const& a : e.args) {
      CLEAVE_TRY(BoundExpr b, bind_access(a));
      out.deps |= b.deps;
      out.args.push_back(std::move(b));
    }
    return out;
  }

  Expected<BoundExpr> bind_expr(Expr const& e) {
    BoundExpr out;
    switch (e.kind) {
    case Expr::Kind::number:
      out.value = e.number;
      return out;
    case Expr::Kind::name:
      if (auto slot = lookup_var(e.name)) {
        out.kind = BoundExpr::Kind::var;
        out.slot = *slot;
        out.deps = bit(*slot);
        return out;
      }
      if (auto p = lookup_param(e.name)) {
        out.value = *p;
        return out;
      }
      return err(e.column, "unknown name '" + e.name +
                               "': not an iteration variable or a parameter of the op" +
                               params_hint() + "; tensors are read with brackets, as " + e.name +
                               "[...]");
    case Expr::Kind::access:
      return bind_access(e);
    case Expr::Kind::opaque:
      return err(e.column, "opaque(...) must be the whole right-hand side of the statement");
    case Expr::Kind::neg:
    case Expr::Kind::binary:
    case Expr::Kind::call: {
      out.kind = e.kind == Expr::Kind::neg      ? BoundExpr::Kind::neg
                 : e.kind == Expr::Kind::binary ? BoundExpr::Kind::binary
                                                : BoundExpr::Kind::call;
      out.op = e.name;
      if (e.kind == Expr::Kind::call) {
        int arity = function_arity(e.name);
        if (arity < 0)
          return err(e.column, "unknown function '" + e.name + "'; known: " + known_functions);
        if (static_cast<std::size_t>(arity) != e.args.size())
          return err(e.column, "'" + e.name + "' takes " + std::to_string(arity) +
                                   " argument(s), got " + std::to_string(e.args.size()));
      }
      for (auto const& a : e.args) {
        CLEAVE_TRY(BoundExpr b, bind_expr(a));
        out.deps |= b.deps;
        out.args.push_back(std::move(b));
      }
      return out;
    }
    case Expr::Kind::reduce: {
      out.kind = BoundExpr::Kind::reduce;
      out.reducer = parse_reducer(e.name);
      std::size_t scope_size = scope_.size();
      for (auto const& v : e.vars) {
        CLEAVE_CHECK_OK(declare(v));
        out.slots.push_back(scope_.back().second);
      }
      CLEAVE_TRY(BoundExpr body, bind_expr(e.args[0]));
      scope_.resize(scope_size);
      out.deps = body.deps;
      for (int s : out.slots)
        out.deps &= ~bit(s);
      out.args.push_back(std::move(body));
      return out;
    }
    }
    return out;
  }

  void collect_index_accesses(BoundIndex const& b) {
    if (b.kind == BoundIndex::Kind::gather) op_->accesses_[b.input].push_back(&b.children);
    for (auto const& c : b.children)
      collect_index_accesses(c);
  }

  void collect_accesses(BoundExpr const& e) {
    if (op_->accesses_.empty()) op_->accesses_.resize(op_->inputs_.size());
    if (e.kind == BoundExpr::Kind::access) {
      op_->accesses_[e.input].push_back(&e.indices);
      access_order_.push_back(&e);
    }
    for (auto const& i : e.indices)
      collect_index_accesses(i);
    for (auto const& a : e.args)
      collect_accesses(a);
  }

  // A slot indexing a dimension directly (coefficient 1, no offset) takes that dimension's size.
  Status note_extent(BoundIndex const& b, std::int64_t size, std::string const& where, int column) {
    if (b.kind != BoundIndex::Kind::linear || !b.children.empty() || b.constant != 0 ||
        b.var_terms.size() != 1 || b.var_terms[0].second != 1)
      return Status::ok();
    int slot = b.var_terms[0].first;
    auto& ext = op_->slot_extents_[slot];
    // A declared extent wins: reads past a tensor's end are padding (concat, slice rely on it).
    if (explicit_extent_[slot]) return Status::ok();
    if (ext < 0) {
      ext = size;
      extent_source_[slot] = where;
    } else if (ext != size) {
      return err(column,
                 "'" + op_->slot_names_[slot] + "' has extent " + std::to_string(ext) + " from " +
                     extent_source_[slot] + " but " + std::to_string(size) + " from " + where +
                     ": the shapes disagree",
                 ErrorCode::shape_mismatch);
    }
    return Status::ok();
  }

  Status note_extents_in(std::vector<BoundIndex> const& indices, std::string const& tensor,
                         ir::Shape const& shape, int column) {
    for (std::size_t d = 0; d < indices.size(); ++d) {
      std::string where =
          "dim " + std::to_string(d) + " of " + tensor + " (" + ir::shape_to_string(shape) + ")";
      CLEAVE_CHECK_OK(note_extent(indices[d], shape[d], where, column));
      for (auto const& c : indices[d].children) {
        if (c.kind == BoundIndex::Kind::gather) {
          auto const& in = op_->inputs_[c.input];
          CLEAVE_CHECK_OK(note_extents_in(c.children, in.name, in.type.shape, column));
        }
      }
      if (indices[d].kind == BoundIndex::Kind::gather) {
        auto const& in = op_->inputs_[indices[d].input];
        CLEAVE_CHECK_OK(note_extents_in(indices[d].children, in.name, in.type.shape, column));
      }
    }
    return Status::ok();
  }

  Status infer_extents() {
    for (auto const* access : access_order_) {
      auto const& in = op_->inputs_[access->input];
      CLEAVE_CHECK_OK(note_extents_in(access->indices, in.name, in.type.shape, access->column));
    }
    if (ctx_.output) {
      if (ctx_.output->shape.size() != op_->output_indices_.size())
        return err(st_.output.column,
                   "output '" + st_.output.name + "' is given as " +
                       ir::shape_to_string(ctx_.output->shape) + " (rank " +
                       std::to_string(ctx_.output->shape.size()) + ") but the statement writes " +
                       std::to_string(op_->output_indices_.size()) + " indices",
                   ErrorCode::shape_mismatch);
      CLEAVE_CHECK_OK(note_extents_in(op_->output_indices_, st_.output.name, ctx_.output->shape,
                                      st_.output.column));
    }
    for (int s = 0; s < op_->num_slots(); ++s) {
      if (op_->slot_extents_[s] >= 0) continue;
      int column = s < op_->num_parallel_ ? output_var_columns_[s] : st_.output.column;
      return err(column,
                 "cannot infer the extent of '" + op_->slot_names_[s] +
                     "': it indexes no input dimension directly; declare it (" +
                     op_->slot_names_[s] + ":EXTENT) or give the output's shape",
                 ErrorCode::shape_mismatch);
    }
    return Status::ok();
  }

  Status bind_output(int num_dims) {
    Box space;
    for (int s = 0; s < num_dims; ++s)
      space.push_back({0, op_->slot_extents_[s]});
    auto ranges = slot_ranges(*op_, space);
    ir::Shape shape;
    std::optional<std::int64_t> points = 1;
    for (int s = 0; s < op_->num_parallel_ && points; ++s)
      points = checked_mul(*points, op_->slot_extents_[s]);
    if (!points)
      return err(st_.output.column, "the output's elements (the product of the extents of the "
                                    "parallel dimensions) overflow 64-bit counts: the op's shapes "
                                    "are too large; use smaller dimensions");
    for (std::size_t d = 0; d < op_->output_indices_.size(); ++d) {
      IndexRange r = index_range(op_->output_indices_[d], ranges);
      if (r.min != 0)
        return err(st_.output.indices[d].column,
                   "output index " + std::to_string(d) + " starts at " + std::to_string(r.min) +
                       ", not 0: every output element must be written");
      shape.push_back(r.max + 1);
    }
    if (!ir::is_valid_shape(shape))
      return err(st_.output.column, "the output's size in bytes overflows 64-bit counts: the "
                                    "op's shapes are too large; use smaller dimensions");
    if (ir::num_elements(shape) != *points)
      return err(st_.output.column,
                 "the output indices do not map the iteration space one-to-one onto '" +
                     st_.output.name + "' (" + std::to_string(*points) + " points, output " +
                     ir::shape_to_string(shape) + ")");
    if (ctx_.output && ctx_.output->shape != shape)
      return err(st_.output.column,
                 "output '" + st_.output.name + "' is given as " +
                     ir::shape_to_string(ctx_.output->shape) + " but the statement computes " +
                     ir::shape_to_string(shape),
                 ErrorCode::shape_mismatch);
    ir::DType dtype = op_->inputs_.empty() ? ir::DType::fp32 : op_->inputs_[0].type.dtype;
    if (ctx_.output) {
      dtype = ctx_.output->dtype;
    } else {
      auto first_float = std::find_if(op_->inputs_.begin(), op_->inputs_.end(), [](auto const& in) {
        return ir::is_floating(in.type.dtype);
      });
      if (first_float != op_->inputs_.end()) dtype = first_float->type.dtype;
    }
    op_->output_type_ = {shape, dtype};
    return Status::ok();
  }

  int dim_index(std::string const& name) const {
    for (std::size_t d = 0; d < op_->dims_.size(); ++d)
      if (op_->dims_[d].name == name) return static_cast<int>(d);
    return -1;
  }

  Status mark_splittable() {
    auto& dims = op_->dims_;
    auto check_names = [&](NameList const& list, char const* clause) -> Status {
      for (std::size_t k = 0; k < list.names.size(); ++k) {
        if (dim_index(list.names[k]) < 0)
          return err(list.columns[k], std::string(clause) + "(" + list.names[k] + "): '" +
                                          list.names[k] +
                                          "' is not a dimension of the iteration space (" +
                                          op_->describe_space() + ")");
      }
      return Status::ok();
    };
    CLEAVE_CHECK_OK(check_names(st_.nosplit, "nosplit"));
    if (st_.split) CLEAVE_CHECK_OK(check_names(*st_.split, "split"));
    Box space = full_box(*op_);
    for (std::size_t d = 0; d < dims.size(); ++d) {
      auto& dim = dims[d];
      auto listed = [&](NameList const& l) {
        return std::find(l.names.begin(), l.names.end(), dim.name) != l.names.end();
      };
      if (dim.extent < 2) {
        dim.splittable = false;
        dim.unsplittable_reason = "extent 1";
      } else if (listed(st_.nosplit)) {
        dim.splittable = false;
        dim.unsplittable_reason = "marked nosplit";
      } else if (st_.split && !listed(*st_.split)) {
        dim.splittable = false;
        dim.unsplittable_reason = "not listed in split(...)";
      } else if (op_->opaque_ && !st_.split) {
        dim.splittable = false;
        dim.unsplittable_reason = "opaque op without split(...)";
      } else {
        for (auto const& half : split_evenly(space, static_cast<int>(d), 2)) {
          auto piece = analyze_piece(*op_, half);
          if (!piece || !piece->output_exact) {
            dim.splittable = false;
            dim.unsplittable_reason = "a split writes a non-rectangular output region";
          }
        }
      }
    }
    return Status::ok();
  }

  Statement const& st_;
  BindContext const& ctx_;
  std::shared_ptr<BoundOp> op_;
  std::vector<std::pair<std::string, int>> scope_;
  std::vector<std::string> extent_source_;
  std::vector<bool> explicit_extent_;
  std::vector<int> output_var_columns_;
  std::vector<BoundExpr const*> access_order_;
};

Expected<std::shared_ptr<BoundOp const>> bind(Statement const& statement,
                                              BindContext const& context) {
  return Binder(statement, context).run();
}

}  // namespace cleave::tdl
