#include "plan/plan.h"

#include <algorithm>

#include "ir/graph_json.h"

namespace cleave::plan {

std::vector<tdl::Box> piece_boxes(tdl::BoundOp const& op, OpConfig const& config) {
  std::vector<tdl::Box> boxes = {tdl::full_box(op)};
  for (std::size_t d = 0; d < config.degrees.size(); ++d) {
    if (config.degrees[d] == 1) continue;
    std::vector<tdl::Box> next;
    for (auto const& b : boxes)
      for (auto& part : tdl::split_evenly(b, static_cast<int>(d), config.degrees[d]))
        next.push_back(std::move(part));
    boxes = std::move(next);
  }
  return boxes;
}

Plan single_device_plan(ir::Graph const& graph, ops::OpRegistry const& registry) {
  Plan p;
  p.graph_fingerprint = ir::graph_fingerprint(graph);
  p.provenance.algorithm = "single";
  for (auto const& op : graph.ops()) {
    auto bound = registry.bind(graph, op.id);
    std::size_t dims = bound ? (*bound)->dims().size() : 0;
    p.ops.push_back({std::vector<std::int64_t>(dims, 1), {0}});
  }
  return p;
}

FetchPolicy fetch_policy(Plan const& plan, ir::TensorId t) {
  for (auto const& f : plan.tensor_fetch)
    if (f.tensor == t) return f.policy;
  return plan.fetch;
}

namespace {

Error plan_error(ir::Op const& op, std::string const& message) {
  return Error(ErrorCode::invalid_argument,
               "plan for op '" + op.name + "' (" + op.type + "): " + message);
}

std::string piece_text(ir::Graph const& graph, PieceRef r) {
  return "op '" + graph.op(ir::OpId(r.op)).name + "' piece " + std::to_string(r.piece);
}

Status validate_tensor_fetch(Plan const& plan, ir::Graph const& graph) {
  std::vector<bool> seen(graph.num_tensors(), false);
  for (auto const& f : plan.tensor_fetch) {
    if (f.tensor.value() >= graph.num_tensors())
      return Error(ErrorCode::invalid_argument,
                   "the plan sets the fetch policy of tensor " + std::to_string(f.tensor.value()) +
                       ", which the graph does not have (it has " +
                       std::to_string(graph.num_tensors()) + " tensors)");
    if (seen[f.tensor.value()])
      return Error(ErrorCode::invalid_argument, "the plan sets the fetch policy of tensor '" +
                                                    graph.tensor(f.tensor).name + "' twice");
    seen[f.tensor.value()] = true;
  }
  return Status::ok();
}

Status validate_pools(Plan const& plan) {
  if (plan.pools.empty()) return Status::ok();
  auto fail = [](std::string const& why) {
    return Error(ErrorCode::invalid_argument, "the plan's memory pools: " + why);
  };
  if (plan.pools.size() != static_cast<std::size_t>(plan.num_devices))
    return fail(std::to_string(plan.pools.size()) + " pools for " +
                std::to_string(plan.num_devices) + " devices; give one per device or none");
  for (std::size_t d = 0; d < plan.pools.size(); ++d) {
    auto const& classes = plan.pools[d].classes;
    for (std::size_t c = 0; c < classes.size(); ++c)
      if (classes[c].objects < 1 || classes[c].object_bytes < 1 ||
          (c > 0 && classes[c].object_bytes <= classes[c - 1].object_bytes))
        return fail("device " + std::to_string(d) + "'s size class " + std::to_string(c) +
                    " is not a positive number of objects of a positive size larger than the "
                    "class before");
  }
  return Status::ok();
}

Error swap_error(ir::Graph const& graph, Swap const& swap, std::string const& why) {
  std::string name = swap.tensor.value() < graph.num_tensors()
                         ? "'" + graph.tensor(swap.tensor).name + "'"
                         : std::to_string(swap.tensor.value());
  return Error(ErrorCode::invalid_argument, "the swap of tensor " + name + " " +
                                                tdl::box_to_string(swap.region) + " on device " +
                                                std::to_string(swap.device) + ": " + why);
}

std::size_t order_position(Plan const& plan, int device, PieceRef r) {
  auto const& order = plan.order[static_cast<std::size_t>(device)];
  return static_cast<std::size_t>(std::find(order.begin(), order.end(), r) - order.begin());
}

// Checks a swap against the graph and the (validated) orders.
Status validate_swap(Plan const& plan, ir::Graph const& graph, Swap const& swap) {
  auto fail = [&](std::string const& why) { return swap_error(graph, swap, why); };
  if (swap.tensor.value() >= graph.num_tensors()) return fail("the graph has no such tensor");
  auto const& shape = graph.tensor(swap.tensor).type.shape;
  bool inside = swap.region.size() == shape.size();
  for (std::size_t d = 0; inside && d < shape.size(); ++d)
    inside = swap.region[d].lo >= 0 && swap.region[d].lo < swap.region[d].hi &&
             swap.region[d].hi <= shape[d];
  if (!inside) return fail("the region is not a non-empty box inside the tensor's shape");
  if (swap.device < 0 || swap.device >= plan.num_devices)
    return fail("the plan has no such device");
  auto const& order = plan.order[static_cast<std::size_t>(swap.device)];
  auto position = [&](PieceRef r) -> std::optional<std::size_t> {
    auto it = std::find(order.begin(), order.end(), r);
    if (it == order.end()) return std::nullopt;
    return static_cast<std::size_t>(it - order.begin());
  };
  if (!swap.out_after && !swap.in_before)
    return fail("it has neither a swap-out (out_after) nor a swap-in (in_before)");
  auto at = [&](std::optional<PieceRef> const& r,
                std::string const& what) -> Expected<std::optional<std::size_t>> {
    if (!r) return std::optional<std::size_t>();
    auto p = position(*r);
    if (!p)
      return fail(what + " op " + std::to_string(r->op) + " piece " + std::to_string(r->piece) +
                  ", not a piece of that device");
    return p;
  };
  CLEAVE_TRY(auto out, at(swap.out_after, "it swaps out after"));
  CLEAVE_TRY(auto in, at(swap.in_before, "it swaps in before"));
  if (out && in && *in <= *out)
    return fail("it swaps in before " + piece_text(graph, *swap.in_before) +
                ", which the device's order runs before swapping out after " +
                piece_text(graph, *swap.out_after));
  if (swap.in_after) {
    auto issue = position(*swap.in_after);
    if (!in || !issue || (out && *issue < *out) || *issue >= *in)
      return fail("it issues the swap-in after op " + std::to_string(swap.in_after->op) +
                  " piece " + std::to_string(swap.in_after->piece) +
                  ", which is not a piece of the device from the swap-out's piece on and before "
                  "its swap-in's");
  }
  if (swap.out_before) {
    auto wait = position(*swap.out_before);
    if (!out || !wait || *wait <= *out)
      return fail("its swap-out is awaited by op " + std::to_string(swap.out_before->op) +
                  " piece " + std::to_string(swap.out_before->piece) +
                  ", which is not a piece of the device after its swap-out's");
  }
  return Status::ok();
}

// The swaps of one block that copy it out (each checked alone): in the device's order each
// brings it back before the next takes it out again, so that they strictly alternate.
Status validate_swap_chains(Plan const& plan, ir::Graph const& graph) {
  std::vector<Swap const*> outs;
  for (auto const& s : plan.swaps)
    if (s.out_after) outs.push_back(&s);
  auto out_at = [&](Swap const* s) { return order_position(plan, s->device, *s->out_after); };
  auto key = [](Swap const* s) {
    std::vector<std::int64_t> k{s->device, s->tensor.value()};
    for (auto const& i : s->region)
      k.insert(k.end(), {i.lo, i.hi});
    return k;
  };
  std::sort(outs.begin(), outs.end(), [&](Swap const* a, Swap const* b) {
    return key(a) != key(b) ? key(a) < key(b) : out_at(a) < out_at(b);
  });
  for (std::size_t k = 1; k < outs.size(); ++k) {
    Swap const& a = *outs[k - 1];
    Swap const& b = *outs[k];
    if (key(&a) != key(&b)) continue;
    std::string again = "it swaps the block out after " + piece_text(graph, *b.out_after) +
                        " while its swap out after " + piece_text(graph, *a.out_after);
    if (!a.in_before)
      return swap_error(graph, b, again + " leaves it on the host to the step's end");
    if (order_position(plan, a.device, *a.in_before) > out_at(&b))
      return swap_error(graph, b,
                        again + " brings it back only before " + piece_text(graph, *a.in_before) +
                            ": the swaps of a block must alternate, each swap-in before the next "
                            "swap-out in the device's order");
  }
  return Status::ok();
}

}  // namespace

Status validate_op(OpConfig const& c, ir::Op const& op, tdl::BoundOp const& bound,
                   int num_devices) {
  auto const& dims = bound.dims();
  if (c.degrees.size() != dims.size())
    return plan_error(op, "has " + std::to_string(c.degrees.size()) + " degrees for " +
                              std::to_string(dims.size()) + " iteration dimensions (" +
                              bound.describe_space() + ")");
  std::int64_t n = 1;
  for (std::size_t d = 0; d < dims.size(); ++d) {
    std::int64_t k = c.degrees[d];
    if (k < 1 || k > dims[d].extent)
      return plan_error(op, "degree " + std::to_string(k) + " for dimension '" + dims[d].name +
                                "' must be between 1 and its extent " +
                                std::to_string(dims[d].extent));
    if (k > 1 && !dims[d].splittable)
      return plan_error(op, "dimension '" + dims[d].name + "' cannot be split (" +
                                dims[d].unsplittable_reason + ")");
    n *= k;
  }
  if (static_cast<std::int64_t>(c.devices.size()) != n)
    return plan_error(op, "has " + std::to_string(n) + " pieces but " +
                              std::to_string(c.devices.size()) + " devices");
  for (int dev : c.devices)
    if (dev < 0 || dev >= num_devices)
      return plan_error(op, "device " + std::to_string(dev) + " is not in 0.." +
                                std::to_string(num_devices - 1));
  return Status::ok();
}

Status validate(Plan const& plan, ir::Graph const& graph, ops::OpRegistry const& registry) {
  std::string fp = ir::graph_fingerprint(graph);
  if (plan.graph_fingerprint != fp)
    return Error(ErrorCode::invalid_argument,
                 "the plan was made for graph " + plan.graph_fingerprint + " but this graph is " +
                     fp + ": plan this graph again (or load the graph the plan was made for)");
  if (plan.num_devices < 1)
    return Error(ErrorCode::invalid_argument, "a plan needs at least one device");
  if (plan.ops.size() != graph.num_ops())
    return Error(ErrorCode::invalid_argument,
                 "the plan configures " + std::to_string(plan.ops.size()) + " ops, the graph has " +
                     std::to_string(graph.num_ops()));
  std::vector<std::int64_t> pieces(graph.num_ops());
  for (auto const& op : graph.ops()) {
    OpConfig const& c = plan.ops[op.id.value()];
    CLEAVE_TRY(auto bound, registry.bind(graph, op.id));
    CLEAVE_CHECK_OK(validate_op(c, op, *bound, plan.num_devices));
    pieces[op.id.value()] = static_cast<std::int64_t>(c.devices.size());
  }
  CLEAVE_CHECK_OK(validate_tensor_fetch(plan, graph));
  CLEAVE_CHECK_OK(validate_pools(plan));
  if (plan.order.empty()) {
    if (plan.swaps.empty()) return Status::ok();
    return Error(ErrorCode::invalid_argument,
                 "the plan swaps regions but orders no device: a swap's points are pieces of its "
                 "device's order");
  }
  if (plan.order.size() != static_cast<std::size_t>(plan.num_devices))
    return Error(ErrorCode::invalid_argument,
                 "the plan orders " + std::to_string(plan.order.size()) + " devices, it has " +
                     std::to_string(plan.num_devices));
  std::vector<std::vector<bool>> seen(graph.num_ops());
  for (std::size_t o = 0; o < seen.size(); ++o)
    seen[o].assign(static_cast<std::size_t>(pieces[o]), false);
  std::int64_t listed = 0;
  for (std::size_t dev = 0; dev < plan.order.size(); ++dev) {
    for (auto const& ref : plan.order[dev]) {
      bool valid = ref.op < graph.num_ops() && ref.piece < seen[ref.op].size();
      if (!valid || seen[ref.op][ref.piece] ||
          plan.ops[ref.op].devices[ref.piece] != static_cast<int>(dev))
        return Error(ErrorCode::invalid_argument,
                     "the order of device " + std::to_string(dev) + " lists op " +
                         std::to_string(ref.op) + " piece " + std::to_string(ref.piece) +
                         ", which is not a piece of that device or is listed twice");
      seen[ref.op][ref.piece] = true;
      ++listed;
    }
  }
  std::int64_t total = 0;
  for (auto n : pieces)
    total += n;
  if (listed != total)
    return Error(ErrorCode::invalid_argument, "the per-device orders list " +
                                                  std::to_string(listed) + " of the plan's " +
                                                  std::to_string(total) + " pieces");
  for (auto const& swap : plan.swaps)
    CLEAVE_CHECK_OK(validate_swap(plan, graph, swap));
  return validate_swap_chains(plan, graph);
}

}  // namespace cleave::plan
