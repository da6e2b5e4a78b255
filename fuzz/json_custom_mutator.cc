// libFuzzer's custom mutator hook for the JSON targets (fuzz/CMakeLists.txt links it into each):
// the structure-aware mutation of fuzz/json_mutator.h.
#include <cstddef>
#include <cstdint>

#include "fuzz/json_mutator.h"

extern "C" std::size_t LLVMFuzzerCustomMutator(std::uint8_t* data, std::size_t size,
                                               std::size_t max_size, unsigned seed) {
  return cleave::fuzz::mutate_json(data, size, max_size, seed);
}
