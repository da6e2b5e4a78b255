#include "ir/graph.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "ir/name_index.h"
#include "support/assert.h"

namespace cleave::ir {
namespace {

constexpr std::uint32_t no_id = std::numeric_limits<std::uint32_t>::max();

// Names end up in JSON files, which must be valid UTF-8 to read back.
bool is_valid_utf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    auto byte = static_cast<unsigned char>(text[i]);
    if (byte < 0x80) {
      ++i;
      continue;
    }
    std::size_t length = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc2 ? 2 : 0;
    if (length == 0 || byte > 0xf4 || i + length > text.size()) return false;
    std::uint32_t code = byte & (0x7f >> length);
    for (std::size_t k = 1; k < length; ++k) {
      auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xc0) != 0x80) return false;
      code = (code << 6) | (next & 0x3f);
    }
    bool overlong = (length == 3 && code < 0x800) || (length == 4 && code < 0x10000);
    bool surrogate = code >= 0xd800 && code <= 0xdfff;
    if (overlong || surrogate || code > 0x10ffff) return false;
    i += length;
  }
  return true;
}

std::string quoted(std::string_view name) {
  std::string out = "'";
  out += name;
  out += '\'';
  return out;
}

bool is_source_role(TensorRole role) {
  return role == TensorRole::input || role == TensorRole::weight ||
         role == TensorRole::optimizer_state;
}

}  // namespace

struct Graph::Impl {
  std::vector<Tensor> tensors;
  std::vector<Op> ops;
  std::vector<OpId> producers;  // per tensor; invalid for sources
  // consumers of tensor t: consumer_ops[consumer_offsets[t] .. consumer_offsets[t + 1]), each op
  // once and in increasing id order.
  std::vector<std::size_t> consumer_offsets;
  std::vector<OpId> consumer_ops;
  std::vector<OpId> topo;
  detail::NameIndex tensor_index;
  detail::NameIndex op_index;

  std::string_view tensor_name(std::uint32_t id) const { return tensors[id].name; }
  std::string_view op_name(std::uint32_t id) const { return ops[id].name; }
  std::span<OpId const> consumers_of(std::uint32_t tensor) const {
    return {consumer_ops.data() + consumer_offsets[tensor],
            consumer_ops.data() + consumer_offsets[tensor + 1]};
  }
  // "op 'mm' (matmul)"
  std::string describe(Op const& op) const {
    return "op " + quoted(op.name) + " (" + op.type + ")";
  }

  Status check_ids() const;
  Status check_tensors();
  Status check_ops();
  Status link_producers();
  void link_consumers();
  Status order_topologically();
  Error describe_cycle(std::vector<std::uint32_t> const& in_degree) const;
  Status check_semantics(ShapeInference const& semantics) const;
};

Status Graph::Impl::check_ids() const {
  // Ids index vectors everywhere downstream, so they must be the positions themselves.
  if (tensors.size() >= no_id || ops.size() >= no_id) {
    return Error(ErrorCode::unsupported, "a graph can hold at most " + std::to_string(no_id - 1) +
                                             " tensors and as many ops");
  }
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].id.value() != i) {
      return Error(ErrorCode::invalid_argument,
                   "tensor #" + std::to_string(i) + " (" + quoted(tensors[i].name) + ") has id " +
                       std::to_string(tensors[i].id.value()) +
                       "; tensor ids must be dense and equal to their positions (0, 1, 2, ...)");
    }
  }
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].id.value() != i) {
      return Error(ErrorCode::invalid_argument,
                   "op #" + std::to_string(i) + " (" + quoted(ops[i].name) + ") has id " +
                       std::to_string(ops[i].id.value()) +
                       "; op ids must be dense and equal to their positions (0, 1, 2, ...)");
    }
  }
  return Status::ok();
}

Status Graph::Impl::check_tensors() {
  tensor_index.reserve(tensors.size());
  auto name_of = [this](std::uint32_t id) { return tensor_name(id); };
  for (Tensor const& t : tensors) {
    if (t.name.empty() || !is_valid_utf8(t.name)) {
      return Error(ErrorCode::invalid_argument,
                   "tensor #" + std::to_string(t.id.value()) +
                       " has an empty name or one that is not valid UTF-8; give every tensor a "
                       "unique name");
    }
    if (auto other = tensor_index.insert(t.name, t.id.value(), name_of)) {
      return Error(ErrorCode::invalid_argument,
                   "two tensors are named " + quoted(t.name) + " (ids " + std::to_string(*other) +
                       " and " + std::to_string(t.id.value()) + "); tensor names must be unique");
    }
    if (!is_valid_shape(t.type.shape)) {
      return Error(ErrorCode::invalid_argument,
                   "tensor " + quoted(t.name) + " has shape [" + shape_to_string(t.type.shape) +
                       "]; every dimension must be >= 1 and its size in bytes must fit in 64 bits");
    }
  }
  return Status::ok();
}

