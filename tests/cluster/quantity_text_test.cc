#include <gtest/gtest.h>

#include "cluster/quantity_text.h"

namespace cleave::cluster {
namespace {

TEST(QuantityText, ParsesSizes) {
  EXPECT_EQ(parse_bytes("80GiB")->value(), 80LL << 30);
  EXPECT_EQ(parse_bytes("40GB")->value(), 40'000'000'000LL);
  EXPECT_EQ(parse_bytes("12e9")->value(), 12'000'000'000LL);
  EXPECT_EQ(parse_bytes("1.5 GiB")->value(), 3LL << 29);
  EXPECT_EQ(parse_bytes("512")->value(), 512);
  for (char const* bad : {"", "GiB", "80 gigs", "0x10", "inf", "nan", "1.5", "-1GB", "80GiBs"})
    EXPECT_FALSE(parse_bytes(bad).has_value()) << bad;
  EXPECT_NE(parse_bytes("80 gigs").error().message().find("write e.g. 80GiB"), std::string::npos);
}

TEST(QuantityText, ParsesRatesAndDurations) {
  EXPECT_EQ(parse_bandwidth("300GB/s")->value(), 300e9);
  EXPECT_EQ(parse_bandwidth("100Gb/s")->value(), 12.5e9);
  EXPECT_EQ(parse_bandwidth("12e9")->value(), 12e9);
  EXPECT_FALSE(parse_bandwidth("300GB").has_value());
  EXPECT_EQ(parse_flops_rate("19.5TFLOP/s")->value(), 19.5e12);
  EXPECT_EQ(parse_seconds("25us")->value(), 25e-6);
  EXPECT_EQ(parse_seconds("1.5ms")->value(), 1.5e-3);
  EXPECT_FALSE(parse_seconds("25 parsecs").has_value());
}

TEST(QuantityText, Formats) {
  EXPECT_EQ(format_bandwidth(BytesPerSecond(12.5e9)), "12.5 GB/s");
  EXPECT_EQ(format_flops_rate(FlopsPerSecond(19.5e12)), "19.5 TFLOP/s");
  EXPECT_EQ(format_seconds(Seconds(25e-6)), "25 us");
  EXPECT_EQ(format_seconds(Seconds(0)), "0 s");
}

}  // namespace
}  // namespace cleave::cluster
