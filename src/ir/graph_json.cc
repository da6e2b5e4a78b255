#include "ir/graph_json.h"

#include <array>
#include <limits>
#include <nlohmann/json.hpp>

#include "ir/text_format.h"
#include "support/assert.h"
#include "support/file_io.h"
#include "support/hash.h"
#include "support/json_read.h"

namespace cleave::ir {
namespace {

// ---- Writing: a hand-rolled streaming writer, because a DOM of a million-op graph would take
// several times the memory of the graph itself.

void append_tensor(std::string& out, Tensor const& t) {
  out += "{\"id\":";
  detail::append_int(out, t.id.value());
  out += ",\"name\":";
  detail::append_quoted(out, t.name);
  out += ",\"shape\":[";
  for (std::size_t k = 0; k < t.type.shape.size(); ++k) {
    if (k > 0) out += ',';
    detail::append_int(out, t.type.shape[k]);
  }
  out += "],\"dtype\":\"";
  out += dtype_name(t.type.dtype);
  out += "\",\"role\":\"";
  out += role_name(t.role);
  out += "\"}";
}

void append_ids(std::string& out, std::vector<TensorId> const& ids) {
  out += '[';
  for (std::size_t k = 0; k < ids.size(); ++k) {
    if (k > 0) out += ',';
    detail::append_int(out, ids[k].value());
  }
  out += ']';
}

void append_op(std::string& out, Op const& op) {
  out += "{\"id\":";
  detail::append_int(out, op.id.value());
  out += ",\"name\":";
  detail::append_quoted(out, op.name);
  out += ",\"type\":";
  detail::append_quoted(out, op.type);
  out += ",\"inputs\":";
  append_ids(out, op.inputs);
  out += ",\"outputs\":";
  append_ids(out, op.outputs);
  if (op.forward.valid()) {
    out += ",\"forward\":";
    detail::append_int(out, op.forward.value());
  }
  out += ",\"attrs\":{";
  bool first = true;
  for (auto const& [name, value] : op.attrs.items()) {
    if (!first) out += ',';
    first = false;
    detail::append_quoted(out, name);
    out += ':';
    detail::append_attr_value(out, value);
  }
  out += "}}";
}

// A generous guess of the output size, so the string grows once instead of doubling (a doubling
// copy of a gigabyte-sized text briefly needs three times its size).
std::size_t estimate_size(Graph const& graph) {
  std::size_t size = 64;
  for (Tensor const& t : graph.tensors())
    size += 72 + t.name.size() + 21 * t.type.shape.size();
  for (Op const& op : graph.ops()) {
    size += 80 + op.name.size() + op.type.size() + 11 * (op.inputs.size() + op.outputs.size());
    for (auto const& [name, value] : op.attrs.items()) {
      size += 32 + name.size();
      if (auto const* s = std::get_if<std::string>(&value)) size += s->size();
      if (auto const* l = std::get_if<std::vector<std::int64_t>>(&value)) size += 21 * l->size();
    }
  }
  return size;
}

// ---- Reading: a SAX handler that fills the tensor and op vectors directly, so memory stays
// proportional to the graph rather than to a DOM of it.

enum class Key : std::uint8_t {
  format,
  tensors,
  ops,
  id,
  name,
  shape,
  dtype,
  role,
  type,
  inputs,
  outputs,
  attrs,
  forward
};
constexpr std::array<std::string_view, 13> key_names = {
    "format", "tensors", "ops",    "id",      "name",  "shape",  "dtype",
    "role",   "type",    "inputs", "outputs", "attrs", "forward"};
constexpr std::uint32_t bit(Key key) {
  return 1u << static_cast<unsigned>(key);
}
constexpr std::uint32_t root_keys = bit(Key::format) | bit(Key::tensors) | bit(Key::ops);
constexpr std::uint32_t tensor_keys =
    bit(Key::id) | bit(Key::name) | bit(Key::shape) | bit(Key::dtype) | bit(Key::role);
// Required op keys; "forward" is optional (written only for backward and optimizer ops).
constexpr std::uint32_t op_keys = bit(Key::id) | bit(Key::name) | bit(Key::type) |
                                  bit(Key::inputs) | bit(Key::outputs) | bit(Key::attrs);

// Keys are most of the events in a graph file, so they are told apart by length and first letter
// with one string comparison to confirm, rather than compared against every name.
std::optional<Key> parse_key(std::string_view name) {
  Key key;
  switch (name.size()) {
  case 2:
    key = Key::id;
    break;
  case 3:
    key = Key::ops;
    break;
  case 4:
    key = name[0] == 'n' ? Key::name : name[0] == 't' ? Key::type : Key::role;
    break;
  case 5:
    key = name[0] == 's' ? Key::shape : name[0] == 'd' ? Key::dtype : Key::attrs;
    break;
  case 6:
    key = name[0] == 'f' ? Key::format : Key::inputs;
    break;
  case 7:
    key = name[0] == 't' ? Key::tensors : name[0] == 'o' ? Key::outputs : Key::forward;
    break;
  default:
    return std::nullopt;
  }
  if (key_names[static_cast<std::size_t>(key)] != name) return std::nullopt;
  return key;
}

// Where the parser is: which object or array the next event belongs to.
enum class Level : std::uint8_t {
  document,
  root,
  tensor_list,
  tensor,
  shape,
  op_list,
  op,
  id_list,
  attrs,
  attr_list,
  done
};

class GraphReader {
 public:
  using json = nlohmann::json;