Status Graph::Impl::check_ops() {
  op_index.reserve(ops.size());
  auto name_of = [this](std::uint32_t id) { return op_name(id); };
  for (Op const& op : ops) {
    if (op.name.empty() || !is_valid_utf8(op.name) || !is_valid_utf8(op.type)) {
      return Error(ErrorCode::invalid_argument,
                   "op #" + std::to_string(op.id.value()) +
                       " has an empty name, or a name or type that is not valid UTF-8; give "
                       "every op a unique name");
    }
    if (auto other = op_index.insert(op.name, op.id.value(), name_of)) {
      return Error(ErrorCode::invalid_argument,
                   "two ops are named " + quoted(op.name) + " (ids " + std::to_string(*other) +
                       " and " + std::to_string(op.id.value()) + "); op names must be unique");
    }
    for (auto const* list : {&op.inputs, &op.outputs}) {
      char const* kind = list == &op.inputs ? "input" : "output";
      for (std::size_t k = 0; k < list->size(); ++k) {
        TensorId id = (*list)[k];
        if (id.value() >= tensors.size()) {
          std::string id_text = id.valid() ? std::to_string(id.value()) : "<invalid>";
          return Error(ErrorCode::not_found, describe(op) + ": " + kind + " " + std::to_string(k) +
                                                 " is tensor id " + id_text +
                                                 ", but the graph has only " +
                                                 std::to_string(tensors.size()) + " tensors");
        }
      }
    }
    if (op.forward.valid()) {
      bool exists = op.forward.value() < ops.size();
      if (!exists || op.forward == op.id || ops[op.forward.value()].forward.valid()) {
        return Error(ErrorCode::invalid_argument,
                     describe(op) + ": its forward op (id " + std::to_string(op.forward.value()) +
                         ") must be another op that is itself a forward op (has no forward op)");
      }
    }
    for (auto const& [name, value] : op.attrs.items()) {
      if (name.empty() || !is_valid_utf8(name)) {
        return Error(ErrorCode::invalid_argument,
                     describe(op) + " has an attribute whose name is empty or not valid UTF-8");
      }
      auto const* number = std::get_if<double>(&value);
      if (number != nullptr && !std::isfinite(*number)) {
        return Error(ErrorCode::invalid_argument, describe(op) + ": attribute " + quoted(name) +
                                                      " is " + std::to_string(*number) +
                                                      "; float attributes must be finite");
      }
      auto const* text = std::get_if<std::string>(&value);
      if (text != nullptr && !is_valid_utf8(*text)) {
        return Error(ErrorCode::invalid_argument,
                     describe(op) + ": attribute " + quoted(name) + " is not valid UTF-8");
      }
    }
  }
  return Status::ok();
}

Status Graph::Impl::link_producers() {
  producers.assign(tensors.size(), OpId());
  for (Op const& op : ops) {
    for (TensorId out : op.outputs) {
      OpId& producer = producers[out.value()];
      Tensor const& t = tensors[out.value()];
      if (producer == op.id) {
        return Error(ErrorCode::invalid_argument,
                     describe(op) + " lists tensor " + quoted(t.name) + " twice among its outputs");
      }
      if (producer.valid()) {
        return Error(ErrorCode::invalid_argument,
                     "tensor " + quoted(t.name) + " is produced by two ops, " +
                         describe(ops[producer.value()]) + " and " + describe(op) +
                         "; every tensor must have at most one producer");
      }
      producer = op.id;
    }
  }
  for (Tensor const& t : tensors) {
    OpId producer = producers[t.id.value()];
    if (producer.valid() && t.role == TensorRole::input) {
      return Error(ErrorCode::invalid_argument,
                   "tensor " + quoted(t.name) + " has role input but is produced by " +
                       describe(ops[producer.value()]) +
                       "; inputs come from outside the step: give it another role");
    }
    if (!producer.valid() && !is_source_role(t.role)) {
      return Error(ErrorCode::invalid_argument,
                   "tensor " + quoted(t.name) + " (" + std::string(role_name(t.role)) +
                       ") has no producer; only input, weight and optimizer_state tensors can be "
                       "sources: add the op that computes it or change its role");
    }
  }
  return Status::ok();
}

