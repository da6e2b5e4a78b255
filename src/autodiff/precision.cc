#include "autodiff/precision.h"

#include <algorithm>
#include <array>
#include <map>
#include <utility>

#include "ops/op_builder.h"

namespace cleave::autodiff {

namespace {

constexpr std::array<std::pair<Precision, std::string_view>, 4> names = {
    {{Precision::fp32, "fp32"},
     {Precision::tf32, "tf32"},
     {Precision::amp_fp16, "amp-fp16"},
     {Precision::amp_bf16, "amp-bf16"}}};

// autocast's lists (torch/csrc/autograd/autocast_mode.cpp): ops that run in half precision, and
// the loss, which runs in fp32 whatever it reads. Every other op runs in the dtype of the
// activations it reads (fp32 when they differ, PyTorch's type promotion). Norms and softmax are
// among those: they read and write half precision and compute in fp32 inside the kernel, as
// cuDNN's batch norm, apex's and Megatron's fused layer norm and softmax, llm-foundry's
// low-precision layer norm and flash attention do (autocast alone would cast their input to fp32
// and their output back: docs/precision.md). The embedding is a half op too, so the residual
// stream of a transformer stays in half precision, as with apex's O2, Megatron and FSDP's
// mixed-precision parameters (autocast alone would keep it fp32: its embedding reads fp32
// weights, and half + fp32 promotes).
bool runs_in_half(std::string_view type) {
  return type == "matmul" || type == "batch_matmul" || type == "linear" || type == "einsum" ||
         type == "conv2d" || type == "conv3d" || type == "embedding";
}
bool runs_in_fp32(std::string_view type) {
  return type == "cross_entropy";
}

class AmpPass {
 public:
  AmpPass(ir::Graph const& fwd, ops::OpRegistry const& registry, ir::DType half)
      : fwd_(fwd), b_(registry), half_(half), map_(fwd.num_tensors()) {}

  Expected<ir::Graph> run() {
    for (auto const& t : fwd_.tensors()) {
      if (fwd_.producer(t.id).valid()) continue;
      if (ir::is_floating(t.type.dtype) && t.type.dtype != ir::DType::fp32)
        return Error(
            ErrorCode::invalid_argument,
            "mixed precision (AMP) keeps fp32 master weights and reads fp32 inputs, but '" +
                t.name + "' is " + ir::type_to_string(t.type) +
                ": build the model in fp32 (dtype=fp32) and choose precision=amp-*");
      map_[t.id.value()] = b_.source(t.name, t.type, t.role);
    }
    for (ir::OpId id : fwd_.topo_order())
      copy(fwd_.op(id));
    return b_.finish();
  }

 private:
  ir::DType dtype_of(ir::TensorId t) const { return b_.type_of(t).dtype; }

  // `t` (the new graph's copy of forward tensor `name`) in dtype `d`: itself, or its one cast.
  ir::TensorId as(ir::TensorId t, std::string const& name, ir::DType d) {
    if (!ir::is_floating(dtype_of(t)) || dtype_of(t) == d) return t;
    auto [it, fresh] = casts_.try_emplace({t.value(), d});
    if (fresh) {
      ir::OpSpec spec;
      spec.type = "cast";
      spec.inputs = {t};
      spec.attrs = ir::Attrs{{"dtype", std::string(ir::dtype_name(d))}};
      spec.name = name + "." + std::string(ir::dtype_name(d));
      spec.output_names = {spec.name};
      it->second = b_.add(std::move(spec));
    }
    return it->second;
  }

  // The dtype an op computes in: half for autocast's half ops, fp32 for the loss, else the
  // activations' dtype (weights follow them, as a module's parameters are cast with it).
  ir::DType target(ir::Op const& op, std::vector<ir::TensorId> const& inputs) const {
    if (runs_in_half(op.type)) return half_;
    if (runs_in_fp32(op.type)) return ir::DType::fp32;
    std::optional<ir::DType> seen;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      auto const& t = fwd_.tensor(op.inputs[i]);
      // Weights and graph inputs (masks, position tables) follow the activations.
      bool weight = !fwd_.producer(t.id).valid();
      ir::DType d = dtype_of(inputs[i]);
      if (weight || !ir::is_floating(d)) continue;
      seen = seen && *seen != d ? ir::DType::fp32 : d;
    }
    return seen.value_or(ir::DType::fp32);
  }

  void copy(ir::Op const& op) {
    std::vector<ir::TensorId> inputs;
    for (auto in : op.inputs)
      inputs.push_back(map_[in.value()]);
    if (op.type != "cast" && op.type != "fill") {
      ir::DType d = target(op, inputs);
      for (std::size_t i = 0; i < inputs.size(); ++i)
        inputs[i] = as(inputs[i], fwd_.tensor(op.inputs[i]).name, d);
    }
    ir::OpSpec spec;
    spec.type = op.type;
    spec.attrs = op.attrs;
    spec.name = op.name;
    spec.inputs = std::move(inputs);
    for (auto out : op.outputs) {
      spec.output_names.push_back(fwd_.tensor(out).name);
      spec.output_roles.push_back(fwd_.tensor(out).role);
    }
    map_[op.outputs[0].value()] = b_.add(std::move(spec));
  }

  ir::Graph const& fwd_;
  ops::OpBuilder b_;
  ir::DType half_;
  std::vector<ir::TensorId> map_;  // forward tensor -> new tensor
  std::map<std::pair<std::uint32_t, ir::DType>, ir::TensorId> casts_;
};

}  // namespace

std::string_view precision_name(Precision precision) {
  for (auto const& [p, name] : names)
    if (p == precision) return name;
  return "fp32";
}

Expected<Precision> parse_precision(std::string_view name) {
  for (auto const& [p, n] : names)
    if (n == name) return p;
  return Error(ErrorCode::invalid_argument,
               "precision '" + std::string(name) + "': use fp32, tf32, amp-fp16 or amp-bf16");
}

std::optional<ir::DType> amp_dtype(Precision precision) {
  if (precision == Precision::amp_fp16) return ir::DType::fp16;
  if (precision == Precision::amp_bf16) return ir::DType::bf16;
  return std::nullopt;
}

double loss_scale(Precision precision) {
  return precision == Precision::amp_fp16 ? 65536.0 : 1.0;
}

Expected<ir::Graph> apply_precision(ir::Graph const& forward, ops::OpRegistry const& registry,
                                    Precision precision) {
  auto half = amp_dtype(precision);
  if (!half) return forward;
  return AmpPass(forward, registry, *half).run();
}

}  // namespace cleave::autodiff
