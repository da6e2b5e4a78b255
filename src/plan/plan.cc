#include "plan/plan.h"

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

namespace {

Error plan_error(ir::Op const& op, std::string const& message) {
  return Error(ErrorCode::invalid_argument,
               "plan for op '" + op.name + "' (" + op.type + "): " + message);
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
  if (plan.order.empty()) return Status::ok();
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
  return Status::ok();
}

}  // namespace cleave::plan
