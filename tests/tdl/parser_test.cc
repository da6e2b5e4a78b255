#include <cmath>
#include <gtest/gtest.h>

#include "tdl/parser.h"

namespace cleave::tdl {
namespace {

TEST(Parser, ConvStatement) {
  auto st =
      parse_statement("Y[n,co,y,x] = sum(ci,dy,dx) X[n,ci,y*2+dy-1,x*2+dx-1] * W[co,ci,dy,dx]");
  ASSERT_TRUE(st.has_value()) << st.error().to_string();
  EXPECT_EQ(st->output.name, "Y");
  EXPECT_EQ(st->output.indices.size(), 4u);
  ASSERT_EQ(st->rhs.kind, Expr::Kind::reduce);
  EXPECT_EQ(st->rhs.name, "sum");
  ASSERT_EQ(st->rhs.vars.size(), 3u);
  EXPECT_EQ(st->rhs.vars[2].name, "dx");
  Expr const& body = st->rhs.args[0];
  ASSERT_EQ(body.kind, Expr::Kind::binary);
  EXPECT_EQ(body.name, "*");
  EXPECT_EQ(body.args[0].name, "X");
  EXPECT_EQ(body.args[1].name, "W");
}

TEST(Parser, ModuloInValuesBindsLikeMultiplication) {
  // '%' in a value is floored modulo, at the precedence of '*' and '/' (used by the gradient of a
  // strided convolution: only rows with (h + pt - dy) % sh == 0 receive a gradient).
  auto st = parse_statement("Y[h] = X[h] * (h + 1 - 2 * d % 3 == 0)");
  ASSERT_TRUE(st.has_value()) << st.error().to_string();
  Expr const& cmp = st->rhs.args[1];
  ASSERT_EQ(cmp.name, "==");
  Expr const& diff = cmp.args[0];
  ASSERT_EQ(diff.name, "-");
  EXPECT_EQ(diff.args[1].name, "%");
  EXPECT_EQ(diff.args[1].args[0].name, "*");
}

TEST(Parser, ReductionBodyIsOneTerm) {
  // sum binds its product, not the '+' after it.
  auto st = parse_statement("Y[i] = sum(k) A[i,k] * B[k] + C[i]");
  ASSERT_TRUE(st.has_value());
  ASSERT_EQ(st->rhs.kind, Expr::Kind::binary);
  EXPECT_EQ(st->rhs.name, "+");
  EXPECT_EQ(st->rhs.args[0].kind, Expr::Kind::reduce);
  EXPECT_EQ(st->rhs.args[1].kind, Expr::Kind::access);
}

TEST(Parser, MaxFunctionVersusMaxReduction) {
  auto f = parse_statement("Y[i] = max(X[i], 0)");
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->rhs.kind, Expr::Kind::call);
  auto r = parse_statement("Y[i] = max(k) X[i,k]");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->rhs.kind, Expr::Kind::reduce);
  auto p = parse_statement("Y[i] = max(a, b)");  // two parameters: a call
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->rhs.kind, Expr::Kind::call);
}

TEST(Parser, AnnotationsAndExplicitExtents) {
  auto st = parse_statement("Y[b,i] = max(dy:KH) X[b,i+dy] ; nosplit(i) ; pad(X=-inf)");
  ASSERT_TRUE(st.has_value()) << st.error().to_string();
  ASSERT_TRUE(st->rhs.vars[0].extent.has_value());
  EXPECT_EQ(st->nosplit.names, std::vector<std::string>{"i"});
  ASSERT_EQ(st->pads.size(), 1u);
  EXPECT_TRUE(std::isinf(st->pads[0].value) && st->pads[0].value < 0);
}

TEST(Parser, ScalarOutputAndGather) {
  auto st = parse_statement("L[] = sum(b) X[b, T[b]]");
  ASSERT_TRUE(st.has_value());
  EXPECT_TRUE(st->output.indices.empty());
  auto const& idx = st->rhs.args[0].indices[1];
  EXPECT_EQ(idx.kind, IndexExpr::Kind::access);
  EXPECT_EQ(idx.name, "T");
}

struct BadCase {
  char const* text;
  int column;
  char const* expected;
};

