// Inputs fuzz/tdl_fuzz.cc found crashing (scripts/fuzz.sh), replayed through the same steps
// (fuzz/tdl_input.h: parse, bind against the input's shapes, analyse the space and its halves),
// each with the outcome it must now have: the error naming what is wrong, or "" where it must
// bind and analyse. Every file must be listed.
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <set>
#include <string>

#include "fuzz/tdl_input.h"

namespace cleave::tdl {
namespace {

TEST(TdlFuzz, RegressionsGiveTheirOutcome) {
  std::map<std::string, std::string> const outcomes = {
      // A 4e9 x 4e9 output: its element count overflowed int64 in the binder.
      {"output_elements_overflow.txt", "the output's elements (the product of the extents of the "
                                       "parallel dimensions) overflow 64-bit counts"},
  };
  std::set<std::string> seen;
  for (auto const& f : std::filesystem::directory_iterator(CLEAVE_TDL_FUZZ_REGRESSIONS)) {
    std::string const name = f.path().filename().string();
    auto outcome = outcomes.find(name);
    ASSERT_NE(outcome, outcomes.end()) << name << ": add its outcome to the table";
    std::ifstream in(f.path(), std::ios::binary);
    std::string const input{std::istreambuf_iterator<char>(in), {}};
    Status status = fuzz::run_tdl_input(input);
    if (outcome->second.empty()) {
      EXPECT_TRUE(status.is_ok()) << name << ": " << status.error().to_string();
    } else {
      ASSERT_FALSE(status.is_ok()) << name << " bound and analysed";
      EXPECT_NE(status.error().message().find(outcome->second), std::string::npos)
          << name << ": " << status.error().to_string();
    }
    seen.insert(name);
  }
  EXPECT_EQ(seen.size(), outcomes.size()) << "a listed regression input is missing";
}

}  // namespace
}  // namespace cleave::tdl
