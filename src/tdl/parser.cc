#include "tdl/parser.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace cleave::tdl {
namespace {

enum class Tok { name, number, punct, end };

struct Token {
  Tok kind = Tok::end;
  std::string text;
  double number = 0;
  bool integral = false;
  int column = 0;
};

bool is_reducer(std::string_view name) {
  return name == "sum" || name == "max" || name == "min" || name == "prod";
}

std::string describe(Token const& t) {
  switch (t.kind) {
  case Tok::end:
    return "end of line";
  case Tok::name:
    return "'" + t.text + "'";
  case Tok::number:
    return "number " + t.text;
  case Tok::punct:
    return "'" + t.text + "'";
  }
  return "?";
}

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Expected<Statement> run() {
    if (!tokenize()) return *error_;
    Statement st;
    st.text = std::string(text_);
    if (!parse_ref(st.output)) return *error_;
    if (!expect("=", "'=' after the output tensor")) return *error_;
    if (!parse_expr(st.rhs)) return *error_;
    while (peek_is(";")) {
      next();
      if (!parse_clause(st)) return *error_;
    }
    if (peek().kind != Tok::end) {
      fail(peek(), "an operator, ';' or the end of the statement");
      return *error_;
    }
    return st;
  }

 private:
  // ---- lexing ----
  bool tokenize() {
    std::size_t i = 0;
    while (i < text_.size()) {
      char c = text_[i];
      int col = static_cast<int>(i) + 1;
      if (std::isspace(static_cast<unsigned char>(c))) {
        ++i;
      } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        std::size_t j = i;
        while (j < text_.size() &&
               (std::isalnum(static_cast<unsigned char>(text_[j])) || text_[j] == '_'))
          ++j;
        tokens_.push_back({Tok::name, std::string(text_.substr(i, j - i)), 0, false, col});
        i = j;
      } else if (std::isdigit(static_cast<unsigned char>(c)) ||
                 (c == '.' && i + 1 < text_.size() &&
                  std::isdigit(static_cast<unsigned char>(text_[i + 1])))) {
        std::size_t j = i;
        bool integral = true;
        while (j < text_.size() && std::isdigit(static_cast<unsigned char>(text_[j])))
          ++j;
        if (j < text_.size() && text_[j] == '.') {
          integral = false;
          ++j;
          while (j < text_.size() && std::isdigit(static_cast<unsigned char>(text_[j])))
            ++j;
        }
        if (j < text_.size() && (text_[j] == 'e' || text_[j] == 'E')) {
          std::size_t k = j + 1;
          if (k < text_.size() && (text_[k] == '+' || text_[k] == '-')) ++k;
          if (k < text_.size() && std::isdigit(static_cast<unsigned char>(text_[k]))) {
            integral = false;
            j = k;
            while (j < text_.size() && std::isdigit(static_cast<unsigned char>(text_[j])))
              ++j;
          }
        }
        Token t{Tok::number, std::string(text_.substr(i, j - i)), 0, integral, col};
        t.number = std::strtod(t.text.c_str(), nullptr);
        if (integral && t.number > 9.0e15) {
          fail(t, "an integer below 9e15");
          return false;
        }
        tokens_.push_back(t);
        i = j;
      } else {
        static constexpr std::string_view two[] = {"<=", ">=", "==", "!="};
        std::string sym(1, c);
        for (auto op : two) {
          if (text_.substr(i, 2) == op) sym = std::string(op);
        }
        if (sym.size() == 1 && std::string_view("[](),=;+-*/%<>:").find(c) == std::string::npos) {
          fail(Token{Tok::punct, sym, 0, false, col},
               "a name, a number or one of [ ] ( ) , = ; + - * / % < > :");
          return false;
        }
        tokens_.push_back({Tok::punct, sym, 0, false, col});
        i += sym.size();
      }
    }
    tokens_.push_back({Tok::end, "", 0, false, static_cast<int>(text_.size()) + 1});
    return true;
  }

  // ---- token helpers ----
  Token const& peek(std::size_t ahead = 0) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  Token const& next() { return tokens_[std::min(pos_++, tokens_.size() - 1)]; }
  bool peek_is(std::string_view punct, std::size_t ahead = 0) const {
    return peek(ahead).kind == Tok::punct && peek(ahead).text == punct;
  }
  bool fail(Token const& at, std::string const& expected) {
    if (!error_) {
      error_.emplace(ErrorCode::parse_error,
                     "TDL parse error at column " + std::to_string(at.column) + ": expected " +
                         expected + ", found " + describe(at) + "\n" + point_at(text_, at.column));
    }
    return false;
  }
  // The parser, the binder, the interpreter and the FLOP count all recurse over the expression
  // tree, so a statement nested tens of thousands deep (parentheses, unary minus, chained
  // operators) would overflow the stack (issue 23). Every level of the tree is counted in
  // depth_: a unary operand or a parenthesis by a Nest, an operator chain by its length.
  static constexpr int max_depth = 200;
  struct Nest {
    explicit Nest(int& d) : depth(++d) {}
    ~Nest() { --depth; }
    Nest(Nest const&) = delete;
    Nest& operator=(Nest const&) = delete;
    int& depth;
  };
  bool too_deep(Token const& at) {
    if (!error_) {
      error_.emplace(ErrorCode::parse_error,
                     "TDL statement nests deeper than " + std::to_string(max_depth) +
                         " levels at column " + std::to_string(at.column) +
                         " (parentheses, unary minus or chained operators): split it into "
                         "several ops\n" +
                         point_at(text_, at.column));
    }
    return false;
  }
  bool expect(std::string_view punct, std::string const& what) {
    if (!peek_is(punct)) return fail(peek(), what);
    next();
    return true;
  }

  // ---- statement parts ----
  bool parse_ref(TensorRef& ref) {
    if (peek().kind != Tok::name) return fail(peek(), "an output tensor like Y[i,j]");
    ref.name = peek().text;
    ref.column = peek().column;
    next();
    if (!expect("[", "'[' after the output tensor's name")) return false;
    if (!parse_index_list(ref.indices, ref.name, &ref.extents)) return false;
    return true;
  }

  // After '[': indices then ']'. An empty list "[]" is a scalar. With `extents` (the output),
  // an index may be `name:EXTENT`.
  bool parse_index_list(std::vector<IndexExpr>& out, std::string const& tensor,
                        std::vector<std::optional<IndexExpr>>* extents = nullptr) {
    if (peek_is("]")) {
      next();
      return true;
    }
    while (true) {
      IndexExpr e;
      if (!parse_index(e)) return false;
      if (extents) {
        extents->emplace_back();
        if (peek_is(":")) {
          if (e.kind != IndexExpr::Kind::name)
            return fail(peek(), "',' or ']' (only a plain variable can declare an extent)");
          next();
          IndexExpr ext;
          if (!parse_index(ext)) return false;
          extents->back() = std::move(ext);
        }
      }
      out.push_back(std::move(e));
      if (peek_is(",")) {
        next();
        continue;
      }
      return expect("]", "',' or ']' to close the indices of '" + tensor + "'");
    }
  }

  bool parse_clause(Statement& st) {
    Token const& t = peek();
    if (t.kind != Tok::name || (t.text != "nosplit" && t.text != "split" && t.text != "pad"))
      return fail(t, "an annotation: nosplit(...), split(...) or pad(X=value)");
    std::string kind = t.text;
    next();
    if (!expect("(", "'(' after '" + kind + "'")) return false;
    if (kind == "pad") {
      PadClause pad;
      if (peek().kind != Tok::name) return fail(peek(), "a tensor name in pad(X=value)");
      pad.tensor = peek().text;
      pad.column = peek().column;
      next();
      if (!expect("=", "'=' in pad(X=value)")) return false;
      double sign = 1;
      if (peek_is("-")) {
        next();
        sign = -1;
      }
      if (peek().kind == Tok::number) {
        pad.value = sign * peek().number;
      } else if (peek().kind == Tok::name && peek().text == "inf") {
        pad.value = sign * std::numeric_limits<double>::infinity();
      } else {
        return fail(peek(), "a number or inf in pad(X=value)");
      }
      next();
      st.pads.push_back(pad);
      return expect(")", "')' to close pad(...)");
    }
    NameList list;
    while (true) {
      if (peek().kind != Tok::name) return fail(peek(), "a dimension name in " + kind + "(...)");
      list.names.push_back(peek().text);
      list.columns.push_back(peek().column);
      next();
      if (peek_is(",")) {
        next();
        continue;
      }
      if (!expect(")", "',' or ')' in " + kind + "(...)")) return false;
      break;
    }
    if (kind == "nosplit") {
      st.nosplit.names.insert(st.nosplit.names.end(), list.names.begin(), list.names.end());
      st.nosplit.columns.insert(st.nosplit.columns.end(), list.columns.begin(), list.columns.end());
    } else {
      if (st.split) return fail(t, "at most one split(...) clause");
      st.split = std::move(list);
    }
    return true;
  }

  // ---- value expressions ----
  // Parses `operand (OP operand)*` for the operators in `ops`, left-associative; with `once`, at
  // most one operator (comparisons do not chain).
  template <typename Operand>
  bool parse_left_assoc(Expr& out, std::initializer_list<std::string_view> ops, Operand operand,
                        bool once = false) {
    if (!(this->*operand)(out)) return false;
    auto at_op = [&] {
      return std::any_of(ops.begin(), ops.end(), [&](std::string_view op) { return peek_is(op); });
    };
    int const outer = depth_;
    while (at_op()) {
      if (++depth_ > max_depth) return too_deep(peek());
      Expr e;
      e.kind = Expr::Kind::binary;
      e.name = peek().text;
      e.column = peek().column;
      next();
      Expr rhs;
      if (!(this->*operand)(rhs)) return false;
      e.args.push_back(std::move(out));
      e.args.push_back(std::move(rhs));
      out = std::move(e);
      if (once) break;
    }
    depth_ = outer;
    return true;
  }

  bool parse_expr(Expr& out) {
    return parse_left_assoc(out, {"<", "<=", ">", ">=", "==", "!="}, &Parser::parse_additive,
                            /*once=*/true);
  }
  bool parse_additive(Expr& out) { return parse_left_assoc(out, {"+", "-"}, &Parser::parse_term); }
  bool parse_term(Expr& out) {
    return parse_left_assoc(out, {"*", "/", "%"}, &Parser::parse_unary);
  }

  bool parse_unary(Expr& out) {
    Nest nest(depth_);
    if (depth_ > max_depth) return too_deep(peek());
    if (peek_is("-")) {
      out.kind = Expr::Kind::neg;
      out.column = peek().column;
      next();
      Expr arg;
      if (!parse_unary(arg)) return false;
      out.args.push_back(std::move(arg));
      return true;
    }
    return parse_primary(out);
  }

  // True if the tokens after `name (` are a reduction's variable list followed by a body.
  bool looks_like_reduction() const {
    std::size_t k = 2;  // past NAME and '('
    while (true) {
      if (peek(k).kind != Tok::name) return false;
      ++k;
      if (peek_is(":", k)) {  // explicit extent: skip to the next ',' or ')' at depth 0
        int depth = 0;
        ++k;
        while (peek(k).kind != Tok::end) {
          if (peek_is("(", k)) ++depth;
          if (peek_is(")", k)) {
            if (depth == 0) break;
            --depth;
          }
          if (peek_is(",", k) && depth == 0) break;
          ++k;
        }
      }
      if (peek_is(",", k)) {
        ++k;
        continue;
      }
      if (!peek_is(")", k)) return false;
      Token const& after = peek(k + 1);
      return after.kind == Tok::name || after.kind == Tok::number ||
             (after.kind == Tok::punct && (after.text == "(" || after.text == "-"));
    }
  }

  bool parse_primary(Expr& out) {
    Token const& t = peek();
    out.column = t.column;
    if (t.kind == Tok::number) {
      out.kind = Expr::Kind::number;
      out.number = t.number;
      next();
      return true;
    }
    if (peek_is("(")) {
      next();
      if (!parse_expr(out)) return false;
      return expect(")", "')' to close '('");
    }
    if (t.kind != Tok::name) return fail(t, "a number, a name, a tensor read or '('");
    std::string name = t.text;
    if (name == "inf") {
      out.kind = Expr::Kind::number;
      out.number = std::numeric_limits<double>::infinity();
      next();
      return true;
    }
    if (peek_is("[", 1)) {
      next();
      next();
      out.kind = Expr::Kind::access;
      out.name = name;
      return parse_index_list(out.indices, name);
    }
    if (!peek_is("(", 1)) {
      out.kind = Expr::Kind::name;
      out.name = name;
      next();
      return true;
    }
    if (is_reducer(name) && looks_like_reduction()) {
      next();
      next();
      out.kind = Expr::Kind::reduce;
      out.name = name;
      while (true) {
        VarDecl v;
        v.name = peek().text;
        v.column = peek().column;
        next();
        if (peek_is(":")) {
          next();
          IndexExpr ext;
          if (!parse_index(ext)) return false;
          v.extent = std::move(ext);
        }
        out.vars.push_back(std::move(v));
        if (peek_is(",")) {
          next();
          continue;
        }
        if (!expect(")", "',' or ')' after the reduction variables")) return false;
        break;
      }
      Expr body;
      if (!parse_term(body)) return false;
      out.args.push_back(std::move(body));
      return true;
    }
    next();
    next();
    out.kind = name == "opaque" ? Expr::Kind::opaque : Expr::Kind::call;
    out.name = name;
    while (true) {
      Expr arg;
      if (out.kind == Expr::Kind::opaque) {
        if (peek().kind != Tok::name || !peek_is("[", 1))
          return fail(peek(), "a tensor read like X[n,i] inside opaque(...)");
        if (!parse_primary(arg)) return false;
      } else if (!parse_expr(arg)) {
        return false;
      }
      out.args.push_back(std::move(arg));
      if (peek_is(",")) {
        next();
        continue;
      }
      return expect(")", "',' or ')' in the arguments of '" + name + "'");
    }
  }

  // ---- index expressions ----
  bool parse_index(IndexExpr& out) {
    if (!parse_iterm(out)) return false;
    int const outer = depth_;
    while (peek_is("+") || peek_is("-")) {
      if (++depth_ > max_depth) return too_deep(peek());
      IndexExpr e;
      e.kind = peek().text == "+" ? IndexExpr::Kind::add : IndexExpr::Kind::sub;
      e.column = out.column;
      next();
      IndexExpr rhs;
      if (!parse_iterm(rhs)) return false;
      e.args.push_back(std::move(out));
      e.args.push_back(std::move(rhs));
      out = std::move(e);
    }
    depth_ = outer;
    return true;
  }

  bool parse_iterm(IndexExpr& out) {
    if (!parse_iunary(out)) return false;
    int const outer = depth_;
    while (peek_is("*") || peek_is("/") || peek_is("%")) {
      if (++depth_ > max_depth) return too_deep(peek());
      IndexExpr e;
      e.kind = peek_is("*")   ? IndexExpr::Kind::mul
               : peek_is("/") ? IndexExpr::Kind::div
                              : IndexExpr::Kind::mod;
      e.column = out.column;
      next();
      IndexExpr rhs;
      if (!parse_iunary(rhs)) return false;
      e.args.push_back(std::move(out));
      e.args.push_back(std::move(rhs));
      out = std::move(e);
    }
    depth_ = outer;
    return true;
  }

  bool parse_iunary(IndexExpr& out) {
    Nest nest(depth_);
    if (depth_ > max_depth) return too_deep(peek());
    Token const& t = peek();
    out.column = t.column;
    if (peek_is("-")) {
      next();
      out.kind = IndexExpr::Kind::neg;
      IndexExpr arg;
      if (!parse_iunary(arg)) return false;
      out.args.push_back(std::move(arg));
      return true;
    }
    if (peek_is("(")) {
      next();
      if (!parse_index(out)) return false;
      return expect(")", "')' to close '(' in an index");
    }
    if (t.kind == Tok::number) {
      if (!t.integral) return fail(t, "an integer (indices are integers)");
      out.kind = IndexExpr::Kind::number;
      out.number = static_cast<long long>(t.number);
      next();
      return true;
    }
    if (t.kind == Tok::name) {
      out.name = t.text;
      next();
      if (peek_is("[")) {
        next();
        out.kind = IndexExpr::Kind::access;
        return parse_index_list(out.args, out.name);
      }
      out.kind = IndexExpr::Kind::name;
      return true;
    }
    return fail(t, "an index: a variable, an integer, a parameter or '('");
  }

  std::string_view text_;
  std::vector<Token> tokens_;
  std::size_t pos_ = 0;
  int depth_ = 0;  // levels of the expression tree being parsed (max_depth)
  std::optional<Error> error_;
};

}  // namespace

