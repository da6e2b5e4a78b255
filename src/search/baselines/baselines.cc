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

// The slot that reads or writes axis `axis` of weight w in op `id`: through an input, or through
// the output when the op writes w's gradient (same shape); -1 if none.
int slot_for_weight(ir::Graph const& g, ir::Op const& op, tdl::BoundOp const& bound, ir::TensorId w,
                    int axis) {
  for (std::size_t i = 0; i < op.inputs.size(); ++i)
    if (op.inputs[i] == w) return slot_reading(bound, i, axis);
  if (g.tensor(op.outputs[0]).type.shape != g.tensor(w).type.shape) return -1;
  std::vector<int> slots;
  slots_in(bound.output_indices()[static_cast<std::size_t>(axis)], slots);
  for (int s : slots)
    if (bound.dims()[static_cast<std::size_t>(s)].splittable) return s;
  return -1;
}

// What the propagation has decided so far: the plan, each tensor's split, and per forward op the
// weights it reads along its model split and on which axis, for its backward ops to mirror (a
// tied weight is split one way by each of its uses).
struct Propagation {
  plan::Plan plan;
  std::vector<Axis> axes;
  std::vector<std::vector<std::pair<ir::TensorId, int>>> weight_splits;
  // Ops that split an unbatched activation on its first dimension for want of a split to follow
  // (AMP's cast of the causal mask): fit_to_readers() revisits them.
  struct Unbatched {
    ir::OpId op;
    std::size_t slot = 0;
    std::int64_t extent = 0;
  };
  std::vector<Unbatched> unbatched;
};

// An unbatched activation with no split to follow (the causal mask's cast: a constant every
// attention piece reads whole) is split over no more devices than its readers have pieces
// (issue 21). Split over every device, its blocks lay on devices that no reader's piece is on
// once the readers have fewer pieces than there are devices (GPT-3's 96 heads on 256 devices or
// more), so each reading piece fetched every block point to point: heads x devices transfers per
// layer, 9.4 M of the expert plan's tasks at 1,024 devices. On the readers' devices the blocks
// are one all-gather among them; where the readers have a piece per device, nothing changes.
void fit_to_readers(SearchContext const& ctx, Propagation& s) {
  auto const& g = ctx.graph;
  for (auto const& u : s.unbatched) {
    std::size_t readers = 0;
    for (ir::OpId r : g.consumers(g.op(u.op).outputs[0]))
      readers = std::max(readers, s.plan.ops[r.value()].devices.size());
    auto& config = s.plan.ops[u.op.value()];
    if (readers > 0 && readers < config.devices.size())
      split_dim(config, u.slot, u.extent, static_cast<int>(readers));
  }
}

// The cast that made `t` from a weight (AMP's half copy of a weight, docs/precision.md), or an
// invalid id.
ir::OpId weight_cast(ir::Graph const& g, ir::TensorId t) {
  ir::OpId producer = g.producer(t);
  if (!producer.valid()) return {};
  ir::Op const& op = g.op(producer);
  if (op.type != "cast" || op.forward.valid() || op.inputs.size() != 1) return {};
  return g.tensor(op.inputs[0]).role == ir::TensorRole::weight ? producer : ir::OpId{};
}

// A weight's cast, which comes before its readers and so had no split to follow, takes the model
// split (on `axis`) that its first model-split reader gives the half copy, and so does the weight
// (issue 21): the cast's pieces are then where that reader's pieces read them (rather than
// sharded on the first dimension, every piece fetching from every device), and the weight's
// update and its gradient's cast back are split as they are without AMP.
Status split_cast(SearchContext const& ctx, ir::OpId cast, int axis, int n, Propagation& s) {
  CLEAVE_TRY(auto bound, ctx.registry.bind(ctx.graph, cast));
  int slot = slot_reading(*bound, 0, axis);
  if (slot < 0 || !bound->dims()[static_cast<std::size_t>(slot)].splittable) return Status::ok();
  auto& config = s.plan.ops[cast.value()];
  std::fill(config.degrees.begin(), config.degrees.end(), 1);
  split_dim(config, static_cast<std::size_t>(slot),
            bound->dims()[static_cast<std::size_t>(slot)].extent, n);
  ir::TensorId weight = ctx.graph.op(cast).inputs[0];
  s.weight_splits[cast.value()].push_back({weight, axis});
  if (s.axes[weight.value()].dim < 0) s.axes[weight.value()] = {axis, true};
  return Status::ok();
}

