#include "ops/op_registry.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "support/file_io.h"
#include "tdl/parser.h"

namespace cleave::ops {

std::unique_ptr<OpRegistry> OpRegistry::with_builtins() {
  auto registry = std::make_unique<OpRegistry>();
  add_dense_ops(*registry);
  add_elementwise_ops(*registry);
  add_normalization_ops(*registry);
  add_layout_ops(*registry);
  add_gradient_ops(*registry);
  add_optimizer_ops(*registry);
  return registry;
}

Status OpRegistry::add(OpSchema schema) {
  if (schemas_.count(schema.name))
    return Error(ErrorCode::invalid_argument,
                 "op type '" + schema.name + "' is already registered; choose another name");
  std::string name = schema.name;
  schemas_.emplace(std::move(name), std::move(schema));
  return Status::ok();
}

namespace {

bool is_identifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

std::string trim(std::string_view s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b])))
    ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1])))
    --e;
  return std::string(s.substr(b, e - b));
}

char const* kind_name(AttrKind k) {
  switch (k) {
  case AttrKind::integer:
    return "an integer";
  case AttrKind::real:
    return "a number";
  case AttrKind::string:
    return "a string";
  case AttrKind::integers:
    return "a list of integers";
  }
  return "?";
}

bool kind_matches(AttrKind k, ir::AttrValue const& v) {
  switch (k) {
  case AttrKind::integer:
    return std::holds_alternative<std::int64_t>(v);
  case AttrKind::real:
    return std::holds_alternative<double>(v) || std::holds_alternative<std::int64_t>(v);
  case AttrKind::string:
    return std::holds_alternative<std::string>(v);
  case AttrKind::integers:
    return std::holds_alternative<std::vector<std::int64_t>>(v);
  }
  return false;
}

std::string usage_hint() {
  return "write a custom op as NAME(IN1, IN2, ...): Y[i,j] = ..., e.g. "
         "scaled_mm(A, B): Y[i,j] = sum(k) A[i,k] * B[k,j] * alpha";
}

}  // namespace