std::string point_at(std::string_view text, int column) {
  // A long statement (a generated one, say) is shown as a window around the column.
  constexpr std::size_t context = 60;
  auto at = static_cast<std::size_t>(std::max(column, 1) - 1);
  std::size_t from = at > context ? at - context : 0;
  std::string out = from > 0 ? "  ..." : "  ";
  std::size_t shift = out.size() - 2;
  out += text.substr(from, 2 * context);
  if (from + 2 * context < text.size()) out += "...";
  out += "\n  ";
  out += std::string(at - from + shift, ' ');
  out += '^';
  return out;
}

Expected<Statement> parse_statement(std::string_view text) {
  return Parser(text).run();
}

namespace {

void add_name(std::vector<std::string>& out, std::string const& name) {
  if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
}

void collect_index(IndexExpr const& e, std::vector<std::string>& out) {
  if (e.kind == IndexExpr::Kind::access) add_name(out, e.name);
  for (auto const& a : e.args)
    collect_index(a, out);
}

void collect_expr(Expr const& e, std::vector<std::string>& out) {
  if (e.kind == Expr::Kind::access) add_name(out, e.name);
  for (auto const& i : e.indices)
    collect_index(i, out);
  for (auto const& a : e.args)
    collect_expr(a, out);
}

}  // namespace

std::vector<std::string> tensors_read(Statement const& statement) {
  std::vector<std::string> out;
  collect_expr(statement.rhs, out);
  return out;
}

}  // namespace cleave::tdl
