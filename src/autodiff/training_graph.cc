#include "autodiff/training_graph.h"

#include <algorithm>

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
    auto one = b_.op("fill", {},
                     {{"shape", std::vector<std::int64_t>{}}, {"value", 1.0}, {"dtype", dtype}},
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

  void backward() {
    auto order = fwd_.topo_order();
    for (auto it = order.rbegin(); it != order.rend() && b_.ok(); ++it) {
      ir::Op const& op = fwd_.op(*it);
      ir::TensorId out = op.outputs[0];
      if (!requires_[out.value()] || contributions_[out.value()].empty()) continue;
      std::vector<bool> wanted;
      std::vector<ir::TensorId> inputs;
      for (auto in : op.inputs) {
        wanted.push_back(requires_[in.value()] && reaches_[in.value()]);
        inputs.push_back(map_[in.value()]);
      }
      if (std::none_of(wanted.begin(), wanted.end(), [](bool w) { return w; })) continue;
      GradientRule const* rule = rules_.find(op.type);
      if (!rule) {
        b_.fail(Error(ErrorCode::unsupported,
                      "no gradient rule for op type '" + op.type + "' (op '" + op.name +
                          "'); a custom op on the path from the weights to the loss needs one, or "
                          "its inputs must not depend on weights"));
        return;
      }
      GradContext ctx(b_, op, inputs, map_[out.value()], total(out), wanted, op_map_[it->value()]);
      std::vector<ir::TensorId> grads(op.inputs.size());
      (*rule)(ctx, grads);
      for (std::size_t i = 0; i < grads.size(); ++i)
        if (wanted[i] && grads[i].valid()) contributions_[op.inputs[i].value()].push_back(grads[i]);
    }
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
