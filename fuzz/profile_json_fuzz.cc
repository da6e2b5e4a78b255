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
  auto table = cost::profile_from_json(std::string_view(reinterpret_cast<char const*>(data), size));
  if (!table) return 0;
  std::string const text = cost::profile_to_json(*table);
  auto again = cost::profile_from_json(text);
  fuzz::require(again.has_value(), "a written profile loads");
  fuzz::require(cost::profile_to_json(*again) == text, "the profile round-trips");
  return 0;
}