void Graph::Impl::link_consumers() {
  // Counting sort into CSR form. Filling runs over the ops backwards from each tensor's end, so
  // every list comes out in increasing op id order; `last_reader` drops an op that reads the same
  // tensor twice (add(x, x)).
  std::vector<std::uint32_t> last_reader(tensors.size(), no_id);
  consumer_offsets.assign(tensors.size() + 1, 0);
  for (Op const& op : ops) {
    for (TensorId in : op.inputs) {
      if (last_reader[in.value()] == op.id.value()) continue;
      last_reader[in.value()] = op.id.value();
      ++consumer_offsets[in.value()];
    }
  }
  std::size_t total = 0;
  for (std::size_t t = 0; t < tensors.size(); ++t) {
    total += consumer_offsets[t];
    consumer_offsets[t] = total;  // one past the end of t's list, until filled
  }
  consumer_offsets[tensors.size()] = total;
  consumer_ops.resize(total);
  std::fill(last_reader.begin(), last_reader.end(), no_id);
  for (std::size_t i = ops.size(); i-- > 0;) {
    for (TensorId in : ops[i].inputs) {
      if (last_reader[in.value()] == i) continue;
      last_reader[in.value()] = static_cast<std::uint32_t>(i);
      consumer_ops[--consumer_offsets[in.value()]] = ops[i].id;
    }
  }
}

Status Graph::Impl::order_topologically() {
  // in_degree[op] counts the distinct produced tensors it reads, matching the deduplicated
  // consumer lists that decrement it.
  std::vector<std::uint32_t> in_degree(ops.size(), 0);
  for (std::size_t t = 0; t < tensors.size(); ++t) {
    if (!producers[t].valid()) continue;
    for (OpId c : consumers_of(static_cast<std::uint32_t>(t)))
      ++in_degree[c.value()];
  }
  // A min-heap of ready op ids gives the smallest-id tie break. Ids pushed in increasing order
  // already form a valid heap, so the initial fill needs no make_heap.
  std::vector<std::uint32_t> ready;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (in_degree[i] == 0) ready.push_back(static_cast<std::uint32_t>(i));
  }
  topo.reserve(ops.size());
  while (!ready.empty()) {
    std::pop_heap(ready.begin(), ready.end(), std::greater<>());
    std::uint32_t current = ready.back();
    ready.pop_back();
    topo.push_back(OpId(current));
    for (TensorId out : ops[current].outputs) {
      for (OpId c : consumers_of(out.value())) {
        if (--in_degree[c.value()] != 0) continue;
        ready.push_back(c.value());
        std::push_heap(ready.begin(), ready.end(), std::greater<>());
      }
    }
  }
  if (topo.size() != ops.size()) return describe_cycle(in_degree);
  return Status::ok();
}

Error Graph::Impl::describe_cycle(std::vector<std::uint32_t> const& in_degree) const {
  // Ops left with a positive in-degree each read a tensor whose producer is also left, so walking
  // from one of them to such a producer, again and again, must revisit an op: that closes a cycle.
  std::uint32_t start = 0;
  while (in_degree[start] == 0)
    ++start;
  std::vector<std::uint32_t> step_of(ops.size(), no_id);
  std::vector<std::uint32_t> walk;  // ops, each read by the one before
  std::vector<std::uint32_t> via;   // via[k]: the tensor walk[k + 1] produces for walk[k]
  std::uint32_t current = start;
  while (step_of[current] == no_id) {
    step_of[current] = static_cast<std::uint32_t>(walk.size());
    walk.push_back(current);
    auto const& inputs = ops[current].inputs;
    auto pending = std::find_if(inputs.begin(), inputs.end(), [&](TensorId in) {
      OpId producer = producers[in.value()];
      return producer.valid() && in_degree[producer.value()] > 0;
    });
    CLEAVE_ASSERT(pending != inputs.end(), "an op left by Kahn's algorithm has no pending input");
    via.push_back(pending->value());
    current = producers[pending->value()].value();
  }
  // Forward along the data flow, the cycle is walk[first] -> via[last] -> walk[last] -> ... ->
  // via[first] -> walk[first]; start it at its smallest op id so the message is stable.
  std::size_t first = step_of[current];
  std::vector<std::uint32_t> cycle_ops;
  std::vector<std::uint32_t> cycle_tensors;
  cycle_ops.push_back(walk[first]);
  for (std::size_t k = walk.size(); k-- > first;) {
    cycle_tensors.push_back(via[k]);
    if (k > first) cycle_ops.push_back(walk[k]);
  }
  auto smallest = std::min_element(cycle_ops.begin(), cycle_ops.end()) - cycle_ops.begin();
  std::rotate(cycle_ops.begin(), cycle_ops.begin() + smallest, cycle_ops.end());
  std::rotate(cycle_tensors.begin(), cycle_tensors.begin() + smallest, cycle_tensors.end());

  // Long cycles show their first hops and the one that closes them.
  constexpr std::size_t shown = 6;
  std::size_t length = cycle_ops.size();
  std::string text = "graph has a cycle";
  if (length > shown + 1) text += " of " + std::to_string(length) + " ops";
  text += ": ";
  for (std::size_t k = 0; k < length; ++k) {
    if (length > shown + 1 && k == shown) {
      text += "... -> ";
      k = length - 1;
    }
    text += "op " + quoted(ops[cycle_ops[k]].name) + " -> tensor " +
            quoted(tensors[cycle_tensors[k]].name) + " -> ";
  }
  text += "op " + quoted(ops[cycle_ops[0]].name) +
          "; a training step must be acyclic: check the inputs of these ops";
  return Error(ErrorCode::cycle, std::move(text));
}

