// The input of fuzz/tdl_fuzz.cc and its replay in tests/tdl/fuzz_regressions_test.cc: a first
// line of shapes, `NAME=D1xD2x...` separated by commas (`NAME=` is a scalar; a name the statement
// reads and the line does not give gets shape [4]), then a TDL statement:
//   A=4x8,B=8x3
//   Y[i,j] = sum(k) A[i,k] * B[k,j]
// run_tdl_input parses the statement, binds it against those shapes, analyses the whole iteration
// space (extents, regions, FLOPs and bytes: the checked arithmetic of issue 23) and each half of a
// 2-way split of every dimension.
#pragma once

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "tdl/bound_op.h"
#include "tdl/parser.h"
#include "tdl/piece.h"

namespace cleave::fuzz {

// The shapes of the first line; a dimension that is not a number ends the shape there.
inline std::map<std::string, ir::Shape, std::less<>> parse_shapes(std::string_view line) {
  std::map<std::string, ir::Shape, std::less<>> shapes;
  while (!line.empty()) {
    std::size_t const comma = line.find(',');
    std::string_view item = line.substr(0, comma);
    line = comma == std::string_view::npos ? std::string_view{} : line.substr(comma + 1);
    std::size_t const eq = item.find('=');
    if (eq == std::string_view::npos) continue;
    ir::Shape& shape = shapes[std::string(item.substr(0, eq))];
    std::string_view dims = item.substr(eq + 1);
    while (!dims.empty()) {
      std::int64_t d = 0;
      auto [end, ec] = std::from_chars(dims.data(), dims.data() + dims.size(), d);
      if (ec != std::errc{}) break;
      shape.push_back(d);
      dims.remove_prefix(static_cast<std::size_t>(end - dims.data()));
      if (!dims.empty() && dims.front() == 'x')
        dims.remove_prefix(1);
      else
        break;
    }
  }
  return shapes;
}

// The first error of the steps above, the halves' included (an empty half is skipped), so that a
// regression input can say which one it must give. Shapes that are not valid (ir::is_valid_shape)
// are an error here: graphs never hold them, so the binder is never given one.
inline Status run_tdl_input(std::string_view input) {
  std::size_t const newline = input.find('\n');
  std::string_view const header = newline == std::string_view::npos ? "" : input.substr(0, newline);
  std::string_view const text =
      newline == std::string_view::npos ? input : input.substr(newline + 1);
  CLEAVE_TRY(tdl::Statement statement, tdl::parse_statement(text));
  auto const shapes = parse_shapes(header);
  tdl::BindContext context;
  for (std::string const& name : tdl::tensors_read(statement)) {
    auto it = shapes.find(name);
    ir::TensorType type{it == shapes.end() ? ir::Shape{4} : it->second, ir::DType::fp32};
    if (!ir::is_valid_shape(type.shape))
      return Error(ErrorCode::invalid_argument, "not a valid shape for " + name);
    context.inputs.emplace_back(name, std::move(type));
  }
  CLEAVE_TRY(auto bound, tdl::bind(statement, context));
  tdl::Box const box = tdl::full_box(*bound);
  if (auto whole = tdl::analyze_piece(*bound, box); !whole) return std::move(whole).error();
  for (std::size_t d = 0; d < box.size(); ++d)
    for (tdl::Box const& half : tdl::split_evenly(box, static_cast<int>(d), 2))
      if (auto piece = tdl::analyze_piece(*bound, half); !piece && tdl::box_volume(half) > 0)
        return std::move(piece).error();
  return Status::ok();
}

}  // namespace cleave::fuzz
