#include "search/baselines.h"

#include <chrono>

#include "ir/graph_json.h"

namespace cleave::search {
namespace {

// The iteration slots an index expression depends on.
void slots_in(tdl::BoundIndex const& b, std::vector<int>& out) {
  if (b.kind == tdl::BoundIndex::Kind::gather) return;
  for (auto [slot, coef] : b.var_terms)
    out.push_back(slot);
  for (auto const& c : b.children)
    slots_in(c, out);
}

// Splits dimension `dim` of the op over up to n devices (fewer if it is shorter).
void split(plan::OpConfig& c, std::size_t dim, std::int64_t extent, int n) {
  std::int64_t k = std::min<std::int64_t>(n, extent);
  c.degrees[dim] = k;
  c.devices.resize(static_cast<std::size_t>(k));
  for (std::int64_t i = 0; i < k; ++i)
    c.devices[static_cast<std::size_t>(i)] = static_cast<int>(i);
}

Expected<plan::Plan> data_parallel(SearchContext const& ctx, int n) {
  plan::Plan p = plan::single_device_plan(ctx.graph, ctx.registry);
  auto const& g = ctx.graph;
  // The batch axis of each tensor (-1: none): inputs whose first dimension is the batch, then
  // whatever an op's batch dimension writes.
  std::vector<int> batch_axis(g.num_tensors(), -1);
  for (auto const& t : g.tensors())
    if (t.role == ir::TensorRole::input && !t.type.shape.empty() && t.type.shape[0] == ctx.batch)
      batch_axis[t.id.value()] = 0;
  for (ir::OpId id : g.topo_order()) {
    ir::Op const& op = g.op(id);
    CLEAVE_TRY(auto bound, ctx.registry.bind(g, id));
    auto const& dims = bound->dims();
    auto& c = p.ops[id.value()];
    int chosen = -1;
    for (std::size_t i = 0; i < op.inputs.size() && chosen < 0; ++i) {
      int axis = batch_axis[op.inputs[i].value()];
      if (axis < 0) continue;
      for (auto const* access : bound->accesses()[i]) {
        std::vector<int> slots;
        slots_in((*access)[static_cast<std::size_t>(axis)], slots);
        for (int s : slots)
          if (s < static_cast<int>(dims.size()) && dims[static_cast<std::size_t>(s)].splittable &&
              chosen < 0)
            chosen = s;
      }
    }
    // An input read only for its shape (e.g. bn_mean_grad_input's X) still says where the batch
    // is: the output dimension of the same extent at the same axis.
    for (std::size_t i = 0; i < op.inputs.size() && chosen < 0; ++i) {
      int axis = batch_axis[op.inputs[i].value()];
      auto const& out_indices = bound->output_indices();
      if (axis < 0 || static_cast<std::size_t>(axis) >= out_indices.size()) continue;
      auto const& in_shape = g.tensor(op.inputs[i]).type.shape;
      auto const& out_shape = g.tensor(op.outputs[0]).type.shape;
      if (in_shape[static_cast<std::size_t>(axis)] != out_shape[static_cast<std::size_t>(axis)]) continue;
      std::vector<int> slots;
      slots_in(out_indices[static_cast<std::size_t>(axis)], slots);
      for (int s : slots)
        if (dims[static_cast<std::size_t>(s)].splittable && chosen < 0) chosen = s;
    }
    if (chosen < 0) {  // no batch: shard the largest splittable parallel dimension
      for (int d = 0; d < bound->num_parallel(); ++d)
        if (dims[static_cast<std::size_t>(d)].splittable &&
            (chosen < 0 || dims[static_cast<std::size_t>(d)].extent >
                               dims[static_cast<std::size_t>(chosen)].extent))
          chosen = d;
    } else {
      for (std::size_t k = 0; k < bound->output_indices().size(); ++k) {
        std::vector<int> slots;
        slots_in(bound->output_indices()[k], slots);
        if (std::find(slots.begin(), slots.end(), chosen) != slots.end())
          batch_axis[op.outputs[0].value()] = static_cast<int>(k);
      }
    }
    if (chosen >= 0)
      split(c, static_cast<std::size_t>(chosen), dims[static_cast<std::size_t>(chosen)].extent, n);
  }
  return p;
}

}  // namespace

std::vector<std::string> algorithms() {
  return {"single", "data-parallel"};
}

Expected<plan::Plan> make_plan(std::string const& algorithm, SearchContext const& ctx) {
  auto t0 = std::chrono::steady_clock::now();
  int n = static_cast<int>(ctx.cluster.num_devices());
  Expected<plan::Plan> p = Error(ErrorCode::not_found, "");
  if (algorithm == "single") {
    p = plan::single_device_plan(ctx.graph, ctx.registry);
  } else if (algorithm == "data-parallel") {
    p = data_parallel(ctx, n);
  } else {
    std::string known;
    for (auto const& a : algorithms())
      known += (known.empty() ? "" : ", ") + a;
    return Error(ErrorCode::not_found,
                 "unknown algorithm '" + algorithm + "'; available: " + known);
  }
  if (!p) return p;
  p->num_devices = n;
  p->cluster = ctx.cluster_spec;
  p->model = ctx.model;
  p->provenance.algorithm = algorithm;
  p->provenance.seed = ctx.seed;
  p->provenance.search_time_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return p;
}

}  // namespace cleave::search
