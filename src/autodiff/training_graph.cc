#include "autodiff/training_graph.h"

#include <algorithm>
#include <map>

#include "autodiff/shared_uses.h"

namespace cleave::autodiff {
namespace {

class TrainingGraphBuilder {
 public:
  TrainingGraphBuilder(ir::Graph const& forward, ops::OpRegistry const& registry,
                       TrainingOptions const& options)
      : fwd_(forward), options_(options), b_(registry), rules_(GradientRules::with_builtins()),
        map_(forward.num_tensors()), op_map_(forward.num_ops()),
        contributions_(forward.num_tensors()), totals_(forward.num_tensors()) {}

  Expected<ir::Graph> run() {
    auto loss = fwd_.find_tensor(options_.loss);
    if (!loss)
      return Error(ErrorCode::not_found, "the graph has no tensor '" + options_.loss +
                                             "' to minimise; name the scalar loss tensor");
    ir::Tensor const& l = fwd_.tensor(*loss);
    if (!l.type.shape.empty() || !ir::is_floating(l.type.dtype) || !fwd_.producer(*loss).valid())
      return Error(ErrorCode::invalid_argument,
                   "the loss '" + l.name +
                       "' must be a floating-point scalar computed by an op, "
                       "but it is " +
                       ir::type_to_string(l.type) +
                       (fwd_.producer(*loss).valid() ? "" : " and has no producer"));
    copy_forward();
    mark(*loss);
    group_shared_uses();
    seed(*loss);
    backward();
    update_weights();
    return b_.finish();
  }

 private:
  void copy_forward() {
    for (auto const& t : fwd_.tensors())
      if (!fwd_.producer(t.id).valid()) map_[t.id.value()] = b_.source(t.name, t.type, t.role);
    for (ir::OpId id : fwd_.topo_order()) {
      ir::Op const& op = fwd_.op(id);
      ir::OpSpec spec;
      spec.type = op.type;
      spec.attrs = op.attrs;
      spec.name = op.name;
      for (auto in : op.inputs)
        spec.inputs.push_back(map_[in.value()]);
      for (auto out : op.outputs) {
        spec.output_names.push_back(fwd_.tensor(out).name);
        spec.output_roles.push_back(fwd_.tensor(out).role);
      }
      map_[op.outputs[0].value()] = b_.add(std::move(spec));
      op_map_[id.value()] = b_.last_op();
    }
  }

  // requires_: depends on a weight; reaches_: the loss depends on it.
  void mark(ir::TensorId loss) {
    requires_.assign(fwd_.num_tensors(), false);
    reaches_.assign(fwd_.num_tensors(), false);
    for (auto const& t : fwd_.tensors())
      requires_[t.id.value()] = t.role == ir::TensorRole::weight && !fwd_.producer(t.id).valid() &&
                                ir::is_floating(t.type.dtype);
    for (ir::OpId id : fwd_.topo_order()) {
      ir::Op const& op = fwd_.op(id);
      bool any = std::any_of(op.inputs.begin(), op.inputs.end(),
                             [&](ir::TensorId in) { return requires_[in.value()]; });
      for (auto out : op.outputs)
        requires_[out.value()] = any;
    }
    reaches_[loss.value()] = true;
    auto order = fwd_.topo_order();
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      ir::Op const& op = fwd_.op(*it);
      if (!reaches_[op.outputs[0].value()]) continue;
      for (auto in : op.inputs)
        reaches_[in.value()] = true;
    }
  }

  void seed(ir::TensorId loss) {
    std::string dtype(ir::dtype_name(fwd_.tensor(loss).type.dtype));
    auto one = b_.op(
        "fill", {},
        {{"shape", std::vector<std::int64_t>{}}, {"value", options_.loss_scale}, {"dtype", dtype}},
        fwd_.tensor(loss).name + ".grad_seed", ir::TensorRole::gradient,
        op_map_[fwd_.producer(loss).value()]);
    contributions_[loss.value()].push_back(one);
  }

