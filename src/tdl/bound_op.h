// A TDL statement bound to concrete shapes and parameter values: the iteration space with extents,
// and every index and value expression in terms of numbered variable slots. This is what region
// analysis (piece.h) and the reference interpreter (interpreter.h) work on.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/types.h"
#include "support/status.h"
#include "tdl/ast.h"

namespace cleave::tdl {

enum class Reducer { none, sum, max, min, prod };
char const* reducer_name(Reducer r);
// The value a reduction starts from (0 for sum, -inf for max, ...).
double reducer_identity(Reducer r);
double reduce_values(Reducer r, double acc, double value);

enum class DimKind { parallel, reduction };

// One dimension of the iteration space: every output variable (parallel) and every variable of a
// top-level reduction (reduction). Variables of reductions nested inside the expression are not
// dimensions of the space: they always range fully (see BoundOp::inner_extents).
struct IterDim {
  std::string name;
  std::int64_t extent = 0;
  DimKind kind = DimKind::parallel;
  bool splittable = true;           // false when marked nosplit, outside split(...), or of extent 1
  std::string unsplittable_reason;  // why not, for users ("marked nosplit", ...)
};

// An index expression with names resolved. `linear` is constant + sum(coef * slot) +
// sum(coef * child); `floordiv`/`mod` apply to child 0 with a positive divisor; `gather` reads an
// integer input at child indices.
struct BoundIndex {
  enum class Kind { linear, floordiv, mod, gather };
  Kind kind = Kind::linear;
  std::int64_t constant = 0;                            // linear
  std::vector<std::pair<int, std::int64_t>> var_terms;  // linear: (slot, coef)
  std::vector<std::int64_t> child_coefs;                // linear: coef per child
  std::int64_t divisor = 1;                             // floordiv, mod
  int input = -1;                                       // gather: input position
  std::vector<BoundIndex> children;

  bool is_constant() const { return kind == Kind::linear && var_terms.empty() && children.empty(); }
};

// A value expression with names resolved.
struct BoundExpr {
  enum class Kind { constant, var, access, neg, binary, call, reduce };
  Kind kind = Kind::constant;
  double value = 0;                 // constant
  int slot = -1;                    // var
  int input = -1;                   // access: input position
  std::string op;                   // binary: + - * / % < <= > >= == != ; call: function name
  Reducer reducer = Reducer::none;  // reduce
  std::vector<int> slots;           // reduce: the variables it binds
  std::vector<BoundIndex> indices;  // access
  std::vector<BoundExpr> args;
  std::uint64_t deps = 0;  // bit per slot this node's value depends on (free variables)
  int column = 0;          // in the statement, for messages
};

struct BoundInput {
  std::string name;
  ir::TensorType type;
  double pad_value = 0;  // value of reads outside the tensor's bounds
};

// Values of the op's parameters (attributes such as stride, eps). Integers are exact in double.
using Params = std::map<std::string, double, std::less<>>;

class BoundOp {
 public:
  BoundOp() = default;
  // accesses() points into body(): a BoundOp lives where bind() built it.
  BoundOp(BoundOp const&) = delete;
  BoundOp& operator=(BoundOp const&) = delete;

  std::string const& text() const { return text_; }
  std::string const& output_name() const { return output_name_; }
  ir::TensorType const& output_type() const { return output_type_; }
  std::vector<BoundInput> const& inputs() const { return inputs_; }

  // The iteration space: slots 0..dims().size()-1, parallel dims first in output order, then the
  // top-level reduction's dims. Slots after those are the variables of nested reductions.
  std::vector<IterDim> const& dims() const { return dims_; }
  int num_parallel() const { return num_parallel_; }
  std::int64_t slot_extent(int slot) const { return slot_extents_[static_cast<std::size_t>(slot)]; }
  std::string const& slot_name(int slot) const {
    return slot_names_[static_cast<std::size_t>(slot)];
  }
  int num_slots() const { return static_cast<int>(slot_extents_.size()); }

  Reducer reducer() const { return reducer_; }  // of the top-level reduction; none if there is none
  bool opaque() const { return opaque_; }       // reads are known, semantics are not
  // The expression evaluated at each point of the space (the top-level reduction's body).
  BoundExpr const& body() const { return body_; }
  std::vector<BoundIndex> const& output_indices() const { return output_indices_; }
  // Every read of each input: accesses()[i] lists the index lists that read input i.
  std::vector<std::vector<std::vector<BoundIndex> const*>> const& accesses() const {
    return accesses_;
  }

  // "parallel n=8 co=16 y=16 x=16 | reduction(sum) ci=3 dy=3 dx=3"
  std::string describe_space() const;

 private:
  friend class Binder;
  std::string text_;
  std::string output_name_;
  ir::TensorType output_type_;
  std::vector<BoundInput> inputs_;
  std::vector<IterDim> dims_;
  int num_parallel_ = 0;
  std::vector<std::int64_t> slot_extents_;
  std::vector<std::string> slot_names_;
  Reducer reducer_ = Reducer::none;
  bool opaque_ = false;
  BoundExpr body_;
  std::vector<BoundIndex> output_indices_;
  std::vector<std::vector<std::vector<BoundIndex> const*>> accesses_;
};

// What bind() needs besides the statement.
struct BindContext {
  // The op's inputs in order; every tensor the statement reads must be among them.
  std::vector<std::pair<std::string, ir::TensorType>> inputs;
  Params params;
  // Extents of variables that no dimension determines (e.g. the group of a grouped convolution).
  std::map<std::string, std::int64_t, std::less<>> extents;
  // The output's type if known; when absent its shape is inferred from the iteration space and
  // its dtype is that of the first floating-point input (else of the first input; fp32 if none).
  std::optional<ir::TensorType> output;
};

// Resolves names, checks that index expressions are affine (or floor division / modulo of affine
// expressions by constants), infers every variable's extent from the dims it indexes directly
// (explicit `v:EXT` wins), checks that extents agree, and that the output indices map the space
// one-to-one onto the output tensor. Errors point at the column of the offending expression.
Expected<std::shared_ptr<BoundOp const>> bind(Statement const& statement,
                                              BindContext const& context);

}  // namespace cleave::tdl
