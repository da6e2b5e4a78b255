// A structure-aware libFuzzer mutator for the JSON file formats (cleave.graph/1, cleave.plan/2,
// cleave.cluster/1, cleave.profile/1). Byte mutations of JSON nearly always break its syntax, so
// the readers' first check (the JSON parser) rejects them and the fuzzer never reaches the
// checks of the content. This one parses the input, changes one value, key or array of the
// document and writes it back: most inputs stay well-formed and reach the content checks. An
// input that does not parse, and one in eight that does, gets libFuzzer's byte mutation instead,
// so that syntax is fuzzed too.
//
// The JSON targets get it as libFuzzer's custom mutator from fuzz/json_custom_mutator.cc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

extern "C" std::size_t LLVMFuzzerMutate(std::uint8_t* data, std::size_t size, std::size_t max_size);

namespace cleave::fuzz {

using Json = nlohmann::ordered_json;

// Every node of the document, the root first, without recursion (a hostile input may nest deeply).
inline std::vector<Json*> nodes_of(Json& root) {
  std::vector<Json*> nodes;
  std::vector<Json*> stack{&root};
  while (!stack.empty()) {
    Json* node = stack.back();
    stack.pop_back();
    nodes.push_back(node);
    if (node->is_structured())
      for (auto& child : *node)
        stack.push_back(&child);
  }
  return nodes;
}

// Numbers at the edges of what the readers take: zero, signs, the ends of 32- and 64-bit
// integers, huge and tiny doubles.
inline Json interesting_number(std::mt19937& rng) {
  static constexpr std::int64_t ints[] = {0,
                                          1,
                                          -1,
                                          2,
                                          3,
                                          7,
                                          64,
                                          1024,
                                          std::numeric_limits<std::int32_t>::max(),
                                          std::int64_t{std::numeric_limits<std::int32_t>::max()} +
                                              1,
                                          std::numeric_limits<std::int32_t>::min(),
                                          std::int64_t{1} << 40,
                                          std::int64_t{1} << 62,
                                          std::numeric_limits<std::int64_t>::max(),
                                          std::numeric_limits<std::int64_t>::min()};
  static constexpr double doubles[] = {0.5, -0.5, 1e-300, 1e300, -1e300, 1.7976931348623157e308};
  std::size_t const n_ints = std::size(ints);
  std::size_t const i = rng() % (n_ints + std::size(doubles) + 1);
  if (i < n_ints) return ints[i];
  if (i < n_ints + std::size(doubles)) return doubles[i - n_ints];
  return std::numeric_limits<std::uint64_t>::max();
}

inline Json tweaked_number(Json const& number, std::mt19937& rng) {
  if (rng() % 2 == 0) return interesting_number(rng);
  if (number.is_number_float()) return number.get<double>() * ((rng() % 2 == 0) ? 2.0 : -1.0);
  std::int64_t const v = number.is_number_unsigned()
                             ? static_cast<std::int64_t>(number.get<std::uint64_t>() >> 1)
                             : number.get<std::int64_t>();
  switch (rng() % 4) {
  case 0:
    return v == std::numeric_limits<std::int64_t>::max() ? v : v + 1;
  case 1:
    return v == std::numeric_limits<std::int64_t>::min() ? v : v - 1;
  case 2:
    return std::abs(v / 2) >= std::numeric_limits<std::int64_t>::max() / 4 ? v : v * 2;
  default:
    return v == std::numeric_limits<std::int64_t>::min() ? v : -v;
  }
}

// A string of the document (keys included): names and enum values that the reader accepts
// elsewhere, so that a swap of two is often meaningful (a tensor name where a device is expected).
inline std::string some_string(std::vector<Json*> const& nodes, std::mt19937& rng) {
  std::vector<std::string> strings;
  for (Json* node : nodes) {
    if (node->is_string()) strings.push_back(node->get<std::string>());
    if (node->is_object())
      for (auto it = node->begin(); it != node->end(); ++it)
        strings.push_back(it.key());
  }
  if (strings.empty() || rng() % 8 == 0) return rng() % 2 == 0 ? "" : "x";
  return strings[rng() % strings.size()];
}

inline void mutate_string(Json& node, std::vector<Json*> const& nodes, std::mt19937& rng) {
  if (rng() % 2 == 0) {
    node = some_string(nodes, rng);
    return;
  }
  std::string s = node.get<std::string>();
  s.resize(s.size() + 8);
  std::size_t const n =
      LLVMFuzzerMutate(reinterpret_cast<std::uint8_t*>(s.data()), s.size() - 8, s.size());
  s.resize(n);
  node = std::move(s);
}

inline void mutate_array(Json& node, std::mt19937& rng) {
  std::size_t const n = node.size();
  switch (rng() % 4) {
  case 0:  // drop an element
    if (n > 0) node.erase(node.begin() + static_cast<std::ptrdiff_t>(rng() % n));
    break;
  case 1:  // duplicate an element
    if (n > 0 && n < 4096) node.push_back(Json(node[rng() % n]));
    break;
  case 2:  // swap two
    if (n > 1) std::swap(node[rng() % n], node[rng() % n]);
    break;
  default:  // truncate or empty
    if (n > 0) node.erase(node.begin() + static_cast<std::ptrdiff_t>(rng() % n), node.end());
  }
}

inline void mutate_object(Json& node, std::vector<Json*> const& nodes, std::mt19937& rng) {
  if (node.empty()) {
    node[some_string(nodes, rng)] = interesting_number(rng);
    return;
  }
  auto it = node.begin();
  std::advance(it, static_cast<std::ptrdiff_t>(rng() % node.size()));
  std::string const key = it.key();
  if (rng() % 2 == 0) {  // drop a key
    node.erase(key);
    return;
  }
  // Rename a key to another of the document's; chosen before the erase, which moves the nodes.
  std::string const renamed = some_string(nodes, rng);
  Json value = *it;
  node.erase(key);
  node[renamed] = std::move(value);
}

// A different kind of value where the reader expects one kind.
inline Json replacement(std::vector<Json*> const& nodes, std::mt19937& rng) {
  switch (rng() % 7) {
  case 0:
    return nullptr;
  case 1:
    return rng() % 2 == 0;
  case 2:
    return Json::array();
  case 3:
    return Json::object();
  case 4:
    return some_string(nodes, rng);
  case 5:
    return interesting_number(rng);
  default: {
    Json const& other = *nodes[rng() % nodes.size()];  // a copy of another part of the document
    return other.size() < 64 ? other : Json(nullptr);
  }
  }
}

// A property the target checks (a round trip): its failure is a crash that libFuzzer records.
inline void require(bool holds, char const* what) {
  if (holds) return;
  std::fprintf(stderr, "fuzz property failed: %s\n", what);
  __builtin_trap();
}

// What `read` makes of the input; where it reads, the documented round trip is checked too:
// `write` of it reads back, and writes the same text again (`what` names the format).
template <typename Read, typename Write>
auto read_and_round_trip(std::uint8_t const* data, std::size_t size, Read read, Write write,
                         char const* what) {
  auto value = read(std::string_view(reinterpret_cast<char const*>(data), size));
  if (!value) return value;
  std::string const text = write(*value);
  auto again = read(text);
  require(again.has_value(), what);
  require(write(*again) == text, what);
  return value;
}

inline std::size_t mutate_json(std::uint8_t* data, std::size_t size, std::size_t max_size,
                               unsigned seed) {
  std::mt19937 rng(seed);
  Json doc = Json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || rng() % 8 == 0) return LLVMFuzzerMutate(data, size, max_size);
  std::vector<Json*> const nodes = nodes_of(doc);
  int const edits = 1 + static_cast<int>(rng() % 3);
  for (int e = 0; e < edits; ++e) {
    // Nodes may have moved after an edit of their parent: collect them again for each edit.
    std::vector<Json*> const current = e == 0 ? nodes : nodes_of(doc);
    Json& node = *current[rng() % current.size()];
    if (rng() % 6 == 0) {
      node = replacement(current, rng);
      continue;
    }
    if (node.is_number())
      node = tweaked_number(node, rng);
    else if (node.is_string())
      mutate_string(node, current, rng);
    else if (node.is_array())
      mutate_array(node, rng);
    else if (node.is_object())
      mutate_object(node, current, rng);
    else
      node = replacement(current, rng);
  }
  // Byte mutations of strings may leave invalid UTF-8: write it replaced rather than throw.
  std::string const text = doc.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (text.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, text.data(), text.size());
  return text.size();
}

}  // namespace cleave::fuzz