  explicit GraphReader(WorkProgressFn const& progress) : progress_(progress) {}

  std::vector<Tensor>& tensors() { return tensors_; }
  std::vector<Op>& ops() { return ops_; }
  Error take_error() { return std::move(*error_); }

  bool null() { return wrong_type("null"); }
  bool boolean(bool) { return wrong_type("a boolean"); }
  bool binary(json::binary_t&) { return wrong_type("binary data"); }

  bool number_integer(std::int64_t value) { return on_integer(value); }
  bool number_unsigned(std::uint64_t value) {
    if (value > std::numeric_limits<std::int64_t>::max()) {
      return wrong_type("an integer too large for 64 bits");
    }
    return on_integer(static_cast<std::int64_t>(value));
  }

  bool number_float(double value, std::string const& raw) {
    // nlohmann reads an integer too long for 64 bits as a float; it is still an integer to us.
    if (raw.find_first_of(".eE") == std::string::npos) {
      return wrong_type("an integer too large for 64 bits");
    }
    if (level_ == Level::attrs) return set_attr(value);
    return wrong_type("a float");
  }

  bool string(std::string& value) {
    if (level_ == Level::attrs) return set_attr(std::move(value));
    if (level_ == Level::root && key_ == Key::format) {
      if (value == graph_format) return true;
      error_ = Error(ErrorCode::unsupported,
                     "the file's format is \"" + value + "\" but cleave reads \"" +
                         std::string(graph_format) +
                         "\"; the file may be from another tool or a newer cleave");
      return false;
    }
    if (level_ == Level::tensor) return tensor_string(value);
    if (level_ == Level::op && key_ == Key::name) {
      ops_.back().name = std::move(value);
      return true;
    }
    if (level_ == Level::op && key_ == Key::type) {
      ops_.back().type = std::move(value);
      return true;
    }
    return wrong_type("a string");
  }

  bool start_object(std::size_t) {
    switch (level_) {
    case Level::document:
      level_ = Level::root;
      return true;
    case Level::tensor_list:
      tensors_.emplace_back();
      seen_ = 0;
      level_ = Level::tensor;
      return true;
    case Level::op_list:
      if (progress_) progress_({"reading ops", static_cast<std::int64_t>(ops_.size()), 0});
      ops_.emplace_back();
      seen_ = 0;
      level_ = Level::op;
      return true;
    case Level::op:
      if (key_ != Key::attrs) break;
      level_ = Level::attrs;
      return true;
    default:
      break;
    }
    return wrong_type("an object");
  }

