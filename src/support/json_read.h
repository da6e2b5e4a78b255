// Reading small JSON files (clusters, profile tables) through nlohmann's DOM with errors that say
// where a value sits and what was expected: "device 2 ('gpu2'), key 'memory_bytes': expected an
// integer number of bytes, found a string".
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "support/status.h"

namespace cleave::json_read {

using json = nlohmann::json;

// A parse_error "malformed JSON at byte <offset>: <what nlohmann says>; the file may be truncated
// or not be JSON", for an exception nlohmann raised (or reported to a SAX reader) at `position`,
// where it counts the offending byte as read.
Error malformed_json(json::exception const& e, std::size_t position);
// A parse_error "<where>: <problem>".
Error content_error(std::string const& where, std::string const& problem);
// nlohmann's message without its "[json.exception.parse_error.101] " prefix, which means nothing
// to a user.
std::string exception_message(json::exception const& e);
// "null", "a boolean", "a string", "an array", "an object" or "a number".
std::string type_name(json const& v);
// `obj` is an object with every required key and no key outside required + optional.
Status check_keys(json const& obj, std::string const& where,
                  std::initializer_list<std::string_view> required,
                  std::initializer_list<std::string_view> optional = {});
// obj[key] (present: check_keys first) as a string or a number.
Expected<std::string> get_string(json const& obj, std::string_view key, std::string const& where);
Expected<double> get_number(json const& obj, std::string_view key, std::string const& where);
// A value that must be an integer fitting int64; `what` names it in the error.
Expected<std::int64_t> get_integer(json const& v, std::string const& where,
                                   std::string_view what = "an integer");
// root[key] (present) as an array; errors say "top level, key '<key>'".
Expected<json const*> get_array(json const& root, std::string_view key);

}  // namespace cleave::json_read