  // The forward op a gradient of `t` is grouped with: its producer, or for a source its first
  // consumer.
  ir::OpId owner(ir::TensorId t) const {
    ir::OpId p = fwd_.producer(t);
    if (!p.valid()) p = fwd_.consumers(t)[0];
    return op_map_[p.value()];
  }

  // The gradient of forward tensor t: its one contribution, or their sum ("<t>.grad").
  ir::TensorId total(ir::TensorId t) {
    auto& cached = totals_[t.value()];
    if (cached.valid()) return cached;
    auto const& parts = contributions_[t.value()];
    ir::TensorId sum = parts[0];
    std::string name = fwd_.tensor(t).name + ".grad";
    for (std::size_t k = 1; k < parts.size(); ++k) {
      bool last = k + 1 == parts.size();
      sum = b_.op("add", {sum, parts[k]}, {}, last ? name : name + ".partial" + std::to_string(k),
                  ir::TensorRole::gradient, owner(t));
    }
    cached = sum;
    return sum;
  }

  // Weights read by several ops: the uses that autodiff differentiates as one batched use, so
  // that their gradient is one op (shared_uses.h; docs/autodiff.md).
  void group_shared_uses() {
    std::vector<bool> shared(fwd_.num_tensors(), false);
    for (auto const& t : fwd_.tensors()) {
      if (!requires_[t.id.value()] || !reaches_[t.id.value()] || fwd_.producer(t.id).valid())
        continue;
      auto const& uses = fwd_.consumers(t.id);
      std::vector<ir::OpId> readers(uses.begin(), uses.end());
      std::sort(readers.begin(), readers.end());
      shared[t.id.value()] = std::unique(readers.begin(), readers.end()) - readers.begin() >= 2;
    }
    uses_ = shared_uses(fwd_, b_.registry(), shared);
    use_of_.assign(fwd_.num_ops(), -1);
    for (std::size_t u = 0; u < uses_.size(); ++u)
      for (ir::OpId id : uses_[u].ops)
        use_of_[id.value()] = static_cast<int>(u);
    visited_.resize(uses_.size());
  }

  bool deferred(ir::OpId id, std::size_t input) const {
    int u = use_of_[id.value()];
    if (u < 0) return false;
    auto const& positions = uses_[static_cast<std::size_t>(u)].positions;
    return std::find(positions.begin(), positions.end(), input) != positions.end();
  }

  GradientRule const* rule_for(ir::Op const& op) {
    GradientRule const* rule = rules_.find(op.type);
    if (!rule)
      b_.fail(Error(ErrorCode::unsupported,
                    "no gradient rule for op type '" + op.type + "' (op '" + op.name +
                        "'); a custom op on the path from the weights to the loss needs one, or "
                        "its inputs must not depend on weights"));
    return rule;
  }

  void differentiate(GradientRule const& rule, GradContext& ctx, ir::Op const& op) {
    std::vector<ir::TensorId> grads(op.inputs.size());
    rule(ctx, grads);
    for (std::size_t i = 0; i < grads.size(); ++i)
      if (ctx.wanted(i) && grads[i].valid())
        contributions_[op.inputs[i].value()].push_back(grads[i]);
  }

  void backward() {
    auto order = fwd_.topo_order();
    for (auto it = order.rbegin(); it != order.rend() && b_.ok(); ++it) {
      visit(*it);
      int u = use_of_[it->value()];
      if (u >= 0 && uses_[static_cast<std::size_t>(u)].ops.front() == *it)
        differentiate_use(static_cast<std::size_t>(u));
    }
  }