  bool key(std::string& name) {
    if (level_ == Level::attrs) {
      if (ops_.back().attrs.contains(name)) {
        return fail("attribute '" + name + "' appears twice", /*at_key=*/false);
      }
      attr_name_ = std::move(name);
      return true;
    }
    std::uint32_t allowed = level_ == Level::root     ? root_keys
                            : level_ == Level::tensor ? tensor_keys
                                                      : op_keys | bit(Key::forward);
    std::uint32_t& seen = level_ == Level::root ? root_seen_ : seen_;
    std::optional<Key> key = parse_key(name);
    if (!key || (allowed & bit(*key)) == 0) {
      return fail("unknown key '" + name + "'; expected " + list_keys(allowed), /*at_key=*/false);
    }
    if ((seen & bit(*key)) != 0) {
      return fail("key '" + name + "' appears twice", /*at_key=*/false);
    }
    seen |= bit(*key);
    key_ = *key;
    return true;
  }

  bool end_object() {
    switch (level_) {
    case Level::root:
      if (!check_keys(root_seen_, root_keys)) return false;
      level_ = Level::done;
      return true;
    case Level::tensor:
      if (!check_keys(seen_, tensor_keys)) return false;
      level_ = Level::tensor_list;
      return true;
    case Level::op:
      if (!check_keys(seen_, op_keys)) return false;
      level_ = Level::op_list;
      return true;
    case Level::attrs:
      level_ = Level::op;
      return true;
    default:
      CLEAVE_ASSERT(false, "nlohmann closed an object the reader never opened");
    }
  }

  bool start_array(std::size_t) {
    if (level_ == Level::root && key_ == Key::tensors) {
      level_ = Level::tensor_list;
    } else if (level_ == Level::root && key_ == Key::ops) {
      level_ = Level::op_list;
    } else if (level_ == Level::tensor && key_ == Key::shape) {
      level_ = Level::shape;
    } else if (level_ == Level::op && (key_ == Key::inputs || key_ == Key::outputs)) {
      level_ = Level::id_list;
    } else if (level_ == Level::attrs) {
      level_ = Level::attr_list;
    } else {
      return wrong_type("an array");
    }
    numbers_.clear();
    return true;
  }

  bool end_array() {
    switch (level_) {
    case Level::tensor_list:
    case Level::op_list:
      level_ = Level::root;
      return true;
    case Level::shape:
      tensors_.back().type.shape.assign(numbers_.begin(), numbers_.end());
      level_ = Level::tensor;
      return true;
    case Level::id_list: {
      auto& ids = key_ == Key::inputs ? ops_.back().inputs : ops_.back().outputs;
      ids.reserve(numbers_.size());
      for (std::int64_t n : numbers_)
        ids.emplace_back(static_cast<TensorId::value_type>(n));
      level_ = Level::op;
      return true;
    }
    case Level::attr_list:
      level_ = Level::attrs;
      return set_attr(std::vector<std::int64_t>(numbers_.begin(), numbers_.end()));
    default:
      CLEAVE_ASSERT(false, "nlohmann closed an array the reader never opened");
    }
  }

  bool parse_error(std::size_t position, std::string const&, json::exception const& ex) {
    error_ = json_read::malformed_json(ex, position);
    return false;
  }

 private:
  static bool is_id(std::int64_t value) { return value >= 0 && value < TensorId::invalid_value; }

