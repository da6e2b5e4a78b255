#include "report/model_summary.h"

#include <algorithm>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "autodiff/precision.h"
#include "ops/split_report.h"
#include "support/checked.h"
#include "support/format_bytes.h"
#include "tdl/piece.h"

namespace cleave::report {

namespace {

std::int64_t bytes_of(ir::Tensor const& t) {
  return ir::num_elements(t.type.shape) * ir::dtype_bytes(t.type.dtype);
}

bool is_optimizer_op(ir::Graph const& g, ir::Op const& op) {
  auto role = g.tensor(op.outputs[0]).role;
  return op.forward.valid() &&
         (role == ir::TensorRole::weight || role == ir::TensorRole::optimizer_state);
}

// total += x, or an error naming the quantity where the sum does not fit in int64 (issue 23:
// every op may fit while the model's total does not).
Status add_to(std::int64_t& total, std::int64_t x, std::string_view quantity) {
  auto sum = checked_add(total, x);
  if (!sum)
    return Error(ErrorCode::invalid_argument,
                 fmt::format("the model's {} overflow 64-bit counts: it is too large to price; "
                             "use smaller dimensions",
                             quantity));
  total = *sum;
  return Status::ok();
}

}  // namespace

Expected<ModelSummary> summarize(std::string model, ir::Graph const& g,
                                 std::optional<std::int64_t> forward_ops,
                                 ops::OpRegistry const& registry, std::size_t largest) {
  ModelSummary s;
  s.model = std::move(model);
  s.forward_ops = forward_ops;
  s.training_ops = static_cast<std::int64_t>(g.num_ops());
  double state_elements = 0;
  for (auto const& t : g.tensors()) {
    bool source = !g.producer(t.id).valid();
    if (source && t.role == ir::TensorRole::weight) {
      CLEAVE_CHECK_OK(add_to(s.parameters, ir::num_elements(t.type.shape), "parameters"));
      CLEAVE_CHECK_OK(add_to(s.parameter_bytes, bytes_of(t), "parameter bytes"));
    }
    if (source && t.role == ir::TensorRole::optimizer_state) {
      CLEAVE_CHECK_OK(add_to(s.optimizer_state_bytes, bytes_of(t), "optimizer state bytes"));
      state_elements += static_cast<double>(ir::num_elements(t.type.shape));
    }
  }
  for (auto const& op : g.ops()) {
    CLEAVE_TRY(auto bound, registry.bind(g, op.id));
    CLEAVE_TRY(tdl::PieceInfo whole, tdl::analyze_piece(*bound, tdl::full_box(*bound)));
    CLEAVE_CHECK_OK(add_to(s.flops_per_step, whole.flops.value(), "FLOPs per step"));
    if (!op.forward.valid()) {
      s.forward_flops += whole.flops.value();  // at most flops_per_step
    } else if (is_optimizer_op(g, op)) {
      ++s.optimizer_ops;
    } else {
      ++s.backward_ops;
    }
  }
  // One gradient per weight, of its size and dtype, lives until the optimizer has read it.
  s.gradient_bytes = s.parameter_bytes;
  for (auto part : {s.parameter_bytes, s.gradient_bytes, s.optimizer_state_bytes})
    CLEAVE_CHECK_OK(add_to(s.training_state_bytes, part, "training state bytes"));
  if (s.parameters > 0) {
    auto params = static_cast<double>(s.parameters);
    s.bytes_per_parameter = static_cast<double>(s.training_state_bytes) / params;
    for (auto p : {autodiff::Precision::fp32, autodiff::Precision::tf32,
                   autodiff::Precision::amp_fp16, autodiff::Precision::amp_bf16})
      s.bytes_per_parameter_by_precision.emplace_back(std::string(autodiff::precision_name(p)),
                                                      4 + 4 + 4 * state_elements / params);
  }
  for (auto t : autodiff::saved_for_backward(g))
    CLEAVE_CHECK_OK(add_to(s.activation_bytes, bytes_of(g.tensor(t)), "activation bytes"));

  std::vector<TensorSummary> all;
  for (auto const& t : g.tensors())
    all.push_back({t.name, t.type, t.role, bytes_of(t)});
  std::size_t n = std::min(largest, all.size());
  std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n), all.end(),
                    [](auto const& a, auto const& b) { return a.bytes > b.bytes; });
  all.resize(n);
  s.largest = std::move(all);
  return s;
}

