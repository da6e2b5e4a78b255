// libFuzzer target: arbitrary bytes through the ONNX importer and, when they import, autodiff.
// Whatever the bytes, the result must be a graph or an Error: no crash, no sanitizer report, no
// exception escaping. Built with -DCLEAVE_FUZZ=ON and clang; scripts/fuzz.sh runs it.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "autodiff/training_graph.h"
#include "import/onnx_import.h"
#include "import/opaque_op.h"

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  using namespace cleave;
  static auto const registry = [] {
    auto r = ops::OpRegistry::with_builtins();
    importer::add_import_ops(*r);
    return r;
  }();
  importer::ImportOptions options;
  options.allow_opaque = size % 2 == 1;  // both paths of an unknown op
  auto imported = importer::import_onnx_bytes(
      std::string_view(reinterpret_cast<char const*>(data), size), "fuzz.onnx", *registry, options);
  if (imported) {
    autodiff::TrainingOptions training;
    training.loss = imported->loss;
    (void)autodiff::build_training_graph(imported->forward, *registry, training);
  }
  return 0;
}
