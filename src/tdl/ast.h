// The syntax tree of one TDL statement (docs/tdl.md), as parsed, before names are resolved.
//
//   Y[n,co,y,x] = sum(ci,dy,dx) X[n,ci,y*sh+dy-ph,x*sw+dx-pw] * W[co,ci,dy,dx] ; pad(X=0)
//
// Names are resolved by bind() (bind.h): an identifier is an iteration variable if the output or an
// enclosing reduction declares it, otherwise a parameter of the op, supplied at bind time.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace cleave::tdl {

// An expression inside tensor brackets: integers, names, + - *, floor division and modulo by
// constants, and (for gathers) a read of an integer tensor.
struct IndexExpr {
  enum class Kind { number, name, add, sub, mul, div, mod, neg, access };
  Kind kind = Kind::number;
  long long number = 0;
  std::string name;  // for name and access (the tensor)
  std::vector<IndexExpr> args;
  int column = 0;  // 1-based column of the expression's first character
};

// A reduction variable: `dy` or `dy:KH` (explicit extent).
struct VarDecl {
  std::string name;
  std::optional<IndexExpr> extent;
  int column = 0;
};

// A value expression.
struct Expr {
  enum class Kind {
    number,  // 1.5, inf
    name,    // a parameter, or an iteration variable used as a value
    access,  // X[i,k]
    neg,     // -e
    binary,  // e op e; op is one of + - * / % < <= > >= == != (% is floored)
    call,    // f(e, ...): exp log sqrt rsqrt tanh sigmoid relu erf abs max min pow select
    reduce,  // sum|max|min|prod(vars) body
    opaque,  // opaque(X[..], W[..]): reads listed, semantics not given
  };
  Kind kind = Kind::number;
  double number = 0;
  std::string name;  // parameter/variable, tensor, operator symbol, function or reducer
  std::vector<Expr> args;
  std::vector<IndexExpr> indices;  // for access
  std::vector<VarDecl> vars;       // for reduce
  int column = 0;
};

struct TensorRef {
  std::string name;
  std::vector<IndexExpr> indices;
  // Output only: `Y[n, y:OH]` declares the extent of y where no input dimension gives it.
  std::vector<std::optional<IndexExpr>> extents;
  int column = 0;
};

// Annotations after ';'.
struct PadClause {
  std::string tensor;
  double value = 0;
  int column = 0;
};

struct NameList {
  std::vector<std::string> names;
  std::vector<int> columns;
};

struct Statement {
  TensorRef output;
  Expr rhs;
  NameList nosplit;               // nosplit(i, ...): dims that must not be split
  std::optional<NameList> split;  // split(n, ...): the only splittable dims (opaque ops)
  std::vector<PadClause> pads;    // pad(X=-inf): value read outside X's bounds (default 0)
  std::string text;               // the source line, for messages
};

}  // namespace cleave::tdl
