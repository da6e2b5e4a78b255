#include <gtest/gtest.h>
#include <limits>

#include "ir/types.h"

namespace cleave::ir {
namespace {

TEST(DType, NamesRoundTripAndSizes) {
  for (DType d : {DType::fp32, DType::fp16, DType::bf16, DType::int32, DType::int64}) {
    EXPECT_EQ(parse_dtype(dtype_name(d)), d);
  }
  EXPECT_EQ(dtype_name(DType::bf16), "bf16");
  EXPECT_FALSE(parse_dtype("fp8").has_value());
  EXPECT_EQ(dtype_bytes(DType::fp32), 4);
  EXPECT_EQ(dtype_bytes(DType::fp16), 2);
  EXPECT_EQ(dtype_bytes(DType::bf16), 2);
  EXPECT_EQ(dtype_bytes(DType::int32), 4);
  EXPECT_EQ(dtype_bytes(DType::int64), 8);
  EXPECT_TRUE(is_floating(DType::bf16));
  EXPECT_FALSE(is_floating(DType::int32));
}

TEST(TensorRole, NamesRoundTrip) {
  for (TensorRole r : {TensorRole::input, TensorRole::activation, TensorRole::weight,
                       TensorRole::gradient, TensorRole::optimizer_state}) {
    EXPECT_EQ(parse_role(role_name(r)), r);
  }
  EXPECT_EQ(role_name(TensorRole::optimizer_state), "optimizer_state");
  EXPECT_FALSE(parse_role("Weight").has_value());
}

TEST(Shape, ToStringAndElements) {
  EXPECT_EQ(shape_to_string({64, 32}), "64x32");
  EXPECT_EQ(shape_to_string({7}), "7");
  EXPECT_EQ(shape_to_string({}), "scalar");
  EXPECT_EQ(num_elements({64, 32}), 2048);
  EXPECT_EQ(num_elements({}), 1);
  EXPECT_EQ(type_to_string({{64, 32}, DType::fp32}), "fp32[64x32]");
  EXPECT_EQ(type_to_string({{}, DType::int64}), "int64[scalar]");
}

TEST(Shape, ValidityRejectsSmallDimsAndOverflow) {
  EXPECT_TRUE(is_valid_shape({}));
  EXPECT_TRUE(is_valid_shape({1, 1}));
  EXPECT_FALSE(is_valid_shape({4, 0}));
  EXPECT_FALSE(is_valid_shape({-2}));
  EXPECT_FALSE(is_valid_shape({std::int64_t{1} << 32, std::int64_t{1} << 32}));
  // 2^60 elements: 2^63 bytes in int64, the widest dtype, does not fit; 2^59 does.
  EXPECT_FALSE(is_valid_shape({std::int64_t{1} << 30, std::int64_t{1} << 30}));
  EXPECT_TRUE(is_valid_shape({std::int64_t{1} << 30, std::int64_t{1} << 29}));
}

TEST(ParseShape, AcceptsBothSeparatorsAndScalars) {
  EXPECT_EQ(*parse_shape("64x32"), (Shape{64, 32}));
  EXPECT_EQ(*parse_shape("64,32,3"), (Shape{64, 32, 3}));
  EXPECT_EQ(*parse_shape("5"), (Shape{5}));
  EXPECT_EQ(*parse_shape(" 8, 4 "), (Shape{8, 4}));
  EXPECT_EQ(*parse_shape(""), Shape{});
  EXPECT_EQ(*parse_shape("scalar"), Shape{});
  EXPECT_EQ(*parse_shape("1152921504606846975"), (Shape{(std::int64_t{1} << 60) - 1}));
}

void expect_bad_shape(std::string const& text, std::string const& why) {
  auto shape = parse_shape(text);
  ASSERT_FALSE(shape.has_value()) << text;
  EXPECT_EQ(shape.error().code(), ErrorCode::parse_error) << text;
  EXPECT_EQ(shape.error().message(), "bad shape '" + text + "': " + why);
}

TEST(ParseShape, RejectsBadTextWithTheTextQuoted) {
  expect_bad_shape("64xa", "expected dimensions like 64x32");
  expect_bad_shape("64x", "expected dimensions like 64x32");
  expect_bad_shape("x64", "expected dimensions like 64x32");
  expect_bad_shape("64xx32", "expected dimensions like 64x32");
  expect_bad_shape("6.5", "expected dimensions like 64x32");
  expect_bad_shape("+4", "expected dimensions like 64x32");
  expect_bad_shape("Scalar", "expected dimensions like 64x32");
  expect_bad_shape("64x0", "every dimension must be >= 1, like 64x32");
  expect_bad_shape("-3x2", "every dimension must be >= 1, like 64x32");
  expect_bad_shape("99999999999999999999", "dimension '99999999999999999999' is too large");
  expect_bad_shape("4294967296x4294967296", "its size in bytes does not fit in 64 bits");
  expect_bad_shape("2000000000x2000000000", "its size in bytes does not fit in 64 bits");
}

}  // namespace
}  // namespace cleave::ir