  bool on_integer(std::int64_t value) {
    switch (level_) {
    case Level::op:
      if (key_ == Key::forward) {
        if (!is_id(value)) {
          return fail("a forward op id must be an integer from 0 to " +
                      std::to_string(OpId::invalid_value - 1));
        }
        ops_.back().forward = OpId(static_cast<OpId::value_type>(value));
        return true;
      }
      [[fallthrough]];
    case Level::tensor:
      if (key_ != Key::id) break;
      if (!is_id(value)) {
        return fail("an id must be an integer from 0 to " +
                    std::to_string(TensorId::invalid_value - 1));
      }
      if (level_ == Level::tensor) {
        tensors_.back().id = TensorId(static_cast<TensorId::value_type>(value));
      } else {
        ops_.back().id = OpId(static_cast<OpId::value_type>(value));
      }
      return true;
    case Level::id_list:
      if (!is_id(value)) {
        return fail("a tensor id must be an integer from 0 to " +
                    std::to_string(TensorId::invalid_value - 1));
      }
      numbers_.push_back(value);
      return true;
    case Level::shape:
    case Level::attr_list:
      numbers_.push_back(value);
      return true;
    case Level::attrs:
      return set_attr(value);
    default:
      break;
    }
    return wrong_type("an integer");
  }

  bool tensor_string(std::string& value) {
    Tensor& t = tensors_.back();
    switch (key_) {
    case Key::name:
      t.name = std::move(value);
      return true;
    case Key::dtype:
      if (auto dtype = parse_dtype(value)) {
        t.type.dtype = *dtype;
        return true;
      }
      return fail("unknown dtype '" + value + "'; expected fp32, fp16, bf16, int32 or int64");
    case Key::role:
      if (auto role = parse_role(value)) {
        t.role = *role;
        return true;
      }
      return fail("unknown role '" + value +
                  "'; expected input, activation, weight, gradient or optimizer_state");
    default:
      return wrong_type("a string");
    }
  }

  bool set_attr(AttrValue value) {
    ops_.back().attrs.set(std::move(attr_name_), std::move(value));
    return true;
  }

  bool check_keys(std::uint32_t seen, std::uint32_t required) {
    std::uint32_t missing = required & ~seen;
    if (missing == 0) return true;
    for (std::size_t k = 0; k < key_names.size(); ++k) {
      if ((missing & bit(static_cast<Key>(k))) != 0) {
        return fail("missing key '" + std::string(key_names[k]) + "'", /*at_key=*/false);
      }
    }
    return false;
  }

  static std::string list_keys(std::uint32_t keys) {
    std::string out;
    for (std::size_t k = 0; k < key_names.size(); ++k) {
      if ((keys & bit(static_cast<Key>(k))) == 0) continue;
      if (!out.empty()) out += ", ";
      out += key_names[k];
    }
    return out;
  }

  // What the current position holds, for "expected X, found Y".
  std::string_view expected() const {
    switch (level_) {
    case Level::document:
      return "an object";
    case Level::tensor_list:
      return "a tensor object";
    case Level::op_list:
      return "an op object";
    case Level::shape:
      return "an array of integer dimensions";
    case Level::id_list:
      return "an array of tensor ids";
    case Level::attrs:
      return "an integer, a float, a string or an array of integers";
    case Level::attr_list:
      return "an array of integers";
    default:
      break;
    }
    switch (key_) {
    case Key::format:
      return "a string";
    case Key::tensors:
      return "an array of tensor objects";
    case Key::ops:
      return "an array of op objects";
    case Key::id:
      return "a non-negative integer";
    case Key::forward:
      return "a non-negative integer (the id of the forward op)";
    case Key::shape:
      return "an array of integer dimensions";
    case Key::inputs:
    case Key::outputs:
      return "an array of tensor ids";
    case Key::attrs:
      return "an object of attributes";
    default:
      return "a string";
    }
  }

  bool wrong_type(std::string_view found) {
    return fail("expected " + std::string(expected()) + ", found " + std::string(found));
  }

