// libFuzzer target: TDL statements through the parser and the binder, bound against shapes the
// input chooses (format: fuzz/tdl_input.h), then the whole iteration space and its halves
// analysed. Whatever the bytes, each step gives a result or an Error: no crash, no sanitizer
// report. Seeds: fuzz/seeds/tdl/. Built with -DCLEAVE_FUZZ=ON and clang; scripts/fuzz.sh runs it.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/tdl_input.h"

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  (void)cleave::fuzz::run_tdl_input(std::string_view(reinterpret_cast<char const*>(data), size));
  return 0;
}
