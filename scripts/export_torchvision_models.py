#!/usr/bin/python3
"""Exports one model of every torchvision (0.14) classification family to ONNX, for the import
tests (a ctest fixture runs it at test time; no .onnx file is committed). Next to each MODEL.onnx
it writes MODEL.json with PyTorch's parameter count sum(p.numel()), the input shape and the mode
the model was exported in.

Each model is exported in training mode (batch norm keeps its batch statistics and parameters,
dropout and stochastic depth stay) with a small image (the smallest size the model accepts, up to
64x64) and batch 2: the import, the plans and `cleave run --check` need the graph, not ImageNet's
resolution. The weights' bytes are never read by cleave (it needs an initializer's shape, not its
values), so each initializer of 4 KiB or more is written as external data in MODEL.weights, a
sparse file of zeros: the models take a few MB on disk instead of 1.5 GB, and exporting is mostly
tracing.

Usage: /usr/bin/python3 scripts/export_torchvision_models.py OUT_DIR [MODEL ...]
A model is skipped when MODEL.onnx and MODEL.json exist and were written by this script's current
version (the sidecar records a hash of this file)."""
import hashlib
import io
import json
import os
import sys
import time

import onnx
import torch
import torchvision

# name: (constructor keyword arguments, image side). The side is the smallest the model takes
# (MaxViT's partitions fix theirs; ViT's is a constructor argument; PyTorch exports an adaptive
# pool only when its output divides its input: AlexNet's 6x6, VGG's 7x7 and GoogLeNet's auxiliary
# 4x4; Inception's auxiliary head needs a 17x17 map).
MODELS = {
    "alexnet": ({}, 224),
    "convnext_tiny": ({}, 32),
    "densenet121": ({}, 32),
    "efficientnet_b0": ({}, 32),
    "efficientnet_v2_s": ({}, 32),
    "googlenet": ({}, 64),
    "inception_v3": ({}, 299),
    "maxvit_t": ({}, 224),
    "mnasnet0_5": ({}, 32),
    "mobilenet_v2": ({}, 32),
    "mobilenet_v3_large": ({}, 32),
    "regnet_x_400mf": ({}, 32),
    "regnet_y_400mf": ({}, 32),
    "resnet18": ({}, 32),
    "resnext50_32x4d": ({}, 32),
    "shufflenet_v2_x0_5": ({}, 32),
    "squeezenet1_0": ({}, 32),
    "swin_t": ({}, 32),
    "swin_v2_t": ({}, 32),
    "vgg11_bn": ({}, 224),
    "vit_b_16": ({"image_size": 32}, 32),
    "wide_resnet50_2": ({}, 32),
}
BATCH = 8


def strip_weights(model, weights_path):
    """Large float initializers become external data in a sparse file of zeros (cleave never opens it:
    the shapes are in the model; the file is there for onnx's checker)."""
    offset = 0
    for t in model.graph.initializer:
        if t.data_type == onnx.TensorProto.FLOAT and len(t.raw_data) >= 4096:
            length = len(t.raw_data)
            t.ClearField("raw_data")
            t.data_location = onnx.TensorProto.EXTERNAL
            for key, value in (("location", os.path.basename(weights_path)),
                               ("offset", str(offset)), ("length", str(length))):
                entry = t.external_data.add()
                entry.key, entry.value = key, value
            offset += length
    with open(weights_path, "wb") as f:
        f.truncate(offset)


def to_onnx(model, example, stochastic_depth):
    """The model in training mode; stochastic depth (whose Bernoulli draw PyTorch 1.13 cannot
    export) in eval mode, where it is the identity, when `stochastic_depth` is False. Training
    mode keeps batch norm as BatchNormalization with its parameters (eval mode would fold it into
    the convolution) and keeps dropout."""
    model.train()
    if not stochastic_depth:
        for m in model.modules():
            if isinstance(m, torchvision.ops.StochasticDepth):
                m.eval()
    buf = io.BytesIO()
    # No constant folding: shape sub-graphs stay for the importer to fold. PRESERVE: the modules'
    # own modes as set above.
    torch.onnx.export(model, (example,), buf, opset_version=17, do_constant_folding=False,
                      input_names=["input"], training=torch.onnx.TrainingMode.PRESERVE)
    return buf


def export(name, kwargs, side, path):
    model = getattr(torchvision.models, name)(weights=None, **kwargs)
    params = sum(p.numel() for p in model.parameters())
    example = torch.randn(BATCH, 3, side, side)
    mode = "training"
    if any(isinstance(m, torchvision.ops.StochasticDepth) for m in model.modules()):
        mode = "training, stochastic depth off"
    buf = to_onnx(model, example, stochastic_depth=mode == "training")
    proto = onnx.load_from_string(buf.getvalue())
    strip_weights(proto, path[:-len(".onnx")] + ".weights")
    onnx.save(proto, path + ".tmp")
    os.replace(path + ".tmp", path)
    return params, list(example.shape), mode


def main():
    out = sys.argv[1]
    wanted = sys.argv[2:]
    os.makedirs(out, exist_ok=True)
    with open(__file__, "rb") as f:
        version = hashlib.sha256(f.read()).hexdigest()[:16]
    torch.manual_seed(0)
    failed = []
    for name, (kwargs, side) in MODELS.items():
        if wanted and name not in wanted:
            continue
        path = os.path.join(out, name + ".onnx")
        sidecar = os.path.join(out, name + ".json")
        if os.path.exists(path) and os.path.exists(sidecar):
            with open(sidecar) as f:
                if json.load(f).get("script") == version:
                    continue
        start = time.time()
        try:
            params, shape, mode = export(name, kwargs, side, path)
        except Exception as e:  # noqa: BLE001 (report every model that does not export)
            failed.append(name)
            print(f"FAILED {name}: {type(e).__name__}: {str(e)[:300]}", flush=True)
            continue
        meta = {"model": name, "parameters": params, "opset": 17, "input_shape": shape, "mode": mode,
                "script": version}
        with open(sidecar + ".tmp", "w") as f:
            json.dump(meta, f, indent=1)
        os.replace(sidecar + ".tmp", sidecar)
        print(f"exported {name}: {params} parameters, {time.time() - start:.1f} s", flush=True)
    if failed:
        sys.exit("not exported: " + " ".join(failed))


if __name__ == "__main__":
    main()