  // "tensor 3 ('x'), key 'shape'": where in the file the current event is; `at_key` when it is
  // the value of the key read last.
  std::string where(bool at_key) const {
    std::string out;
    switch (level_) {
    case Level::document:
      return "the document";
    case Level::root:
      out = "top level";
      break;
    case Level::tensor_list:
      return "the tensors array";
    case Level::op_list:
      return "the ops array";
    case Level::tensor:
    case Level::shape:
      out = "tensor " + std::to_string(tensors_.size() - 1);
      if (!tensors_.back().name.empty()) out += " ('" + tensors_.back().name + "')";
      break;
    default:
      out = "op " + std::to_string(ops_.size() - 1);
      if (!ops_.back().name.empty()) out += " ('" + ops_.back().name + "')";
      if (level_ == Level::attrs || level_ == Level::attr_list) {
        return at_key ? out + ", attribute '" + attr_name_ + "'" : out;
      }
    }
    if (at_key) {
      out += ", key '" + std::string(key_names[static_cast<std::size_t>(key_)]) + "'";
    }
    return out;
  }

  bool fail(std::string problem, bool at_key = true) {
    std::string message = where(at_key) + ": " + problem;
    if ((root_seen_ & bit(Key::format)) == 0) {
      // Content that does not fit usually means the file is not a cleave graph at all.
      message = "not a cleave graph: no \"format\": \"" + std::string(graph_format) +
                "\" before the first problem (" + message +
                "); the file may be from another tool or a newer cleave";
    }
    error_ = Error(ErrorCode::parse_error, std::move(message));
    return false;
  }

  std::vector<Tensor> tensors_;
  std::vector<Op> ops_;
  WorkProgressFn const& progress_;
  Level level_ = Level::document;
  Key key_ = Key::format;
  std::uint32_t root_seen_ = 0;
  std::uint32_t seen_ = 0;  // keys seen in the current tensor or op
  std::string attr_name_;
  // The integers of the array being read (a shape, an id list or an attribute list; they never
  // nest), kept across arrays so that each one costs a single exact-size allocation.
  std::vector<std::int64_t> numbers_;
  std::optional<Error> error_;
};

}  // namespace

std::string graph_to_json(Graph const& graph) {
  std::string out;
  out.reserve(estimate_size(graph));
  // One tensor or op per line keeps diffs of graph files readable.
  out += "{\"format\":";
  detail::append_quoted(out, graph_format);
  out += ",\"tensors\":[";
  for (Tensor const& t : graph.tensors()) {
    out += t.id.value() == 0 ? "\n" : ",\n";
    append_tensor(out, t);
  }
  out += graph.num_tensors() == 0 ? "]" : "\n]";
  out += ",\"ops\":[";
  for (Op const& op : graph.ops()) {
    out += op.id.value() == 0 ? "\n" : ",\n";
    append_op(out, op);
  }
  out += graph.num_ops() == 0 ? "]" : "\n]";
  out += "}\n";
  return out;
}

Expected<Graph> graph_from_json(std::string_view text, ShapeInference const& semantics,
                                WorkProgressFn const& progress) {
  GraphReader reader(progress);
  if (!nlohmann::json::sax_parse(text.data(), text.data() + text.size(), &reader)) {
    return reader.take_error();
  }
  if (progress) progress({"checking ops and shapes", 0, 0});
  return Graph::create(std::move(reader.tensors()), std::move(reader.ops()), semantics);
}

std::string graph_fingerprint(Graph const& graph) {
  return fnv1a_hex(graph_to_json(graph), fnv1a_graph_basis);
}

Status save_graph(Graph const& graph, std::string const& path) {
  return write_file_atomic(path, graph_to_json(graph));
}

Expected<Graph> load_graph(std::string const& path, ShapeInference const& semantics,
                           WorkProgressFn const& progress) {
  std::string context = "in graph file '" + path + "'";
  auto text = read_file(path);
  if (!text) return std::move(text.error()).with_context(context);
  auto graph = graph_from_json(*text, semantics, progress);
  if (!graph) return std::move(graph.error()).with_context(context);
  return graph;
}

}  // namespace cleave::ir
