// Reading ONNX node attributes (internal to the importer).
#pragma once

#include <cstdint>
#include <onnx/onnx_pb.h>
#include <optional>
#include <string>
#include <vector>

namespace cleave::importer {

inline onnx::AttributeProto const* find_attr(onnx::NodeProto const& n, std::string const& name) {
  for (auto const& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

inline std::int64_t attr_int(onnx::NodeProto const& n, std::string const& name,
                             std::int64_t fallback) {
  auto const* a = find_attr(n, name);
  return a ? a->i() : fallback;
}

inline double attr_float(onnx::NodeProto const& n, std::string const& name, double fallback) {
  auto const* a = find_attr(n, name);
  return a ? static_cast<double>(a->f()) : fallback;
}

inline std::optional<std::vector<std::int64_t>> attr_ints(onnx::NodeProto const& n,
                                                          std::string const& name) {
  auto const* a = find_attr(n, name);
  if (!a) return std::nullopt;
  return std::vector<std::int64_t>(a->ints().begin(), a->ints().end());
}

inline std::string attr_string(onnx::NodeProto const& n, std::string const& name,
                               std::string fallback) {
  auto const* a = find_attr(n, name);
  return a ? a->s() : fallback;
}

}  // namespace cleave::importer
