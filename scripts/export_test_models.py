#!/usr/bin/python3
"""Exports the ONNX test models into a directory (a ctest fixture runs this at test time; no
.onnx file is committed). Next to each MODEL.onnx it writes MODEL.json with PyTorch's parameter
count sum(p.numel()) and the export settings, for the tests to compare with cleave's import.

Usage: /usr/bin/python3 scripts/export_test_models.py OUT_DIR [MODEL ...]
Models are skipped when MODEL.onnx and MODEL.json exist and were written by this script's
current version (the sidecar records a hash of this file)."""
import hashlib
import json
import math
import os
import sys

import torch
import torch.nn as nn
import torchvision


class CausalSelfAttention(nn.Module):
    def __init__(self, hidden, heads, seq):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        self.register_buffer("mask", torch.tril(torch.ones(seq, seq, dtype=torch.bool)))

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(x).split(h, dim=2)
        d = h // self.heads
        q = q.view(b, s, self.heads, d).transpose(1, 2)
        k = k.view(b, s, self.heads, d).transpose(1, 2)
        v = v.view(b, s, self.heads, d).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d)
        att = att.masked_fill(~self.mask[:s, :s], float("-inf"))
        att = torch.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, s, h)
        return self.proj(y)


class DecomposedLayerNorm(nn.Module):
    """LayerNorm written out, as older exporters and hand-written models give it."""

    def __init__(self, hidden, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.bias = nn.Parameter(torch.zeros(hidden))
        self.eps = eps

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        var = (x - mean).pow(2).mean(-1, keepdim=True)
        return (x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias


class GptBlock(nn.Module):
    def __init__(self, hidden, heads, seq):
        super().__init__()
        self.ln1 = DecomposedLayerNorm(hidden)
        self.attn = CausalSelfAttention(hidden, heads, seq)
        self.ln2 = DecomposedLayerNorm(hidden)
        self.mlp = nn.Sequential(nn.Linear(hidden, 4 * hidden), nn.GELU(),
                                 nn.Linear(4 * hidden, hidden), nn.Dropout(0.1))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class Gpt(nn.Module):
    """A GPT-style decoder: token + position embeddings, pre-norm blocks, causal attention."""

    def __init__(self, vocab=1000, hidden=256, heads=4, layers=4, seq=128):
        super().__init__()
        self.tok = nn.Embedding(vocab, hidden)
        self.pos = nn.Embedding(seq, hidden)
        self.blocks = nn.Sequential(*[GptBlock(hidden, heads, seq) for _ in range(layers)])
        self.ln_f = DecomposedLayerNorm(hidden)
        self.head = nn.Linear(hidden, vocab, bias=False)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
        x = self.tok(ids) + self.pos(pos)
        x = self.ln_f(self.blocks(x))
        return self.head(x)  # [B, S, vocab]


class EncoderLayer(nn.Module):
    def __init__(self, hidden, heads, ffn):
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(hidden, hidden)
        self.k = nn.Linear(hidden, hidden)
        self.v = nn.Linear(hidden, hidden)
        self.o = nn.Linear(hidden, hidden)
        self.norm1 = nn.LayerNorm(hidden)
        self.ff1 = nn.Linear(hidden, ffn)
        self.ff2 = nn.Linear(ffn, hidden)
        self.norm2 = nn.LayerNorm(hidden)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        b, s, h = x.shape
        d = h // self.heads
        heads = lambda t: t.reshape(b, s, self.heads, d).permute(0, 2, 1, 3)
        att = torch.softmax(heads(self.q(x)) @ heads(self.k(x)).transpose(-1, -2) / math.sqrt(d),
                            dim=-1)
        y = (att @ heads(self.v(x))).permute(0, 2, 1, 3).reshape(b, s, h)
        x = self.norm1(x + self.drop(self.o(y)))
        return self.norm2(x + self.drop(self.ff2(torch.relu(self.ff1(x)))))


class TransformerEncoder(nn.Module):
    """A BERT-style encoder classifying the mean of its outputs."""

    def __init__(self, hidden=256, heads=4, layers=4, ffn=1024, classes=10):
        super().__init__()
        self.layers = nn.Sequential(*[EncoderLayer(hidden, heads, ffn) for _ in range(layers)])
        self.cls = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.cls(self.layers(x).mean(dim=1))  # [B, classes]


def models():
    tv = torchvision.models
    image = lambda batch: torch.randn(batch, 3, 224, 224)
    return {
        # name: (constructor, example input, opset)
        "resnet18": (lambda: tv.resnet18(weights=None), image(8), 13),
        "resnet50": (lambda: tv.resnet50(weights=None), image(8), 17),
        "resnet152": (lambda: tv.resnet152(weights=None), image(8), 17),
        "vgg19": (lambda: tv.vgg19(weights=None), image(8), 15),
        "wide_resnet50_2": (lambda: tv.wide_resnet50_2(weights=None), image(8), 17),
        "gpt": (Gpt, torch.randint(0, 1000, (8, 128)), 17),
        "transformer": (TransformerEncoder, torch.randn(8, 128, 256), 17),
    }


def script_version(script):
    """A hash of an export script: its models are re-exported when it changes."""
    with open(script, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:16]


def is_current(out, name, version):
    """Whether MODEL.onnx and MODEL.json exist and were written by this version of the script."""
    path, sidecar = os.path.join(out, name + ".onnx"), os.path.join(out, name + ".json")
    if not (os.path.exists(path) and os.path.exists(sidecar)):
        return False
    with open(sidecar) as f:
        return json.load(f).get("script") == version


def write_sidecar(out, name, meta):
    sidecar = os.path.join(out, name + ".json")
    with open(sidecar + ".tmp", "w") as f:
        json.dump(meta, f, indent=1)
    os.replace(sidecar + ".tmp", sidecar)


def main():
    out = sys.argv[1]
    wanted = sys.argv[2:]
    os.makedirs(out, exist_ok=True)
    version = script_version(__file__)
    torch.manual_seed(0)
    for name, (make, example, opset) in models().items():
        if (wanted and name not in wanted) or is_current(out, name, version):
            continue
        path = os.path.join(out, name + ".onnx")
        model = make().eval()
        params = sum(p.numel() for p in model.parameters())
        # No constant folding: shape sub-graphs stay for the importer to fold.
        # Training mode: batch norm stays a BatchNormalization with its scale and bias (eval mode
        # folds it into the preceding convolution, which would change the parameters).
        torch.onnx.export(model, (example,), path + ".tmp", opset_version=opset,
                          do_constant_folding=False, input_names=["input"],
                          output_names=["output"], training=torch.onnx.TrainingMode.TRAINING)
        os.replace(path + ".tmp", path)
        write_sidecar(out, name, {"model": name, "parameters": params, "opset": opset,
                                  "input_shape": list(example.shape), "script": version})
        print(f"exported {name}: {params} parameters, opset {opset}", flush=True)


if __name__ == "__main__":
    main()
