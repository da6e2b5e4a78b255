// Parses one TDL statement. Grammar (docs/tdl.md):
//
//   statement := ref '=' expr (';' clause)*
//   ref       := NAME '[' [outindex (',' outindex)*] ']'
//   outindex  := NAME ':' index | index             -- `y:OH` declares y's extent
//   clause    := 'nosplit' '(' names ')' | 'split' '(' names ')' | 'pad' '(' NAME '=' num ')'
//   expr      := additive [('<'|'<='|'>'|'>='|'=='|'!=') additive]
//   additive  := term (('+'|'-') term)*
//   term      := unary (('*'|'/'|'%') unary)*      -- '%': floored modulo
//   unary     := '-' unary | primary
//   primary   := NUMBER | 'inf' | NAME | NAME '[' indices ']' | '(' expr ')'
//              | REDUCER '(' vardecls ')' term        -- reduction; its body is one term
//              | 'opaque' '(' access (',' access)* ')'
//              | FUNC '(' expr (',' expr)* ')'
//   index     := iterm (('+'|'-') iterm)* ;  iterm := iunary (('*'|'/'|'%') iunary)*
//   iunary    := '-' iunary | INT | NAME | NAME '[' indices ']' | '(' index ')'
//
// `max(a, b)` is a function call; `max(k) X[i,k]` (a list of names followed by a term) is a
// reduction.
#pragma once

#include <string_view>

#include "support/status.h"
#include "tdl/ast.h"

namespace cleave::tdl {

// Errors are ErrorCode::parse_error and read "TDL parse error at column C: expected ..., found
// ...", followed by the line and a caret under column C.
Expected<Statement> parse_statement(std::string_view text);

// The tensors the statement reads, in order of first appearance (gathered index tensors too).
std::vector<std::string> tensors_read(Statement const& statement);

// The caret display used by parse and bind errors: "  <text>\n  <spaces>^"; a long text is
// shown as a window around the column, with "..." where it is cut.
std::string point_at(std::string_view text, int column);

}  // namespace cleave::tdl
