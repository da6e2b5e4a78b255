// Helpers shared by the gradient and optimizer ops (builtin_gradients_*.cc, builtin_optimizers.cc).
// A gradient op takes its forward op's attributes and checks its shapes against the forward op
// itself, so the two can never disagree on an attribute's meaning or an output size.
#pragma once

#include <string>
#include <vector>

#include "ops/builtin_util.h"

namespace cleave::ops::detail {

// The forward op's attribute specs (names, kinds, defaults, docs) followed by `extra`. The forward
// op must be registered first (OpRegistry::with_builtins adds the forward families first).
std::vector<AttrSpec> forward_attrs(OpRegistry const& registry, std::string const& forward,
                                    std::vector<AttrSpec> extra = {});

// The output type of the forward op for `inputs` and those of `attrs` that the forward op knows.
// The forward op must declare its output type (OpInstance::output). Its errors come back as the
// gradient op's: "conv2d_grad_input: conv2d: groups=3 must divide ...".
Expected<ir::TensorType> forward_output(OpRegistry const& registry, std::string const& op,
                                        std::string const& forward, ir::Attrs const& attrs,
                                        std::vector<ir::TensorType> const& inputs);

// An error unless `t` has shape `want`: "<op>: <name> is [..] but <why> gives [..]".
Status expect_shape(std::string const& op, std::string const& name, ir::TensorType const& t,
                    ir::Shape const& want, std::string const& why);
// An error unless every input has the shape of inputs[0]; `names` are the inputs' names.
Status expect_same_shapes(std::string const& op, std::vector<std::string> const& names,
                          std::span<ir::TensorType const> inputs);

// A shape given as an attribute (input_shape, shape): positive dimensions and, unless `rank` is
// -1, that rank.
Expected<ir::Shape> shape_attr(std::string const& op, ir::Attrs const& a, std::string const& name,
                               int rank);

std::string join(std::vector<std::string> const& parts, std::string const& sep = ",");

// A built-in schema taking exactly as many inputs as its example has.
OpSchema fixed_schema(std::string name, std::string summary, std::vector<AttrSpec> attrs,
                      std::vector<ir::TensorType> example, ir::Attrs example_attrs,
                      Instantiate instantiate);
void must_add(OpRegistry& registry, OpSchema schema);

}  // namespace cleave::ops::detail
