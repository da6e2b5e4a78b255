#!/usr/bin/python3
"""Writes small ONNX models (the fuzz seed corpus) with the onnx Python API: each exercises part of
the importer (Gemm/Relu, Conv/BatchNorm/pools, attention with a causal Where mask and a shape
chain feeding Reshape, the decomposed GELU and layer norm, an unknown op).
Usage: /usr/bin/python3 scripts/fuzz_seeds.py OUT_DIR"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def init(name, *shape, dtype=np.float32, value=None):
    a = np.full(shape, value, dtype=dtype) if value is not None else \
        (np.arange(int(np.prod(shape))) % 7).astype(dtype).reshape(shape)
    return numpy_helper.from_array(a, name)


def const(name, value, dtype=np.int64):
    return helper.make_node("Constant", [], [name],
                            value=numpy_helper.from_array(np.array(value, dtype=dtype)))


def model(name, nodes, inputs, outputs, inits, opset=17):
    g = helper.make_graph(nodes, name, inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(m)
    return m


def mlp():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 3])
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], transB=1),
             helper.make_node("Relu", ["h"], ["a"]),
             helper.make_node("Identity", ["b1"], ["b1_copy"]),
             helper.make_node("Gemm", ["a", "w2", "b2"], ["y"], transB=1)]
    return model("mlp", nodes, [x], [y],
                 [init("w1", 16, 8), init("b1", 16), init("w2", 3, 16), init("b2", 3)], 13)


def cnn():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 16, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5])
    nodes = [helper.make_node("Conv", ["x", "w", "cb"], ["c"], kernel_shape=[3, 3],
                              pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("BatchNormalization", ["c", "g", "b", "m", "v"], ["n"]),
             helper.make_node("Relu", ["n"], ["r"]),
             helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("AveragePool", ["p"], ["q"], kernel_shape=[1, 1]),
             helper.make_node("GlobalAveragePool", ["q"], ["gp"]),
             helper.make_node("Flatten", ["gp"], ["f"]),
             helper.make_node("Gemm", ["f", "fw", "fb"], ["y"], transB=1)]
    inits = [init("w", 4, 3, 3, 3), init("cb", 4), init("g", 4, value=1.0), init("b", 4, value=0.0),
             init("m", 4, value=0.0), init("v", 4, value=1.0), init("fw", 5, 4), init("fb", 5)]
    return model("cnn", nodes, [x], [y], inits, 15)


def attention():
    b, s, h, heads = 2, 4, 8, 2
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [b, s, h])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [b, s, h])
    nodes = [
        const("axes0", [0]),
        helper.make_node("Shape", ["x"], ["shape"]),
        const("i0", 0), const("i1", 1),
        helper.make_node("Gather", ["shape", "i0"], ["d0"]),
        helper.make_node("Gather", ["shape", "i1"], ["d1"]),
        helper.make_node("Unsqueeze", ["d0", "axes0"], ["u0"]),
        helper.make_node("Unsqueeze", ["d1", "axes0"], ["u1"]),
        const("rest", [heads, h // heads]),
        helper.make_node("Concat", ["u0", "u1", "rest"], ["qshape"], axis=0),
        helper.make_node("Transpose", ["wq"], ["wqT"], perm=[1, 0]),
        helper.make_node("MatMul", ["x", "wqT"], ["q"]),
        helper.make_node("Reshape", ["q", "qshape"], ["qh"]),
        helper.make_node("Transpose", ["qh"], ["qt"], perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["qh"], ["kt"], perm=[0, 2, 3, 1]),
        helper.make_node("MatMul", ["qt", "kt"], ["sc"]),
        const("scale", 2.0, np.float32),
        helper.make_node("Div", ["sc", "scale"], ["sd"]),
        helper.make_node("Not", ["mask"], ["nm"]),
        const("ninf", -np.inf, np.float32),
        helper.make_node("Where", ["nm", "ninf", "sd"], ["masked"]),
        helper.make_node("Softmax", ["masked"], ["att"], axis=-1),
        helper.make_node("MatMul", ["att", "qt"], ["o"]),
        helper.make_node("Transpose", ["o"], ["ot"], perm=[0, 2, 1, 3]),
        const("flat", [b, s, h]),
        helper.make_node("Reshape", ["ot", "flat"], ["of"]),
        helper.make_node("LayerNormalization", ["of", "g", "beta"], ["y"], axis=-1),
    ]
    mask = numpy_helper.from_array(np.tril(np.ones((s, s), dtype=bool)), "mask")
    return model("attention", nodes, [x], [y],
                 [init("wq", h, h), init("g", h, value=1.0), init("beta", h, value=0.0), mask])


def decomposed():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4, 8])
    nodes = [
        helper.make_node("ReduceMean", ["x"], ["m"], axes=[-1]),
        helper.make_node("Sub", ["x", "m"], ["d"]),
        const("two", 2.0, np.float32),
        helper.make_node("Pow", ["d", "two"], ["p"]),
        helper.make_node("ReduceMean", ["p"], ["v"], axes=[-1]),
        const("eps", 1e-5, np.float32),
        helper.make_node("Add", ["v", "eps"], ["ve"]),
        helper.make_node("Sqrt", ["ve"], ["sd"]),
        helper.make_node("Div", ["d", "sd"], ["n"]),
        helper.make_node("Mul", ["n", "g"], ["ng"]),
        helper.make_node("Add", ["ng", "b"], ["ln"]),
        const("sqrt2", 1.4142135, np.float32),
        helper.make_node("Div", ["ln", "sqrt2"], ["z"]),
        helper.make_node("Erf", ["z"], ["e"]),
        const("one", 1.0, np.float32),
        helper.make_node("Add", ["e", "one"], ["e1"]),
        helper.make_node("Mul", ["ln", "e1"], ["gx"]),
        const("half", 0.5, np.float32),
        helper.make_node("Mul", ["gx", "half"], ["y0"]),
        helper.make_node("Split", ["y0"], ["s0", "s1"], axis=2),
        helper.make_node("Concat", ["s1", "s0"], ["y1"], axis=2),
        const("starts", [0]), const("ends", [8]), const("axes", [2]),
        helper.make_node("Slice", ["y1", "starts", "ends", "axes"], ["y2"]),
        helper.make_node("Dropout", ["y2"], ["y"]),
    ]
    return model("decomposed", nodes, [x], [y], [init("g", 8, value=1.0), init("b", 8, value=0.0)])


def embedding():
    ids = helper.make_tensor_value_info("ids", TensorProto.INT64, [2, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 10])
    nodes = [helper.make_node("Gather", ["emb", "ids"], ["e"]),
             helper.make_node("ReduceMean", ["e"], ["m"], axes=[1], keepdims=0),
             helper.make_node("Tanh", ["m"], ["t"]),
             helper.make_node("Sigmoid", ["t"], ["s"]),
             helper.make_node("Cast", ["s"], ["c"], to=TensorProto.FLOAT),
             helper.make_node("MatMul", ["c", "w"], ["y"])]
    return model("embedding", nodes, [ids], [y], [init("emb", 50, 6), init("w", 6, 10)])


def unknown():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])
    return model("unknown", [helper.make_node("Softsign", ["x"], ["y"])], [x], [y], [])


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for make in (mlp, cnn, attention, decomposed, embedding, unknown):
        with open(os.path.join(out, make.__name__ + ".onnx"), "wb") as f:
            f.write(make().SerializeToString())


if __name__ == "__main__":
    main()
