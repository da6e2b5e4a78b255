// The `opaque` op: an ONNX op cleave has no semantics for, imported with --allow-opaque. TDL
// states what it reads (every input whole, the batch rows of inputs that share the output's first
// dimension) but not what it computes, so pieces can be planned on the batch dimension only; its
// output shape is what ONNX shape inference gave. Its gradient (autodiff) is another opaque op.
#pragma once

#include "ops/op_registry.h"

namespace cleave::importer {

// Registers `opaque` (attributes: onnx_op, shape, dtype). Called at start-up by the programs that
// import ONNX models (explicit registration, STYLE.md #7).
void add_import_ops(ops::OpRegistry& registry);

}  // namespace cleave::importer