  // The gradients of op's inputs, but for the shared weights of a batched use (differentiate_use).
  void visit(ir::OpId id) {
    ir::Op const& op = fwd_.op(id);
    ir::TensorId out = op.outputs[0];
    if (!requires_[out.value()] || contributions_[out.value()].empty()) return;
    std::vector<bool> wanted;
    std::vector<ir::TensorId> inputs;
    for (std::size_t i = 0; i < op.inputs.size(); ++i) {
      ir::TensorId in = op.inputs[i];
      wanted.push_back(requires_[in.value()] && reaches_[in.value()] && !deferred(id, i));
      inputs.push_back(map_[in.value()]);
    }
    if (int u = use_of_[id.value()]; u >= 0)
      visited_[static_cast<std::size_t>(u)].push_back({id, inputs, map_[out.value()], total(out)});
    if (std::none_of(wanted.begin(), wanted.end(), [](bool w) { return w; })) return;
    GradientRule const* rule = rule_for(op);
    if (!rule) return;
    ir::TensorId y = map_[out.value()];
    GradContext ctx(
        b_, op, [&inputs](std::size_t i) { return inputs[i]; }, [y] { return y; }, total(out),
        wanted, op_map_[id.value()]);
    differentiate(*rule, ctx, op);
  }

  // The shared weights' gradient through the uses of group u that reached the loss: through the
  // op applied to the stacks of their other inputs, outputs and output gradients, or through the
  // one use. The stacks are in topological order; the ops are named after the first use.
  void differentiate_use(std::size_t u) {
    auto const& members = visited_[u];
    if (members.empty()) return;
    ir::Op const& op = fwd_.op(members.back().op);  // visited last: the first in topological order
    GradientRule const* rule = rule_for(op);
    if (!rule) return;
    ir::OpId group = op_map_[op.id.value()];
    std::vector<bool> wanted(op.inputs.size(), false);
    for (std::size_t p : uses_[u].positions)
      wanted[p] = true;
    if (members.size() == 1) {
      Visited const& m = members[0];
      GradContext ctx(
          b_, op, [&m](std::size_t i) { return m.inputs[i]; }, [&m] { return m.output; }, m.grad,
          wanted, group);
      differentiate(*rule, ctx, op);
      return;
    }
    // One stack per list of tensors: an LSTM's weights and bias share their uses' output
    // gradients, which would otherwise be copied once per weight.
    auto stack = [&, group](auto field, std::string const& label, ir::TensorRole role) {
      std::vector<ir::TensorId> parts;
      for (auto m = members.rbegin(); m != members.rend(); ++m)
        parts.push_back(field(*m));
      auto [it, fresh] = stacks_.try_emplace(parts);
      if (!fresh) return it->second;
      std::string name = op.name + ".grad.stack_" + label;
      std::vector<ir::TensorId> rows;
      for (ir::TensorId part : parts) {
        ir::Shape shape = b_.shape_of(part);
        shape.insert(shape.begin(), 1);
        rows.push_back(b_.op("reshape", {part}, {{"shape", shape}},
                             name + "." + std::to_string(rows.size()), role, group));
      }
      it->second = b_.op("concat", rows, {{"axis", std::int64_t{0}}}, name, role, group);
      return it->second;
    };
    auto input = [&](std::size_t i) {
      if (wanted[i]) return map_[op.inputs[i].value()];
      return stack([i](Visited const& m) { return m.inputs[i]; }, "in" + std::to_string(i),
                   ir::TensorRole::activation);
    };
    auto grad = stack([](Visited const& m) { return m.grad; }, "dY", ir::TensorRole::gradient);
    auto output = [&] {
      return stack([](Visited const& m) { return m.output; }, "Y", ir::TensorRole::activation);
    };
    GradContext ctx(b_, op, input, output, grad, wanted, group);
    differentiate(*rule, ctx, op);
  }

