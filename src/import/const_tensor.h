// Small tensors whose values the importer knows: ONNX constants, integer initializers and what
// folds from them (the Shape -> Gather -> Unsqueeze -> Concat chains that exporters emit to
// compute the shape of a Reshape). Values are held as doubles, which is exact for the integers
// of shapes and indices.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "support/status.h"

namespace onnx {
class TensorProto;
class NodeProto;
}  // namespace onnx

namespace cleave::importer {

// ONNX element types the importer tells apart (TensorProto.DataType values).
enum class Elem : int { floating = 1, integer = 7, boolean = 9 };

struct ConstTensor {
  std::vector<std::int64_t> dims;
  std::vector<double> values;  // row-major, num_elements(dims) of them
  Elem elem = Elem::floating;

  std::int64_t size() const { return static_cast<std::int64_t>(values.size()); }
  // The values as integers (shapes, axes, indices).
  std::vector<std::int64_t> ints() const;
};

// Constants larger than this are not folded (a causal mask of 4096 x 4096 still fits).
inline constexpr std::int64_t kMaxConstElements = std::int64_t{1} << 25;

// The values of a TensorProto held in the file (raw or typed fields), or an error naming the
// tensor when they are external or of an element type the importer does not read.
Expected<ConstTensor> read_tensor(onnx::TensorProto const& t);

// The element class of an ONNX data type (float, double, float16, bfloat16 -> floating; bool ->
// boolean; other integers -> integer); nullopt for strings and complex numbers.
std::optional<Elem> elem_of(int onnx_data_type);

// Evaluates a node whose inputs are all known (absent optional inputs are nullopt). nullopt when
// the op type is not one the folder evaluates; an Error when the values do not fit the op.
std::optional<Expected<std::vector<ConstTensor>>>
fold_node(onnx::NodeProto const& node, std::vector<std::optional<ConstTensor>> const& inputs);

}  // namespace cleave::importer
