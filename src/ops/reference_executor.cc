#include "ops/reference_executor.h"

namespace cleave::ops {

Expected<std::vector<tdl::TensorData>>
evaluate_graph(ir::Graph const& graph, OpRegistry const& registry,
               std::map<std::string, tdl::TensorData, std::less<>> const& sources,
               tdl::EvalOptions options) {
  std::vector<tdl::TensorData> values(graph.num_tensors());
  for (auto const& t : graph.tensors()) {
    if (graph.producer(t.id).valid()) continue;
    auto it = sources.find(t.name);
    if (it == sources.end())
      return Error(ErrorCode::not_found, "no value given for source tensor '" + t.name + "' (" +
                                             ir::type_to_string(t.type) + ")");
    if (it->second.shape != t.type.shape ||
        static_cast<std::int64_t>(it->second.values.size()) != ir::num_elements(t.type.shape))
      return Error(ErrorCode::shape_mismatch, "the value given for '" + t.name + "' has shape " +
                                                  ir::shape_to_string(it->second.shape) +
                                                  ", the tensor is " + ir::type_to_string(t.type));
    values[t.id.value()] = it->second;
  }
  for (ir::OpId id : graph.topo_order()) {
    ir::Op const& op = graph.op(id);
    CLEAVE_TRY(auto bound, registry.bind(graph, id));
    std::vector<tdl::TensorData> inputs;
    inputs.reserve(op.inputs.size());
    for (auto in : op.inputs)
      inputs.push_back(values[in.value()]);
    auto out = tdl::evaluate(*bound, tdl::full_box(*bound), inputs, options);
    if (!out)
      return std::move(out).error().with_context("in op '" + op.name + "' (" + op.type + ")");
    values[op.outputs[0].value()] = std::move(*out);
  }
  return values;
}

}  // namespace cleave::ops