Status OpRegistry::add_tdl(std::string_view line) {
  std::string text = trim(line);
  auto open = text.find('(');
  auto colon = text.find("):");
  if (open == std::string::npos || colon == std::string::npos || colon < open)
    return Error(ErrorCode::parse_error,
                 "custom op '" + text + "' has no 'NAME(INPUTS):' header; " + usage_hint());
  std::string name = trim(std::string_view(text).substr(0, open));
  if (!is_identifier(name))
    return Error(ErrorCode::parse_error,
                 "custom op name '" + name + "' is not an identifier; " + usage_hint());
  std::vector<std::string> inputs;
  std::string list = text.substr(open + 1, colon - open - 1);
  std::size_t start = 0;
  while (start <= list.size() && !trim(list).empty()) {
    auto comma = list.find(',', start);
    std::string in = trim(std::string_view(list).substr(
        start, comma == std::string::npos ? std::string::npos : comma - start));
    if (!is_identifier(in))
      return Error(ErrorCode::parse_error, "custom op '" + name + "': input name '" + in +
                                               "' is not an identifier; " + usage_hint());
    if (std::find(inputs.begin(), inputs.end(), in) != inputs.end())
      return Error(ErrorCode::parse_error,
                   "custom op '" + name + "' lists input '" + in + "' twice");
    inputs.push_back(in);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::string statement = trim(std::string_view(text).substr(colon + 2));
  auto st = tdl::parse_statement(statement);
  if (!st) return std::move(st).error().with_context("in custom op '" + name + "'");

  OpSchema schema;
  schema.name = name;
  schema.summary = statement;
  schema.attrs_are_params = true;
  schema.min_inputs = schema.max_inputs = static_cast<int>(inputs.size());
  schema.fixed_input_names = inputs;
  schema.instantiate = [statement,
                        inputs](ir::Attrs const& attrs,
                                std::span<ir::TensorType const>) -> Expected<OpInstance> {
    OpInstance inst{statement, inputs, {}, {}, std::nullopt};
    for (auto const& [key, value] : attrs.items()) {
      if (auto const* i = std::get_if<std::int64_t>(&value))
        inst.params[key] = static_cast<double>(*i);
      if (auto const* d = std::get_if<double>(&value)) inst.params[key] = *d;
    }
    return inst;
  };
  return add(std::move(schema));
}

Status OpRegistry::load_semantics_file(std::string const& path) {
  CLEAVE_TRY(std::string text, read_file(path));
  std::size_t line_no = 0, pos = 0;
  while (pos <= text.size()) {
    auto end = text.find('\n', pos);
    std::string line = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    ++line_no;
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    if (!trim(line).empty()) {
      auto st = add_tdl(line);
      if (!st)
        return std::move(st).error().with_context("in " + path + ":" + std::to_string(line_no));
    }
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return Status::ok();
}

OpSchema const* OpRegistry::find(std::string_view name) const {
  auto it = schemas_.find(std::string(name));
  return it == schemas_.end() ? nullptr : &it->second;
}

Expected<std::vector<std::string>> OpRegistry::input_names(OpSchema const& schema) const {
  if (!schema.fixed_input_names.empty() || schema.example_inputs.empty())
    return schema.fixed_input_names;
  CLEAVE_TRY(OpInstance example,
             instantiate(schema.name, schema.example_attrs, schema.example_inputs));
  return example.input_names;
}

std::vector<std::string> OpRegistry::names() const {
  std::vector<std::string> out;
  for (auto const& [name, schema] : schemas_)
    out.push_back(name);
  std::sort(out.begin(), out.end());
  return out;
}

Expected<ir::Attrs> OpRegistry::complete_attrs(OpSchema const& schema,
                                               ir::Attrs const& attrs) const {
  if (schema.attrs_are_params) {
    for (auto const& [key, value] : attrs.items()) {
      if (auto const* d = std::get_if<double>(&value); d && !std::isfinite(*d))
        return Error(ErrorCode::invalid_argument, "attribute '" + key + "' is not finite");
    }
    return attrs;
  }
  ir::Attrs out;
  for (auto const& [key, value] : attrs.items()) {
    auto spec = std::find_if(schema.attrs.begin(), schema.attrs.end(),
                             // (an init-capture: clang 14, the fuzz build, cannot capture a
                             // structured binding)
                             [&k = key](AttrSpec const& s) { return s.name == k; });
    if (spec == schema.attrs.end()) {
      std::string known;
      for (auto const& s : schema.attrs)
        known += (known.empty() ? "" : ", ") + s.name;
      return Error(ErrorCode::invalid_argument,
                   "unknown attribute '" + key + "' for op type '" + schema.name +
                       "'; known attributes: " + (known.empty() ? "none" : known));
    }
    if (!kind_matches(spec->kind, value)) {
      bool one_int =
          spec->kind == AttrKind::integers && std::holds_alternative<std::int64_t>(value);
      return Error(ErrorCode::invalid_argument,
                   "attribute '" + key + "' of '" + schema.name + "' must be " +
                       kind_name(spec->kind) + (one_int ? " (write [N] for a single value)" : ""));
    }
    if (spec->kind == AttrKind::real && std::holds_alternative<std::int64_t>(value)) {
      out.set(key, static_cast<double>(std::get<std::int64_t>(value)));
    } else {
      out.set(key, value);
    }
  }
  for (auto const& spec : schema.attrs) {
    if (out.contains(spec.name)) continue;
    if (!spec.fallback)
      return Error(ErrorCode::invalid_argument, "op type '" + schema.name + "' needs attribute '" +
                                                    spec.name + "' (" + spec.doc + ")");
    out.set(spec.name, *spec.fallback);
  }
  return out;
}

Expected<OpInstance> OpRegistry::instantiate(std::string_view type, ir::Attrs const& attrs,
                                             std::span<ir::TensorType const> inputs) const {
  OpSchema const* schema = find(type);
  if (!schema) {
    return Error(ErrorCode::not_found,
                 "unknown op type '" + std::string(type) +
                     "'; `cleave ops` lists the built-in ones, and a custom op is described in "
                     "one TDL line passed with --op-semantics FILE");
  }
  int n = static_cast<int>(inputs.size());
  if (n < schema->min_inputs || (schema->max_inputs >= 0 && n > schema->max_inputs)) {
    std::string want = schema->min_inputs == schema->max_inputs
                           ? std::to_string(schema->min_inputs)
                           : std::to_string(schema->min_inputs) + " or more";
    return Error(ErrorCode::invalid_argument, "op type '" + schema->name + "' takes " + want +
                                                  " input(s), got " + std::to_string(n));
  }
  // Mixed precision is explicit: floating-point inputs of one op share a dtype.
  for (std::size_t i = 1; i < inputs.size(); ++i) {
    auto first = std::find_if(inputs.begin(), inputs.end(),
                              [](auto const& t) { return ir::is_floating(t.dtype); });
    if (ir::is_floating(inputs[i].dtype) && inputs[i].dtype != first->dtype)
      return Error(ErrorCode::shape_mismatch,
                   schema->name + ": floating-point inputs must share one dtype, but input " +
                       std::to_string(first - inputs.begin()) + " is " +
                       ir::type_to_string(*first) + " and input " + std::to_string(i) + " is " +
                       ir::type_to_string(inputs[i]) + "; insert a cast");
  }
  CLEAVE_TRY(ir::Attrs full, complete_attrs(*schema, attrs));
  return schema->instantiate(full, inputs);
}

Expected<tdl::Statement const*> OpRegistry::parsed(std::string const& text) const {
  auto it = statements_.find(text);
  if (it != statements_.end()) return it->second.get();
  CLEAVE_TRY(tdl::Statement st, tdl::parse_statement(text));
  auto owned = std::make_unique<tdl::Statement>(std::move(st));
  auto const* ptr = owned.get();
  statements_.emplace(text, std::move(owned));
  return ptr;
}

Expected<std::shared_ptr<tdl::BoundOp const>>
OpRegistry::bind(std::string_view type, ir::Attrs const& attrs,
                 std::span<ir::TensorType const> inputs) const {
  std::string key(type);
  key += '|';
  key += attrs.to_string();
  for (auto const& t : inputs) {
    key += '|';
    key += ir::type_to_string(t);
  }
  std::lock_guard lock(mutex_);
  if (auto it = bound_.find(key); it != bound_.end()) return it->second;
  CLEAVE_TRY(OpInstance inst, instantiate(type, attrs, inputs));
  CLEAVE_TRY(tdl::Statement const* st, parsed(inst.tdl));
  tdl::BindContext ctx;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    ctx.inputs.emplace_back(inst.input_names[i], inputs[i]);
  ctx.params = std::move(inst.params);
  ctx.extents.insert(inst.extents.begin(), inst.extents.end());
  ctx.output = inst.output;
  auto bound = tdl::bind(*st, ctx);
  if (!bound)
    return std::move(bound).error().with_context("in the TDL of op type '" + std::string(type) +
                                                 "'");
  bound_.emplace(std::move(key), *bound);
  return *bound;
}

Expected<std::shared_ptr<tdl::BoundOp const>> OpRegistry::bind(ir::Graph const& graph,
                                                               ir::OpId id) const {
  ir::Op const& op = graph.op(id);
  std::vector<ir::TensorType> types;
  for (auto t : op.inputs)
    types.push_back(graph.tensor(t).type);
  auto bound = bind(op.type, op.attrs, types);
  if (!bound)
    return std::move(bound).error().with_context("in op '" + op.name + "' (" + op.type + ")");
  return bound;
}

Expected<std::vector<ir::TensorType>>
OpRegistry::infer(std::string_view op_type, ir::Attrs const& attrs,
                  std::span<ir::TensorType const> inputs) const {
  CLEAVE_TRY(auto bound, bind(op_type, attrs, inputs));
  return std::vector<ir::TensorType>{bound->output_type()};
}

}  // namespace cleave::ops
