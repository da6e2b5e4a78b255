#include <gtest/gtest.h>

#include "support/status.h"

namespace cleave {
namespace {

Expected<int> half(int x) {
  if (x % 2 != 0) return Error(ErrorCode::invalid_argument, "odd: " + std::to_string(x));
  return x / 2;
}

Expected<int> quarter(int x) {
  CLEAVE_TRY(int h, half(x));
  CLEAVE_TRY(int q, half(h));
  return q;
}

TEST(Expected, PropagatesTheFirstError) {
  EXPECT_EQ(*quarter(8), 2);
  auto bad = quarter(6);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().message(), "odd: 3");
}

TEST(Error, RendersCodeMessageAndContext) {
  Error e(ErrorCode::shape_mismatch, "A is 3x4 but B is 5x6");
  e.with_context("in op 'mm' (matmul)").with_context("in graph 'g.json'");
  EXPECT_EQ(e.to_string(),
            "error[shape_mismatch]: A is 3x4 but B is 5x6\n  in op 'mm' (matmul)\n  in graph "
            "'g.json'");
}

Status check_positive(int x) {
  if (x <= 0) return Error(ErrorCode::invalid_argument, "not positive");
  return Status::ok();
}

Status both_positive(int a, int b) {
  CLEAVE_CHECK_OK(check_positive(a));
  CLEAVE_CHECK_OK(check_positive(b));
  return Status::ok();
}

TEST(Status, ChecksAndPropagates) {
  EXPECT_TRUE(both_positive(1, 2).is_ok());
  auto st = both_positive(1, -2);
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.error().code(), ErrorCode::invalid_argument);
}

}  // namespace
}  // namespace cleave
