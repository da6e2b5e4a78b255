#include <gtest/gtest.h>

#include "support/format_bytes.h"

namespace cleave {
namespace {

TEST(FormatBytes, CapacitiesAsWrittenOtherSizesInBinaryUnits) {
  EXPECT_EQ(format_bytes(Bytes(80LL << 30)), "80 GiB");
  EXPECT_EQ(format_bytes(Bytes(3LL << 19)), "1.5 MiB");
  EXPECT_EQ(format_bytes(Bytes(12'000'000'000LL)), "12 GB");
  EXPECT_EQ(format_bytes(Bytes(12'272'000'000LL)), "11.43 GiB");
  EXPECT_EQ(format_bytes(Bytes(2000)), "2 KB");
  EXPECT_EQ(format_bytes(Bytes(1100)), "1.074 KiB");
  EXPECT_EQ(format_bytes(Bytes(512)), "512 B");
  EXPECT_EQ(format_bytes(Bytes(0)), "0 B");
  EXPECT_EQ(format_bytes(Bytes(-2048)), "-2 KiB");
}

}  // namespace
}  // namespace cleave