std::string to_text(ModelSummary const& s) {
  using ops::format_flops;
  std::string out = fmt::format("model                 {}\n", s.model);
  if (s.forward_ops) out += fmt::format("forward ops           {}\n", *s.forward_ops);
  out += fmt::format("training ops          {} ({} backward, {} optimizer)\n", s.training_ops,
                     s.backward_ops, s.optimizer_ops);
  out += fmt::format("parameters            {} ({:.3f} billion)\n", s.parameters,
                     static_cast<double>(s.parameters) / 1e9);
  out += fmt::format("parameter_bytes       {}\n", format_bytes(Bytes(s.parameter_bytes)));
  out += fmt::format("training_state_bytes  {} = weights {} + gradients {} + optimizer state {}\n",
                     format_bytes(Bytes(s.training_state_bytes)),
                     format_bytes(Bytes(s.parameter_bytes)), format_bytes(Bytes(s.gradient_bytes)),
                     format_bytes(Bytes(s.optimizer_state_bytes)));
  if (!s.bytes_per_parameter_by_precision.empty()) {
    std::string by;
    for (auto const& [name, bytes] : s.bytes_per_parameter_by_precision)
      by += fmt::format("{}{} {:g}", by.empty() ? "" : ", ", name, bytes);
    out +=
        fmt::format("bytes_per_parameter   {:g} (this graph: weight, gradient, optimizer state)\n",
                    s.bytes_per_parameter);
    out += fmt::format("  by precision        {} (fp32 master weights, gradients and optimizer "
                       "state, as ZeRO counts; AMP's half weight copies are transient)\n",
                       by);
  }
  out += fmt::format("activation_bytes      {} (forward tensors saved for backward)\n",
                     format_bytes(Bytes(s.activation_bytes)));
  out += fmt::format("flops_per_step        {} (forward {}, backward + optimizer {})\n",
                     format_flops(s.flops_per_step), format_flops(s.forward_flops),
                     format_flops(s.flops_per_step - s.forward_flops));
  out += "largest tensors:\n";
  for (auto const& t : s.largest)
    out += fmt::format("  {:>12}  {:<16} {} {}\n", format_bytes(Bytes(t.bytes)),
                       std::string(ir::role_name(t.role)), ir::type_to_string(t.type), t.name);
  return out;
}

std::string to_json(ModelSummary const& s) {
  nlohmann::json j;
  j["format"] = "cleave.inspect/1";
  j["model"] = s.model;
  j["forward_ops"] = s.forward_ops ? nlohmann::json(*s.forward_ops) : nlohmann::json();
  j["training_ops"] = s.training_ops;
  j["backward_ops"] = s.backward_ops;
  j["optimizer_ops"] = s.optimizer_ops;
  j["parameters"] = s.parameters;
  j["parameter_bytes"] = s.parameter_bytes;
  j["gradient_bytes"] = s.gradient_bytes;
  j["optimizer_state_bytes"] = s.optimizer_state_bytes;
  j["training_state_bytes"] = s.training_state_bytes;
  j["bytes_per_parameter"] = s.bytes_per_parameter;
  auto by = nlohmann::json::object();
  for (auto const& [name, bytes] : s.bytes_per_parameter_by_precision)
    by[name] = bytes;
  j["bytes_per_parameter_by_precision"] = std::move(by);
  j["activation_bytes"] = s.activation_bytes;
  j["flops_per_step"] = s.flops_per_step;
  j["forward_flops"] = s.forward_flops;
  auto largest = nlohmann::json::array();
  for (auto const& t : s.largest)
    largest.push_back({{"name", t.name},
                       {"shape", t.type.shape},
                       {"dtype", ir::dtype_name(t.type.dtype)},
                       {"role", ir::role_name(t.role)},
                       {"bytes", t.bytes}});
  j["largest_tensors"] = std::move(largest);
  return j.dump(2) + "\n";
}

}  // namespace cleave::report
