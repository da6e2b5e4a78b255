#include "search/baselines/baselines.h"

#include <algorithm>

#include "search/common/plan_util.h"

namespace cleave::search {
namespace {

// Which dimension of a tensor is split, and whether it is the batch or a model (tensor-parallel)
// dimension.
struct Axis {
  int dim = -1;
  bool model = false;
};

// The first splittable iteration dimension that reads dimension `axis` of input i, or -1.
int slot_reading(tdl::BoundOp const& bound, std::size_t i, int axis) {
  auto const& dims = bound.dims();
  for (auto const* access : bound.accesses()[i]) {
    std::vector<int> slots;
    slots_in((*access)[static_cast<std::size_t>(axis)], slots);
    for (int s : slots)
      if (s < static_cast<int>(dims.size()) && dims[static_cast<std::size_t>(s)].splittable)
        return s;
  }
  return -1;
}

// An input read only for its shape (e.g. bn_mean_grad_input's X) still says where the batch is:
// the output dimension of the same extent at the same axis.
int slot_by_shape(ir::Graph const& g, ir::Op const& op, tdl::BoundOp const& bound, ir::TensorId in,
                  int axis) {
  auto const& out_indices = bound.output_indices();
  auto const& in_shape = g.tensor(in).type.shape;
  auto const& out_shape = g.tensor(op.outputs[0]).type.shape;
  auto a = static_cast<std::size_t>(axis);
  if (a >= out_indices.size() || in_shape[a] != out_shape[a]) return -1;
  std::vector<int> slots;
  slots_in(out_indices[a], slots);
  for (int s : slots)
    if (bound.dims()[static_cast<std::size_t>(s)].splittable) return s;
  return -1;
}

// Data parallelism, optionally with Megatron-style tensor parallelism: each op follows the split of
// its inputs (a model-split input first, then a batch-split one); with tensor_parallel, a forward
// linear whose input is not model-split splits its output features (column parallel), and the
// next linear, reading that split, splits its input features (row parallel, a partial sum that
// is reduce-scattered). Ops with neither shard their largest dimension (weight updates).
Expected<plan::Plan> propagate(SearchContext const& ctx, int n, bool tensor_parallel) {
  plan::Plan p = plan::single_device_plan(ctx.graph, ctx.registry);
  auto const& g = ctx.graph;
  std::vector<Axis> axes(g.num_tensors());
  for (auto const& t : g.tensors())
    if (t.role == ir::TensorRole::input && !t.type.shape.empty() && t.type.shape[0] == ctx.batch)
      axes[t.id.value()] = {0, false};
  for (ir::OpId id : g.topo_order()) {
    ir::Op const& op = g.op(id);
    CLEAVE_TRY(auto bound, ctx.registry.bind(g, id));
    auto const& dims = bound->dims();
    int chosen = -1;
    bool model = false;
    auto follow = [&](bool want_model) {
      for (std::size_t i = 0; i < op.inputs.size() && chosen < 0; ++i) {
        Axis a = axes[op.inputs[i].value()];
        if (a.dim >= 0 && a.model == want_model) chosen = slot_reading(*bound, i, a.dim);
      }
      for (std::size_t i = 0; i < op.inputs.size() && chosen < 0; ++i) {
        Axis a = axes[op.inputs[i].value()];
        if (a.dim >= 0 && a.model == want_model)
          chosen = slot_by_shape(g, op, *bound, op.inputs[i], a.dim);
      }
      model = chosen >= 0 && want_model;
    };
    if (tensor_parallel) {
      follow(/*want_model=*/true);
      if (chosen < 0 && op.type == "linear" && !op.forward.valid()) {
        chosen = slot_reading(*bound, 1, 0);  // W's output features
        model = chosen >= 0;
      }
    }
    if (chosen < 0) follow(/*want_model=*/false);
    bool follows_input = chosen >= 0;
    if (chosen < 0) {  // shard the largest splittable parallel dimension
      for (int d = 0; d < bound->num_parallel(); ++d)
        if (dims[static_cast<std::size_t>(d)].splittable &&
            (chosen < 0 || dims[static_cast<std::size_t>(d)].extent >
                               dims[static_cast<std::size_t>(chosen)].extent))
          chosen = d;
    }
    if (chosen < 0) continue;
    if (follows_input) {
      for (std::size_t k = 0; k < bound->output_indices().size(); ++k) {
        std::vector<int> slots;
        slots_in(bound->output_indices()[k], slots);
        if (std::find(slots.begin(), slots.end(), chosen) != slots.end())
          axes[op.outputs[0].value()] = {static_cast<int>(k), model};
      }
    }
    split_dim(p.ops[id.value()], static_cast<std::size_t>(chosen),
              dims[static_cast<std::size_t>(chosen)].extent, n);
  }
  return p;
}

}  // namespace

Expected<plan::Plan> single(SearchContext const& ctx) {
  return plan::single_device_plan(ctx.graph, ctx.registry);
}

Expected<plan::Plan> data_parallel(SearchContext const& ctx) {
  return propagate(ctx, static_cast<int>(ctx.cluster.num_devices()), /*tensor_parallel=*/false);
}

Expected<plan::Plan> tensor_parallel(SearchContext const& ctx) {
  return propagate(ctx, static_cast<int>(ctx.cluster.num_devices()), /*tensor_parallel=*/true);
}

}  // namespace cleave::search
