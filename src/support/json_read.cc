#include "support/json_read.h"

#include <algorithm>

namespace cleave::json_read {

Error content_error(std::string const& where, std::string const& problem) {
  return Error(ErrorCode::parse_error, where + ": " + problem);
}

std::string exception_message(json::exception const& e) {
  std::string what = e.what();
  if (auto close = what.find("] "); close != std::string::npos) what.erase(0, close + 2);
  return what;
}

Error malformed_json(json::exception const& e, std::size_t position) {
  std::size_t offset = position > 0 ? position - 1 : 0;  // 0-based, the offending byte
  return Error(ErrorCode::parse_error, "malformed JSON at byte " + std::to_string(offset) + ": " +
                                           exception_message(e) +
                                           "; the file may be truncated or not be JSON");
}

std::string type_name(json const& v) {
  switch (v.type()) {
  case json::value_t::null:
    return "null";
  case json::value_t::boolean:
    return "a boolean";
  case json::value_t::string:
    return "a string";
  case json::value_t::array:
    return "an array";
  case json::value_t::object:
    return "an object";
  default:
    return "a number";
  }
}

Status check_keys(json const& obj, std::string const& where,
                  std::initializer_list<std::string_view> required,
                  std::initializer_list<std::string_view> optional) {
  if (!obj.is_object()) return content_error(where, "expected an object, found " + type_name(obj));
  for (auto const& item : obj.items()) {
    // Not a structured binding: clang 14 (the fuzz build) cannot capture one in a lambda.
    std::string const& key = item.key();
    auto known = [&](std::initializer_list<std::string_view> list) {
      return std::find(list.begin(), list.end(), key) != list.end();
    };
    if (known(required) || known(optional)) continue;
    std::string expected;
    for (auto list : {required, optional})
      for (auto k : list)
        expected += (expected.empty() ? "" : ", ") + std::string(k);
    return content_error(where, "unknown key '" + key + "'; expected " + expected);
  }
  for (auto k : required)
    if (!obj.contains(k)) return content_error(where, "missing key '" + std::string(k) + "'");
  return Status::ok();
}

Expected<std::string> get_string(json const& obj, std::string_view key, std::string const& where) {
  json const& v = obj.at(key);
  if (!v.is_string())
    return content_error(where + ", key '" + std::string(key) + "'",
                         "expected a string, found " + type_name(v));
  return v.get<std::string>();
}

Expected<double> get_number(json const& obj, std::string_view key, std::string const& where) {
  json const& v = obj.at(key);
  if (!v.is_number())
    return content_error(where + ", key '" + std::string(key) + "'",
                         "expected a number, found " + type_name(v));
  return v.get<double>();
}

Expected<std::int64_t> get_integer(json const& v, std::string const& where, std::string_view what) {
  if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<std::uint64_t>() > INT64_MAX))
    return content_error(where, "expected " + std::string(what) + ", found " + type_name(v));
  return v.get<std::int64_t>();
}

Expected<json const*> get_array(json const& root, std::string_view key) {
  json const& v = root.at(key);
  if (!v.is_array())
    return content_error("top level, key '" + std::string(key) + "'",
                         "expected an array, found " + type_name(v));
  return &v;
}

}  // namespace cleave::json_read
