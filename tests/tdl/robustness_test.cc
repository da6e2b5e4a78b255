// Malformed statements never crash: random edits of valid statements are parsed and bound, and
// each either binds or gives an error (run under ASan + UBSan in CI).
#include <gtest/gtest.h>
#include <random>

#include "tdl/interpreter.h"
#include "tdl_test_util.h"

namespace cleave::tdl {
namespace {

TEST(Robustness, RandomEditsOfValidStatementsNeverCrash) {
  std::vector<std::string> seeds = {
      "Y[n,co,y,x] = sum(ci,dy,dx) X[n,ci,y*2+dy-1,x*2+dx-1] * W[co,ci,dy,dx]",
      "Y[b,i] = exp(X[b,i] - max(k) X[b,k]) / sum(j) exp(X[b,j] - max(k) X[b,k]) ; nosplit(i)",
      "L[] = sum(b) (log(sum(j) exp(X[b,j])) - X[b,T[b]]) * 0.5",
      "Y[o0,o1] = X[(o0*6+o1)/4,(o0*6+o1)%4]",
      "Y[i] = max(d:3) X[i*2+d-1] ; pad(X=-inf)",
      "Y[g*2+c] = select(X[g*2+c] > 0, X[g*2+c], W[c] * 0.1)",
  };
  BindContext ctx;
  ctx.inputs = {
      {"X", testing::f32({4, 4})}, {"W", testing::f32({4, 4})}, {"T", {{4}, ir::DType::int64}}};
  std::string alphabet = "[](),=;+-*/%<>: abcdkxyXWT0123456789._";
  std::mt19937_64 rng(7);
  int parsed = 0, bound = 0, evaluated = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    std::string text = seeds[rng() % seeds.size()];
    for (int edits = 1 + static_cast<int>(rng() % 3); edits > 0; --edits) {
      std::size_t pos = rng() % (text.size() + 1);
      switch (rng() % 3) {
      case 0:
        text.insert(pos, 1, alphabet[rng() % alphabet.size()]);
        break;
      case 1:
        if (pos < text.size()) text.erase(pos, 1);
        break;
      default:
        if (pos < text.size()) text[pos] = alphabet[rng() % alphabet.size()];
      }
    }
    auto st = parse_statement(text);
    if (!st) {
      EXPECT_EQ(st.error().code(), ErrorCode::parse_error) << text;
      continue;
    }
    ++parsed;
    auto op = bind(*st, ctx);
    if (!op) continue;
    ++bound;
    // A bound op's whole piece can be analyzed and, unless opaque, evaluated.
    auto info = analyze_piece(**op, full_box(**op));
    ASSERT_TRUE(info.has_value()) << text;
    double work = 1;
    for (int s = 0; s < (*op)->num_slots(); ++s)
      work *= static_cast<double>((*op)->slot_extent(s));
    if (work > 1e5) continue;
    std::vector<TensorData> inputs;
    for (auto const& in : (*op)->inputs())
      inputs.push_back(TensorData::whole(
          in.type.shape,
          std::vector<double>(static_cast<std::size_t>(ir::num_elements(in.type.shape)), 1.0)));
    auto y = evaluate(**op, full_box(**op), inputs);
    evaluated += y.has_value();
  }
  EXPECT_GT(evaluated, 50);
  EXPECT_GT(parsed, 1000);
  EXPECT_GT(bound, 100);
}

}  // namespace
}  // namespace cleave::tdl
