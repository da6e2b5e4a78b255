// libFuzzer target: cleave.profile/1 text through profile_from_json (and so ProfileTable's
// checks), then a round trip: a loaded table written and read back gives the same text. Seeds:
// fuzz/seeds/profile/ (the example of docs/formats.md and variants); the mutator is
// fuzz/json_mutator.h. Built with -DCLEAVE_FUZZ=ON and clang; scripts/fuzz.sh runs it.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "cost/profile_table.h"
#include "fuzz/json_mutator.h"

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  using namespace cleave;
  (void)fuzz::read_and_round_trip(data, size, cost::profile_from_json, cost::profile_to_json,
                                  "a written profile reads back the same");
  return 0;
}
