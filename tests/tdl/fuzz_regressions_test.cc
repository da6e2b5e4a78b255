// Inputs fuzz/tdl_fuzz.cc found crashing, replayed through the same steps (fuzz/tdl_input.h:
// parse, bind against the input's shapes, analyse the space and its halves), each with the
// outcome it must now have.
#include <gtest/gtest.h>

#include "fuzz/tdl_input.h"
#include "fuzz_regressions.h"

namespace cleave::tdl {
namespace {

TEST(TdlFuzz, RegressionsGiveTheirOutcome) {
  testing::expect_fuzz_outcomes(
      CLEAVE_TDL_FUZZ_REGRESSIONS,
      {
          // A 4e9 x 4e9 output: its element count overflowed int64 in the binder.
          {"output_elements_overflow.txt", "the output's elements (the product of the extents of "
                                           "the parallel dimensions) overflow 64-bit counts"},
          // An output index naming over 64 variables: a slot's bit shifted past 64 (UB).
          {"output_index_many_variables.txt", "more than 64 iteration variables"},
      },
      [](std::string const& input) { return fuzz::run_tdl_input(input); });
}

}  // namespace
}  // namespace cleave::tdl
