#!/usr/bin/python3
"""Exports the models of the import's coverage tests to ONNX (a ctest fixture runs it at test
time; no .onnx file is committed): one model of every torchvision (0.14) classification family,
and PyTorch's own transformer encoder and decoder layers. Next to each MODEL.onnx it writes
MODEL.json with PyTorch's parameter count sum(p.numel()), the input shape and the mode the model
was exported in.

Each model is exported in training mode (batch norm keeps its batch statistics and parameters,
dropout stays) with a small image: the smallest side the model accepts (32 for most), since the
import, the plans and `cleave run --check` need the graph, not ImageNet's resolution. The batch is
8 (batch norm over fewer samples is too ill-conditioned for --check's tolerance), 2 for the four
models whose side is 224 or more (tracing runs the model: their export would take minutes).
Stochastic depth stays in eval mode (the identity): PyTorch 1.13 cannot export its Bernoulli draw.
swin_v2_t is left out: PyTorch 1.13 cannot export it in either mode (its attention zeroes part of
a bias in place, aten::zero, which has no ONNX symbolic).

The weights' bytes are never read by cleave (it needs an initializer's shape, not its values), so
each float initializer of 4 KiB or more is written as external data in MODEL.weights, a sparse
file of zeros: the models take a few MB on disk instead of 1.5 GB, and exporting is mostly
tracing (about a minute for all of them).

Usage: /usr/bin/python3 scripts/export_coverage_models.py OUT_DIR [MODEL ...]
A model is skipped when MODEL.onnx and MODEL.json exist and were written by this script's current
version (the sidecar records a hash of this file)."""
import io
import os
import sys
import time
import warnings

import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

from export_test_models import is_current, script_version, write_sidecar

BATCH = 8
LARGE_IMAGE_BATCH = 2

# torchvision name: (constructor keyword arguments, image side). PyTorch exports an adaptive pool
# only when its output divides its input: AlexNet's 6x6, VGG's 7x7 and GoogLeNet's auxiliary 4x4
# set their sides; Inception's auxiliary head needs a 17x17 map (299), MaxViT's partitions 224;
# ViT's patch grid is a constructor argument.
TORCHVISION = {
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
    "vgg11_bn": ({}, 224),
    "vit_b_16": ({"image_size": 32}, 32),
    "wide_resnet50_2": ({}, 32),
}


class TorchEncoder(nn.Module):
    """nn.TransformerEncoder (GELU, erf form) under the causal float mask of
    nn.Transformer.generate_square_subsequent_mask (a Trilu folded at import), classifying the
    mean of its outputs."""

    def __init__(self, d=64, heads=4, layers=2, classes=10):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.1, activation="gelu",
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.cls = nn.Linear(d, classes)

    def forward(self, x):
        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1])
        return self.cls(self.encoder(x, mask=mask).mean(dim=1))


class TorchDecoder(nn.Module):
    """A language model on nn.TransformerDecoder: pre-norm layers with GELU's tanh form, a boolean
    causal mask (masked_fill: Where), cross-attention to the prompt encoded by an
    nn.TransformerEncoderLayer."""

    def __init__(self, vocab=100, d=64, heads=4, layers=2, seq=16):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.zeros(1, seq, d))
        layer = nn.TransformerDecoderLayer(d, heads, 4 * d, dropout=0.1,
                                           activation=lambda t: F.gelu(t, approximate="tanh"),
                                           batch_first=True, norm_first=True)
        self.decoder = nn.TransformerDecoder(layer, layers)
        self.memory = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.1, batch_first=True)
        self.head = nn.Linear(d, vocab)

    def forward(self, ids):
        s = ids.shape[1]
        x = self.tok(ids) + self.pos[:, :s]
        mask = torch.triu(torch.ones(s, s, dtype=torch.bool), diagonal=1)
        return self.head(self.decoder(x, self.memory(x), tgt_mask=mask))  # [B, S, vocab]


def models():
    """name: (constructor, example input)."""
    out = {}
    for name, (kwargs, side) in TORCHVISION.items():
        make = lambda name=name, kwargs=kwargs: getattr(torchvision.models, name)(weights=None,
                                                                                  **kwargs)
        batch = BATCH if side < 224 else LARGE_IMAGE_BATCH
        out[name] = (make, lambda side=side, batch=batch: torch.randn(batch, 3, side, side))
    # A small ViT (the family's code, two layers of width 64) for `cleave run --check`, which on
    # vit_b_16's 86M parameters takes half a minute.
    out["vit_small"] = (lambda: torchvision.models.VisionTransformer(
        image_size=32, patch_size=8, num_layers=2, num_heads=4, hidden_dim=64, mlp_dim=128),
        lambda: torch.randn(BATCH, 3, 32, 32))
    out["torch_encoder"] = (TorchEncoder, lambda: torch.randn(BATCH, 16, 64))
    out["torch_decoder"] = (TorchDecoder, lambda: torch.randint(0, 100, (BATCH, 16)))
    return out


def strip_weights(model, weights_path):
    """Large float initializers become external data in a sparse file of zeros (cleave never
    opens it: the shapes are in the model; the file is there for onnx's checker)."""
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


def export(make, example, path):
    model = make()
    params = sum(p.numel() for p in model.parameters())
    model.train()
    mode = "training"
    for m in model.modules():
        if isinstance(m, torchvision.ops.StochasticDepth):
            m.eval()
            mode = "training, stochastic depth off"
    buf = io.BytesIO()
    # No constant folding: shape sub-graphs stay for the importer to fold. PRESERVE keeps the
    # modules' modes as set above (TRAINING would switch stochastic depth back on).
    torch.onnx.export(model, (example,), buf, opset_version=17, do_constant_folding=False,
                      input_names=["input"], training=torch.onnx.TrainingMode.PRESERVE)
    proto = onnx.load_from_string(buf.getvalue())
    strip_weights(proto, path[:-len(".onnx")] + ".weights")
    onnx.save(proto, path + ".tmp")
    os.replace(path + ".tmp", path)
    return params, list(example.shape), mode


def main():
    # PyTorch's exporter warns about every in-place op of training mode (batch norm's running
    # statistics); the log should show what was exported.
    warnings.filterwarnings("ignore", category=UserWarning)
    out = sys.argv[1]
    wanted = sys.argv[2:]
    os.makedirs(out, exist_ok=True)
    version = script_version(__file__)
    torch.manual_seed(0)
    failed = []
    for name, (make, example) in models().items():
        if (wanted and name not in wanted) or is_current(out, name, version):
            continue
        start = time.time()
        try:
            params, shape, mode = export(make, example(), os.path.join(out, name + ".onnx"))
        except Exception as e:  # noqa: BLE001 (report every model that does not export)
            failed.append(name)
            print(f"FAILED {name}: {type(e).__name__}: {str(e)[:300]}", flush=True)
            continue
        write_sidecar(out, name, {"model": name, "parameters": params, "opset": 17,
                                  "input_shape": shape, "mode": mode, "script": version})
        print(f"exported {name}: {params} parameters, {time.time() - start:.1f} s", flush=True)
    if failed:
        sys.exit("not exported: " + " ".join(failed))


if __name__ == "__main__":
    main()
