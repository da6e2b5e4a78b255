// Gradient rules: for each forward op type, the backward ops (themselves TDL-defined ops, see
// docs/tdl.md "Gradient and optimizer ops") that turn the gradient of its output into gradients
// of its inputs.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ops/op_builder.h"

namespace cleave::autodiff {

// What a rule sees of one forward op, with ids in the training graph being built.
class GradContext {
 public:
  // `input` and `output` give the forward values, each called at most once and only when a rule
  // reads that value (a batched use stacks only what its rule reads; autodiff/shared_uses.h).
  GradContext(ops::OpBuilder& b, ir::Op const& op, std::function<ir::TensorId(std::size_t)> input,
              std::function<ir::TensorId()> output, ir::TensorId grad_output,
              std::vector<bool> wanted, ir::OpId forward)
      : b_(b), op_(op), make_input_(std::move(input)), inputs_(op.inputs.size()),
        make_output_(std::move(output)), grad_output_(grad_output), wanted_(std::move(wanted)),
        forward_(forward) {}

  ir::Op const& op() const { return op_; }
  ir::Attrs const& attrs() const { return op_.attrs; }
  ir::TensorId input(std::size_t i) const {
    if (!inputs_[i].valid()) inputs_[i] = make_input_(i);
    return inputs_[i];
  }
  std::size_t num_inputs() const { return inputs_.size(); }
  ir::TensorId output() const {
    if (!output_.valid()) output_ = make_output_();
    return output_;
  }
  ir::TensorId grad_output() const { return grad_output_; }  // dY
  // Whether input i needs a gradient (it is a weight or depends on one).
  bool wanted(std::size_t i) const { return wanted_[i]; }
  ir::Shape const& shape(ir::TensorId t) const { return b_.shape_of(t); }
  ops::OpBuilder& builder() { return b_; }

  // A backward op named "<forward op>.grad.<suffix>", recorded as belonging to the forward op.
  ir::TensorId emit(std::string const& type, std::vector<ir::TensorId> inputs, ir::Attrs attrs,
                    std::string const& suffix);

 private:
  ops::OpBuilder& b_;
  ir::Op const& op_;
  std::function<ir::TensorId(std::size_t)> make_input_;
  mutable std::vector<ir::TensorId> inputs_;
  std::function<ir::TensorId()> make_output_;
  mutable ir::TensorId output_;
  ir::TensorId grad_output_;
  std::vector<bool> wanted_;
  ir::OpId forward_;
};

// Fills grads[i] with the gradient of input i for every wanted input (others stay invalid).
using GradientRule = std::function<void(GradContext& ctx, std::vector<ir::TensorId>& grads)>;

class GradientRules {
 public:
  // The rules of every built-in forward op (explicit registration, STYLE.md #7).
  static GradientRules with_builtins();
  void add(std::string type, GradientRule rule);
  GradientRule const* find(std::string_view type) const;

 private:
  std::map<std::string, GradientRule, std::less<>> rules_;
};

// Registration by family (gradient_rules_*.cc).
void add_dense_rules(GradientRules& rules);
void add_pointwise_rules(GradientRules& rules);

}  // namespace cleave::autodiff
