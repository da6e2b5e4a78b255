// `cleave op`: the iteration space of one op and what each half of each 2-way split reads,
// writes and must reduce.
#include <cstdio>
#include <map>

#include "cli/args.h"
#include "cli/commands.h"
#include "ops/split_report.h"
#include "tdl/parser.h"

namespace cleave::cli {
namespace {

using TypeMap = std::map<std::string, ir::TensorType>;

Expected<TypeMap> given_types(OpCommand const& cmd) {
  TypeMap types;
  for (auto const& s : cmd.shapes) {
    CLEAVE_TRY(auto kv, split_assignment(s, "--shape"));
    CLEAVE_TRY(ir::Shape shape, ir::parse_shape(kv.second));
    types[kv.first] = ir::TensorType{shape, ir::DType::fp32};
  }
  for (auto const& s : cmd.dtypes) {
    CLEAVE_TRY(auto kv, split_assignment(s, "--dtype"));
    auto it = types.find(kv.first);
    if (it == types.end())
      return Error(ErrorCode::invalid_argument, "--dtype " + kv.first +
                                                    ": give its shape too, with --shape " +
                                                    kv.first + "=DIMS");
    auto dtype = ir::parse_dtype(kv.second);
    if (!dtype)
      return Error(ErrorCode::invalid_argument,
                   "--dtype " + s + ": use fp32, fp16, bf16, int32 or int64");
    it->second.dtype = *dtype;
  }
  return types;
}

std::string list(std::vector<std::string> const& names) {
  std::string out;
  for (auto const& n : names)
    out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

// Every given shape must name one of `names` (plus `also`, the output of a TDL line).
Status check_no_extra(TypeMap const& given, std::vector<std::string> const& names,
                      std::string const& also) {
  for (auto const& [name, type] : given) {
    if (name == also || std::find(names.begin(), names.end(), name) != names.end()) continue;
    return Error(ErrorCode::invalid_argument, "--shape " + name + ": the op has no input " + name +
                                                  " (inputs: " + list(names) + ")");
  }
  return Status::ok();
}

Expected<std::vector<ir::TensorType>>
ordered(TypeMap const& given, std::vector<std::string> const& names, std::string const& op) {
  std::vector<ir::TensorType> out;
  for (auto const& n : names) {
    auto it = given.find(n);
    if (it == given.end())
      return Error(ErrorCode::invalid_argument,
                   op + " needs --shape " + n + "=DIMS (its inputs: " + list(names) + ")");
    out.push_back(it->second);
  }
  return out;
}

Expected<ops::SplitReport> tdl_report(OpCommand const& cmd, TypeMap const& given,
                                      ir::Attrs const& attrs) {
  CLEAVE_TRY(tdl::Statement st, tdl::parse_statement(cmd.spec));
  auto names = tdl::tensors_read(st);
  CLEAVE_CHECK_OK(check_no_extra(given, names, st.output.name));
  CLEAVE_TRY(auto types, ordered(given, names, "the statement"));
  tdl::BindContext ctx;
  for (std::size_t i = 0; i < names.size(); ++i)
    ctx.inputs.emplace_back(names[i], types[i]);
  if (auto it = given.find(st.output.name); it != given.end()) ctx.output = it->second;
  for (auto const& [key, value] : attrs.items()) {
    if (auto const* i = std::get_if<std::int64_t>(&value)) {
      ctx.params[key] = static_cast<double>(*i);
    } else if (auto const* d = std::get_if<double>(&value)) {
      ctx.params[key] = *d;
    } else {
      return Error(ErrorCode::invalid_argument,
                   "--attr " + key + ": parameters of a TDL statement must be numbers");
    }
  }
  CLEAVE_TRY(auto bound, tdl::bind(st, ctx));
  return ops::make_split_report("custom", attrs.to_string(), bound);
}

Expected<ops::SplitReport> registered_report(ops::OpRegistry const& registry, OpCommand const& cmd,
                                             TypeMap const& given, ir::Attrs attrs) {
  ops::OpSchema const* schema = registry.find(cmd.spec);
  if (!schema) {
    return Error(ErrorCode::not_found,
                 "unknown op '" + cmd.spec +
                     "': give a built-in op name (`cleave ops` lists them) "
                     "or a TDL statement such as \"Y[i,j] = sum(k) A[i,k] * B[k,j]\"");
  }
  std::vector<ir::TensorType> types;
  if (given.empty() && (!schema->example_inputs.empty() || schema->max_inputs == 0)) {
    types = schema->example_inputs;
    ir::Attrs merged = schema->example_attrs;
    for (auto const& [key, value] : attrs.items())
      merged.set(key, value);
    attrs = std::move(merged);
  } else {
    CLEAVE_TRY(std::vector<std::string> names, registry.input_names(*schema));
    if (schema->max_inputs < 0) {  // variadic: X0, X1, ... as many as given
      names.clear();
      while (given.count("X" + std::to_string(names.size())))
        names.push_back("X" + std::to_string(names.size()));
    }
    CLEAVE_CHECK_OK(check_no_extra(given, names, ""));
    CLEAVE_TRY(types, ordered(given, names, cmd.spec));
  }
  CLEAVE_TRY(auto bound, registry.bind(cmd.spec, attrs, types));
  return ops::make_split_report(cmd.spec, attrs.to_string(), bound);
}

}  // namespace

int run_op(ops::OpRegistry const& registry, OpCommand const& cmd) {
  auto given = given_types(cmd);
  if (!given) return report(given.error());
  ir::Attrs attrs;
  for (auto const& a : cmd.attrs) {
    auto kv = split_assignment(a, "--attr");
    if (!kv) return report(kv.error());
    attrs.set(kv->first, parse_attr_value(kv->second));
  }
  bool is_tdl = cmd.spec.find('=') != std::string::npos;
  auto r =
      is_tdl ? tdl_report(cmd, *given, attrs) : registered_report(registry, cmd, *given, attrs);
  if (!r) return report(r.error());
  std::string text = cmd.json ? ops::to_json(*r) : ops::to_text(*r);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

}  // namespace cleave::cli