TEST(Parser, ErrorsPointAtTheColumnAndSayWhatWasExpected) {
  BadCase cases[] = {
      {"Y[i,j] = sum(k) A[i,k] * B[k,j", 31, "',' or ']' to close the indices of 'B'"},
      {"Y[i] X[i]", 6, "'=' after the output tensor"},
      {"Y[i] = X[i] +", 14, "a number, a name, a tensor read or '('"},
      {"Y[i] = X[i] $ 2", 13, "a name, a number or one of"},
      {"Y[i] = X[i] ; nosplit(", 23, "a dimension name in nosplit(...)"},
      {"Y[i] = X[i] ; frobnicate(i)", 15, "an annotation"},
      {"Y[i] = X[1.5]", 10, "an integer (indices are integers)"},
      {"= X[i]", 1, "an output tensor like Y[i,j]"},
      {"Y[i] = X[i] X[i]", 13, "an operator, ';' or the end of the statement"},
  };
  for (auto const& c : cases) {
    auto st = parse_statement(c.text);
    ASSERT_FALSE(st.has_value()) << c.text;
    EXPECT_EQ(st.error().code(), ErrorCode::parse_error);
    std::string msg = st.error().message();
    EXPECT_NE(msg.find("column " + std::to_string(c.column) + ":"), std::string::npos)
        << c.text << "\n"
        << msg;
    EXPECT_NE(msg.find(c.expected), std::string::npos) << c.text << "\n" << msg;
    // The caret line points at the column.
    auto caret = msg.rfind('^');
    auto line_start = msg.rfind('\n', caret);
    EXPECT_EQ(static_cast<int>(caret - line_start - 3), c.column - 1) << msg;
  }
}

// Issue 23: a statement nested 10,000 deep overflowed the stack; now it is a parse error that
// says what to do, at every way of nesting, while moderate nesting still parses.
std::string repeat(std::string const& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i)
    out += s;
  return out;
}

TEST(Parser, DeepNestingIsAnErrorNotACrash) {
  std::vector<std::string> deep = {
      "Y[i] = " + repeat("(", 10000) + "X[i]" + repeat(")", 10000),
      "Y[i] = " + repeat("-", 10000) + "X[i]",
      "Y[i] = X[i]" + repeat(" + X[i]", 10000),
      "Y[i] = X[i]" + repeat(" * X[i]", 10000),
      "Y[i] = max(" + repeat("max(", 10000) + "X[i]" + repeat(", 0)", 10000) + ", 0)",
      "Y[i] = X[" + repeat("(", 10000) + "i" + repeat(")", 10000) + "]",
      "Y[i] = X[" + repeat("-", 10000) + "i]",
      "Y[i] = X[i" + repeat(" + 0", 10000) + "]",
      "Y[i] = X[i" + repeat(" * 1", 10000) + "]",
  };
  for (auto const& text : deep) {
    auto st = parse_statement(text);
    ASSERT_FALSE(st.has_value()) << text.substr(0, 40);
    EXPECT_NE(st.error().message().find("nests deeper than 200 levels"), std::string::npos)
        << st.error().message().substr(0, 200);
    EXPECT_NE(st.error().message().find("split it into several ops"), std::string::npos);
  }
  EXPECT_TRUE(parse_statement("Y[i] = " + repeat("(", 150) + "X[i]" + repeat(")", 150)));
  EXPECT_TRUE(parse_statement("Y[i] = X[i]" + repeat(" + X[i]", 150)));
  EXPECT_TRUE(parse_statement("Y[i] = " + repeat("-", 150) + "X[i]"));
}

}  // namespace
}  // namespace cleave::tdl

namespace cleave::tdl {
namespace {

TEST(Parser, OutputExtentDeclarations) {
  auto st = parse_statement("Y[n, y:OH] = X[n, y*2]");
  ASSERT_TRUE(st.has_value()) << st.error().to_string();
  ASSERT_EQ(st->output.extents.size(), 2u);
  EXPECT_FALSE(st->output.extents[0].has_value());
  ASSERT_TRUE(st->output.extents[1].has_value());
  EXPECT_EQ(st->output.extents[1]->name, "OH");
  auto bad = parse_statement("Y[2*y:4] = X[y]");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("only a plain variable can declare an extent"),
            std::string::npos);
}

TEST(Parser, TensorsReadInOrderOfFirstAppearance) {
  auto st = parse_statement("L[] = sum(b) X[b, T[b]] * W[b] + X[b, 0]");
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(tensors_read(*st), (std::vector<std::string>{"X", "T", "W"}));
}

}  // namespace
}  // namespace cleave::tdl
