// Import time and peak memory of ONNX models (issue 7): the stages of `import_onnx_file` (protobuf
// parse, checker + dropping the weights' bytes, shape inference, conversion) and the process's
// peak RSS. One model per process, so the peak is that model's.
//   import_speed --model FILE.onnx [--runs N] [--markdown]
#include <cstring>
#include <filesystem>
#include <string>

#include "bench_util.h"
#include "import/onnx_import.h"
#include "import/opaque_op.h"

using namespace cleave;

int main(int argc, char** argv) {
  std::string model;
  int runs = 3;
  bool markdown = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--model") && i + 1 < argc)
      model = argv[++i];
    else if (!std::strcmp(argv[i], "--runs") && i + 1 < argc)
      runs = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--markdown"))
      markdown = true;
  }
  if (model.empty()) {
    std::fprintf(stderr, "usage: import_speed --model FILE.onnx [--runs N] [--markdown]\n");
    return 2;
  }
  auto registry = ops::OpRegistry::with_builtins();
  importer::add_import_ops(*registry);
  double rss_before = bench::peak_rss_gib();
  std::vector<double> total, parse, check, infer, convert;
  importer::ImportStats last;
  for (int r = 0; r < runs; ++r) {
    auto t0 = bench::Clock::now();
    auto g = bench::must(importer::import_onnx_file(model, *registry));
    total.push_back(bench::seconds_since(t0));
    last = g.stats;
    parse.push_back(last.parse_s);
    check.push_back(last.check_s);
    infer.push_back(last.infer_s);
    convert.push_back(last.convert_s);
  }
  double mib = static_cast<double>(std::filesystem::file_size(model)) / (1 << 20);
  double excl = bench::median(total) - bench::median(parse);
  std::string name = std::filesystem::path(model).stem().string();
  if (markdown) {
    std::printf(
        "| model | file MiB | ONNX nodes | parameters | total s | protobuf parse s | checker s "
        "| shape inference s | convert s | total - parse s | peak RSS MiB |\n");
    std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  }
  std::printf(markdown
                  ? "| %s | %.0f | %lld | %lld | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.0f |\n"
                  : "%s: %.0f MiB, %lld nodes, %lld parameters: total %.3f s (parse %.3f, "
                    "check %.3f, infer %.3f, convert %.3f; without parse %.3f), peak RSS "
                    "%.0f MiB\n",
              name.c_str(), mib, static_cast<long long>(last.onnx_nodes),
              static_cast<long long>(last.parameters), bench::median(total), bench::median(parse),
              bench::median(check), bench::median(infer), bench::median(convert), excl,
              bench::peak_rss_gib() * 1024);
  if (!markdown) std::printf("(peak RSS before importing: %.0f MiB)\n", rss_before * 1024);
  return 0;
}
