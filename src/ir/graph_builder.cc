#include "ir/graph_builder.h"

#include <algorithm>

#include "support/assert.h"

namespace cleave::ir {
namespace {

std::string quoted(std::string_view name) {
  std::string out = "'";
  out += name;
  out += '\'';
  return out;
}

// The name lookup NameIndex needs for ids into `items`.
template <typename Item> auto names_in(std::vector<Item> const& items) {
  return [&items](std::uint32_t id) { return std::string_view(items[id].name); };
}

template <typename Item>
bool taken(detail::NameIndex const& index, std::vector<Item> const& items, std::string_view name) {
  return index.find(name, names_in(items)).has_value();
}

// The names the outputs of `op_name` get: given ones, or "<op>" / "<op>:<i>".
Expected<std::vector<std::string>>
output_names_for(std::string const& op_name, std::vector<std::string> given, std::size_t count) {
  if (!given.empty()) {
    if (given.size() != count) {
      return Error(ErrorCode::invalid_argument, std::to_string(given.size()) +
                                                    " output names given but the op has " +
                                                    std::to_string(count) + " outputs");
    }
    return given;
  }
  std::vector<std::string> names;
  if (count == 1) {
    names.push_back(op_name);
    return names;
  }
  for (std::size_t i = 0; i < count; ++i)
    names.push_back(op_name + ":" + std::to_string(i));
  return names;
}

}  // namespace

Expected<TensorId> GraphBuilder::add_source(std::string name, TensorType type, TensorRole role) {
  if (role != TensorRole::input && role != TensorRole::weight &&
      role != TensorRole::optimizer_state) {
    return Error(ErrorCode::invalid_argument,
                 "source tensor " + quoted(name) + " has role " + std::string(role_name(role)) +
                     "; a source must be an input, weight or optimizer_state (" +
                     std::string(role_name(role)) + " tensors are computed by ops)");
  }
  if (name.empty()) {
    return Error(ErrorCode::invalid_argument, "a source tensor needs a non-empty name");
  }
  if (taken(tensor_names_, tensors_, name)) {
    return Error(ErrorCode::invalid_argument,
                 "a tensor named " + quoted(name) + " already exists; tensor names must be unique");
  }
  if (!is_valid_shape(type.shape)) {
    return Error(ErrorCode::invalid_argument,
                 "source tensor " + quoted(name) + " has shape [" + shape_to_string(type.shape) +
                     "]; every dimension must be >= 1 and its size in bytes must fit in 64 bits");
  }
  TensorId id(static_cast<TensorId::value_type>(tensors_.size()));
  tensors_.push_back(Tensor{id, std::move(name), std::move(type), role});
  tensor_names_.insert(tensors_.back().name, id.value(), names_in(tensors_));
  return id;
}

Expected<std::vector<TensorId>> GraphBuilder::add_op(OpSpec spec) {
  return add_op(std::move(spec), /*single_output=*/false);
}

Expected<TensorId> GraphBuilder::add_op1(OpSpec spec) {
  CLEAVE_TRY(std::vector<TensorId> outputs, add_op(std::move(spec), /*single_output=*/true));
  return outputs[0];
}

Expected<std::vector<TensorId>> GraphBuilder::add_op(OpSpec spec, bool single_output) {
  if (spec.type.empty()) {
    return Error(ErrorCode::invalid_argument, "an op needs a type, e.g. \"matmul\"");
  }
  OpId id(static_cast<OpId::value_type>(ops_.size()));
  std::string name = std::move(spec.name);
  if (name.empty()) {
    // "<type>_<id>", moving past names the caller already took explicitly.
    for (std::size_t n = id.value(); name.empty() || taken(op_names_, ops_, name); ++n) {
      name = spec.type + "_" + std::to_string(n);
    }
  }
  // Built only on failure: most ops succeed, and a million context strings add up.
  auto in_op = [&](Error error) {
    return std::move(error.with_context("in op " + quoted(name) + " (" + spec.type + ", id " +
                                        std::to_string(id.value()) + ")"));
  };
  auto fail = [&](ErrorCode code, std::string message) {
    return in_op(Error(code, std::move(message)));
  };

  if (taken(op_names_, ops_, name)) {
    return fail(ErrorCode::invalid_argument,
                "an op named " + quoted(name) + " already exists; op names must be unique");
  }
  std::vector<TensorType> input_types;
  input_types.reserve(spec.inputs.size());
  for (std::size_t k = 0; k < spec.inputs.size(); ++k) {
    TensorId in = spec.inputs[k];
    if (in.value() >= tensors_.size()) {
      std::string id_text = in.valid() ? std::to_string(in.value()) : "<invalid>";
      return fail(ErrorCode::not_found, "input " + std::to_string(k) + " is tensor id " + id_text +
                                            ", but the builder has only " +
                                            std::to_string(tensors_.size()) + " tensors");
    }
    input_types.push_back(tensors_[in.value()].type);
  }
  if (spec.forward.valid() && spec.forward.value() >= ops_.size()) {
    return fail(ErrorCode::not_found, "its forward op id " + std::to_string(spec.forward.value()) +
                                          " is not an op added before it");
  }
  auto inferred = semantics_->infer(spec.type, spec.attrs, input_types);
  if (!inferred) return in_op(std::move(inferred.error()));
  std::size_t count = inferred->size();
  if (single_output && count != 1) {
    return fail(ErrorCode::invalid_argument,
                "the op has " + std::to_string(count) +
                    " outputs, but add_op1 is for ops with exactly one: use add_op");
  }

  auto names = output_names_for(name, std::move(spec.output_names), count);
  if (!names) return in_op(std::move(names.error()));
  if (!spec.output_roles.empty() && spec.output_roles.size() != count) {
    return fail(ErrorCode::invalid_argument, std::to_string(spec.output_roles.size()) +
                                                 " output roles given but the op has " +
                                                 std::to_string(count) + " outputs");
  }
  for (std::size_t k = 0; k < count; ++k) {
    std::string const& out_name = (*names)[k];
    bool repeated = std::find(names->begin(), names->begin() + k, out_name) != names->begin() + k;
    if (out_name.empty() || repeated || taken(tensor_names_, tensors_, out_name)) {
      return fail(ErrorCode::invalid_argument, "output " + std::to_string(k) + " cannot be named " +
                                                   quoted(out_name) +
                                                   ": tensor names must be non-empty and unique");
    }
    if (!spec.output_roles.empty() && spec.output_roles[k] == TensorRole::input) {
      return fail(ErrorCode::invalid_argument,
                  "output " + quoted(out_name) +
                      " has role input, but inputs come from outside the step; use activation");
    }
  }

  // Every check passed: only now does the builder change.
  std::vector<TensorId> outputs;
  outputs.reserve(count);
  for (std::size_t k = 0; k < count; ++k) {
    TensorId out(static_cast<TensorId::value_type>(tensors_.size()));
    TensorRole role = spec.output_roles.empty() ? TensorRole::activation : spec.output_roles[k];
    tensors_.push_back(Tensor{out, std::move((*names)[k]), std::move((*inferred)[k]), role});
    tensor_names_.insert(tensors_.back().name, out.value(), names_in(tensors_));
    outputs.push_back(out);
  }
  ops_.push_back(Op{id, std::move(name), std::move(spec.type), std::move(spec.attrs),
                    std::move(spec.inputs), outputs, spec.forward});
  op_names_.insert(ops_.back().name, id.value(), names_in(ops_));
  return outputs;
}

TensorType const& GraphBuilder::type_of(TensorId id) const {
  CLEAVE_ASSERT(id.value() < tensors_.size(), "type_of: tensor id out of range");
  return tensors_[id.value()].type;
}

Expected<Graph> GraphBuilder::finish() {
  auto graph = Graph::create(std::move(tensors_), std::move(ops_), *semantics_);
  tensors_.clear();
  ops_.clear();
  tensor_names_ = {};
  op_names_ = {};
  return graph;
}

}  // namespace cleave::ir