Status Graph::Impl::check_semantics(ShapeInference const& semantics) const {
  // In topological order, so the first mismatch reported is the earliest one along the data flow.
  // The scratch types keep their shape buffers from op to op instead of reallocating.
  std::vector<TensorType> input_types;
  for (OpId id : topo) {
    Op const& op = ops[id.value()];
    if (input_types.size() < op.inputs.size()) input_types.resize(op.inputs.size());
    for (std::size_t k = 0; k < op.inputs.size(); ++k) {
      input_types[k] = tensors[op.inputs[k].value()].type;
    }
    auto inferred = semantics.infer(op.type, op.attrs, {input_types.data(), op.inputs.size()});
    if (!inferred) {
      return std::move(inferred.error())
          .with_context("in op " + quoted(op.name) + " (" + op.type + ", id " +
                        std::to_string(id.value()) + ")");
    }
    if (inferred->size() != op.outputs.size()) {
      return Error(ErrorCode::shape_mismatch,
                   describe(op) + ": declares " + std::to_string(op.outputs.size()) +
                       " outputs but its inputs give " + std::to_string(inferred->size()));
    }
    for (std::size_t k = 0; k < op.outputs.size(); ++k) {
      Tensor const& out = tensors[op.outputs[k].value()];
      if (out.type == (*inferred)[k]) continue;
      return Error(ErrorCode::shape_mismatch, describe(op) + ": output " + quoted(out.name) +
                                                  " is declared " + type_to_string(out.type) +
                                                  " but its inputs give " +
                                                  type_to_string((*inferred)[k]));
    }
  }
  return Status::ok();
}

Expected<Graph> Graph::create(std::vector<Tensor> tensors, std::vector<Op> ops,
                              ShapeInference const& semantics) {
  auto impl = std::make_shared<Impl>();
  impl->tensors = std::move(tensors);
  impl->ops = std::move(ops);
  // Structure first (later checks index by id), then acyclicity (semantics needs an order).
  CLEAVE_CHECK_OK(impl->check_ids());
  CLEAVE_CHECK_OK(impl->check_tensors());
  CLEAVE_CHECK_OK(impl->check_ops());
  CLEAVE_CHECK_OK(impl->link_producers());
  impl->link_consumers();
  CLEAVE_CHECK_OK(impl->order_topologically());
  CLEAVE_CHECK_OK(impl->check_semantics(semantics));
  return Graph(std::move(impl));
}

std::size_t Graph::num_tensors() const {
  return impl_->tensors.size();
}
std::size_t Graph::num_ops() const {
  return impl_->ops.size();
}

Tensor const& Graph::tensor(TensorId id) const {
  CLEAVE_ASSERT(id.value() < impl_->tensors.size(), "tensor id out of range");
  return impl_->tensors[id.value()];
}

Op const& Graph::op(OpId id) const {
  CLEAVE_ASSERT(id.value() < impl_->ops.size(), "op id out of range");
  return impl_->ops[id.value()];
}

std::span<Tensor const> Graph::tensors() const {
  return impl_->tensors;
}
std::span<Op const> Graph::ops() const {
  return impl_->ops;
}

OpId Graph::producer(TensorId id) const {
  CLEAVE_ASSERT(id.value() < impl_->tensors.size(), "tensor id out of range");
  return impl_->producers[id.value()];
}

std::span<OpId const> Graph::consumers(TensorId id) const {
  CLEAVE_ASSERT(id.value() < impl_->tensors.size(), "tensor id out of range");
  return impl_->consumers_of(id.value());
}

std::span<OpId const> Graph::topo_order() const {
  return impl_->topo;
}

std::optional<TensorId> Graph::find_tensor(std::string_view name) const {
  auto id =
      impl_->tensor_index.find(name, [this](std::uint32_t i) { return impl_->tensor_name(i); });
  if (!id) return std::nullopt;
  return TensorId(*id);
}

std::optional<OpId> Graph::find_op(std::string_view name) const {
  auto id = impl_->op_index.find(name, [this](std::uint32_t i) { return impl_->op_name(i); });
  if (!id) return std::nullopt;
  return OpId(*id);
}

bool Graph::operator==(Graph const& other) const {
  return impl_ == other.impl_ ||
         (impl_->tensors == other.impl_->tensors && impl_->ops == other.impl_->ops);
}

}  // namespace cleave::ir