  void update_weights() {
    for (auto const& t : fwd_.tensors()) {
      if (!b_.ok()) return;
      if (!requires_[t.id.value()] || fwd_.producer(t.id).valid() ||
          contributions_[t.id.value()].empty())
        continue;
      ir::TensorId w = map_[t.id.value()];
      ir::TensorId grad = total(t.id);
      ir::OpId group = owner(t.id);
      if (options_.loss_scale != 1.0)
        grad = b_.op("scale", {grad}, {{"alpha", 1.0 / options_.loss_scale}},
                     t.name + ".grad_unscaled", ir::TensorRole::gradient, group);
      auto state = [&](std::string const& suffix) {
        return b_.source(t.name + suffix, t.type, ir::TensorRole::optimizer_state);
      };
      auto update_state = [&](std::string const& type, ir::TensorId s, ir::Attrs a,
                              std::string const& suffix) {
        return b_.op(type, {s, grad}, std::move(a), t.name + suffix + ".updated",
                     ir::TensorRole::optimizer_state, group);
      };
      std::string const updated = t.name + ".updated";
      if (options_.optimizer == Optimizer::sgd) {
        auto v = update_state("sgd_momentum", state(".momentum"), {{"momentum", options_.momentum}},
                              ".momentum");
        b_.op("sgd_update", {w, v}, {{"lr", options_.learning_rate}}, updated,
              ir::TensorRole::weight, group);
      } else {
        auto m =
            update_state("adam_moment1", state(".adam_m"), {{"beta1", options_.beta1}}, ".adam_m");
        auto v =
            update_state("adam_moment2", state(".adam_v"), {{"beta2", options_.beta2}}, ".adam_v");
        b_.op("adam_update", {w, m, v},
              {{"lr", options_.learning_rate},
               {"beta1", options_.beta1},
               {"beta2", options_.beta2},
               {"eps", options_.epsilon},
               {"step", options_.step}},
              updated, ir::TensorRole::weight, group);
      }
    }
  }

  ir::Graph const& fwd_;
  TrainingOptions const& options_;
  ops::OpBuilder b_;
  GradientRules rules_;
  std::vector<ir::TensorId> map_;  // forward tensor -> training tensor
  std::vector<ir::OpId> op_map_;   // forward op -> training op
  std::vector<bool> requires_, reaches_;
  std::vector<std::vector<ir::TensorId>> contributions_;  // gradient parts per forward tensor
  std::vector<ir::TensorId> totals_;
  // A use of a batched group that reached the loss, with its training-graph tensors.
  struct Visited {
    ir::OpId op;  // forward
    std::vector<ir::TensorId> inputs;
    ir::TensorId output, grad;
  };
  std::vector<SharedUse> uses_;
  std::vector<int> use_of_;                    // per forward op: its group in uses_, or -1
  std::vector<std::vector<Visited>> visited_;  // per group, in reverse topological order
  std::map<std::vector<ir::TensorId>, ir::TensorId> stacks_;  // stacked tensors by their parts
};

}  // namespace

Expected<ir::Graph> build_training_graph(ir::Graph const& forward, ops::OpRegistry const& registry,
                                         TrainingOptions const& options) {
  for (auto const& op : forward.ops())
    if (op.forward.valid())
      return Error(ErrorCode::invalid_argument,
                   "op '" + op.name +
                       "' is already a backward or optimizer op: the graph is a "
                       "training graph; give the forward graph");
  return TrainingGraphBuilder(forward, registry, options).run();
}

std::vector<ir::TensorId> saved_for_backward(ir::Graph const& training) {
  std::vector<bool> saved(training.num_tensors(), false);
  for (auto const& op : training.ops()) {
    if (!op.forward.valid()) continue;
    for (auto in : op.inputs) {
      ir::Tensor const& t = training.tensor(in);
      ir::OpId p = training.producer(in);
      bool forward_value =
          p.valid() ? !training.op(p).forward.valid() : t.role == ir::TensorRole::input;
      if (forward_value) saved[in.value()] = true;
    }
  }
  std::vector<ir::TensorId> out;
  for (std::size_t i = 0; i < saved.size(); ++i)
    if (saved[i]) out.emplace_back(static_cast<ir::TensorId::value_type>(i));
  return out;
}

}  // namespace cleave::autodiff
