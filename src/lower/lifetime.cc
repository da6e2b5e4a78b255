#include "lower/lifetime.h"

namespace cleave::lower {

std::vector<OutputLifetime> output_lifetimes(Program const& program) {
  auto const& tasks = program.tasks;
  std::vector<OutputLifetime> out(tasks.size());
  for (TaskId i = 0; i < tasks.size(); ++i) {
    out[i].allocates = tasks[i].kind != TaskKind::swap_out;
    for (TaskId dep : tasks[i].deps) {
      out[dep].readers.push_back(i);
      bool copied = tasks[i].kind == TaskKind::swap_out && tasks[dep].device == tasks[i].device &&
                    tasks[dep].tensor == tasks[i].tensor;
      if (copied) out[dep].swapped = true;
    }
  }
  return out;
}

std::int64_t output_bytes(ir::Graph const& graph, Task const& task) {
  if (task.kind == TaskKind::transfer) return task.bytes.value();
  return tdl::box_volume(task.region) * ir::dtype_bytes(graph.tensor(task.tensor).type.dtype);
}

}  // namespace cleave::lower