// Data parallelism, optionally with Megatron-style tensor parallelism. Each op follows the split
// of its inputs (a model-split input first, then a batch-split one); ops with neither shard their
// first dimension with a piece for every device, else the largest (weight updates: ZeRO's sharded
// optimizer, where lower::scatter_dimension leaves the gradients). With tensor_parallel (the
// `expert` plan for transformers and CNNs, docs/cost_model.md):
//  - a forward linear whose input is not model-split splits its output features (column
//    parallel) and the next linear, reading that split, its input features (row parallel: a
//    partial sum, reduce-scattered onto the batch-split layout of what reads it next);
//  - a forward embedding splits its width (the table's columns), since cleave's embedding is a
//    gather that cannot be split on the vocabulary;
//  - weights read along a model split are model-split themselves (under AMP, their half copies
//    and the casts that make them too), and every backward op splits the dimension that touches
//    its forward op's model-split weights the same way (Megatron's backward mirrors its forward);
//  - activations with no split to follow take their first splittable dimension (the batch);
//    an op with no parallel dimension to split (the scalar loss) splits its reduction (partial
//    losses, summed).
Expected<plan::Plan> propagate(SearchContext const& ctx, int n, bool tensor_parallel) {
  auto const& g = ctx.graph;
  Propagation s{plan::single_device_plan(g, ctx.registry),
                std::vector<Axis>(g.num_tensors()),
                std::vector<std::vector<std::pair<ir::TensorId, int>>>(g.num_ops()),
                {}};
  auto& axes = s.axes;
  auto& weight_splits = s.weight_splits;
  for (auto const& t : g.tensors())
    if (t.role == ir::TensorRole::input && !t.type.shape.empty() && t.type.shape[0] == ctx.batch)
      axes[t.id.value()] = {0, false};
  for (ir::OpId id : g.topo_order()) {
    ir::Op const& op = g.op(id);
    CLEAVE_TRY(auto bound, ctx.registry.bind(g, id));
    auto const& dims = bound->dims();
    auto splittable = [&](int s) { return s >= 0 && dims[static_cast<std::size_t>(s)].splittable; };
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
    if (tensor_parallel && !op.forward.valid()) {
      if (op.type == "linear" && !axes[op.inputs[0].value()].model)
        chosen = slot_reading(*bound, 1, 0);  // W's output features: column parallel
      if (op.type == "embedding") {
        std::vector<int> slots;
        slots_in(bound->output_indices().back(), slots);
        if (!slots.empty()) chosen = slots[0];  // the width
      }
      model = splittable(chosen);
      if (!model) chosen = -1;
    }
    if (tensor_parallel && op.forward.valid()) {
      for (auto [w, axis] : weight_splits[op.forward.value()]) {
        if (chosen >= 0) break;
        chosen = slot_for_weight(g, op, *bound, w, axis);
        model = splittable(chosen);
        if (!model) chosen = -1;
      }
    }
    if (tensor_parallel && chosen < 0) follow(/*want_model=*/true);
    if (chosen < 0) follow(/*want_model=*/false);
    bool follows_input = chosen >= 0;
    auto role = g.tensor(op.outputs[0]).role;
    bool activation = role == ir::TensorRole::activation || role == ir::TensorRole::gradient;
    if (chosen < 0) {
      // Shard the first dimension with a piece for every device, else the largest (where a
      // reduce-scatter leaves a gradient's parts, lower::scatter_dimension); tensor_parallel
      // activations: the first (the batch).
      int first = -1, wide = -1, largest = -1;
      for (int d = 0; d < bound->num_parallel(); ++d) {
        if (!splittable(d)) continue;
        std::int64_t extent = dims[static_cast<std::size_t>(d)].extent;
        if (first < 0) first = d;
        if (wide < 0 && extent >= n) wide = d;
        if (largest < 0 || extent > dims[static_cast<std::size_t>(largest)].extent) largest = d;
      }
      chosen = tensor_parallel && activation ? first : wide >= 0 ? wide : largest;
      // Its first dimension is the batch if it has the batch's extent (batch-first activations;
      // per-channel vectors such as batch-norm statistics' gradients are not batched).
      auto const& shape = g.tensor(op.outputs[0]).type.shape;
      follows_input = tensor_parallel && activation && chosen == 0 && shape.size() >= 2 &&
                      shape[0] == ctx.batch;
    }
    if (tensor_parallel && activation && chosen >= 0 && !follows_input)
      s.unbatched.push_back(
          {id, static_cast<std::size_t>(chosen), dims[static_cast<std::size_t>(chosen)].extent});
    if (chosen < 0 && tensor_parallel) {  // a scalar: partial sums over its reduction
      for (int d = bound->num_parallel(); d < static_cast<int>(dims.size()) && chosen < 0; ++d)
        if (splittable(d)) chosen = d;
    }
    if (chosen < 0) continue;
    // The embedding's width split stays its own: what adds to it takes the batch split.
    if (follows_input && !(tensor_parallel && op.type == "embedding")) {
      for (std::size_t k = 0; k < bound->output_indices().size(); ++k) {
        std::vector<int> slots;
        slots_in(bound->output_indices()[k], slots);
        if (std::find(slots.begin(), slots.end(), chosen) != slots.end())
          axes[op.outputs[0].value()] = {static_cast<int>(k), model};
      }
    }
    // A row-parallel partial activation (a model split of a reduction) is reduce-scattered onto
    // the batch split its readers take; batch partials (batch-norm statistics) are not batched.
    if (tensor_parallel && model && activation && chosen >= bound->num_parallel() &&
        !g.tensor(op.outputs[0]).type.shape.empty())
      axes[op.outputs[0].value()] = {0, false};
    if (model) {  // weights read along the model split: the first such use decides their layout
      for (std::size_t i = 0; i < op.inputs.size(); ++i) {
        ir::OpId cast = weight_cast(g, op.inputs[i]);
        if (g.tensor(op.inputs[i]).role != ir::TensorRole::weight && !cast.valid()) continue;
        for (std::size_t k = 0; k < g.tensor(op.inputs[i]).type.shape.size(); ++k) {
          if (slot_reading(*bound, i, static_cast<int>(k)) != chosen) continue;
          weight_splits[id.value()].push_back({op.inputs[i], static_cast<int>(k)});
          auto& a = axes[op.inputs[i].value()];
          if (a.dim >= 0) continue;
          a = {static_cast<int>(k), true};
          if (cast.valid()) CLEAVE_CHECK_OK(split_cast(ctx, cast, static_cast<int>(k), n, s));
        }
      }
    }
    split_dim(s.plan.ops[id.value()], static_cast<std::size_t>(chosen),
              dims[static_cast<std::size_t>(chosen)].extent, n);
  }
  fit_to_readers(ctx, s);
  return std::move(s.plan);
}

}  // namespace

Expected<plan::Plan> single(SearchContext const& ctx) {
  return plan::single_device_plan(ctx.graph, ctx.registry);
}

Expected<plan::Plan> data_parallel(SearchContext const& ctx) {
  return propagate(ctx, static_cast<int>(ctx.cluster().num_devices()), /*tensor_parallel=*/false);
}

Expected<plan::Plan> tensor_parallel(SearchContext const& ctx) {
  return propagate(ctx, static_cast<int>(ctx.cluster().num_devices()), /*tensor_parallel=*/true);
}

}  // namespace cleave::search
