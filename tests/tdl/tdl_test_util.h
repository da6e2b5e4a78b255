// Parsing and binding a statement in one call, for tests.
#pragma once

#include <gtest/gtest.h>

#include "tdl/bound_op.h"
#include "tdl/parser.h"

namespace cleave::tdl::testing {

inline ir::TensorType f32(ir::Shape s) {
  return {std::move(s), ir::DType::fp32};
}

// Binds `text` or returns the error.
inline Expected<std::shared_ptr<BoundOp const>> try_bind(std::string const& text,
                                                         BindContext const& ctx) {
  auto st = parse_statement(text);
  if (!st) return std::move(st).error();
  return bind(*st, ctx);
}

inline std::shared_ptr<BoundOp const> must_bind(std::string const& text, BindContext const& ctx) {
  auto op = try_bind(text, ctx);
  EXPECT_TRUE(op.has_value()) << (op ? "" : op.error().to_string());
  return op ? *op : nullptr;
}

}  // namespace cleave::tdl::testing
