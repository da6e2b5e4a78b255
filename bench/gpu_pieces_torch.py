#!/usr/bin/env python3
"""Times cleave's compute pieces, and whole training steps of the same models, with PyTorch on a
GPU (issue 24 item 4). Runs on the GPU machine; nothing of cleave is needed there.

  gpu_pieces_torch.py --pieces PIECES.json [--out PROFILE.json] [--meta META.json]
                      [--steps-out STEPS.json] [--device cuda|cpu] [--budget-s S]

PIECES.json is `cleave compare MODEL --cluster C --algos ... --list-pieces PIECES.json`'s
cleave.pieces/1 list (several may be merged into one "pieces" array). For each piece it builds
random tensors of the piece's regions and dtypes and times the PyTorch call that runs it (below,
TIMERS) with CUDA events: 3 warm-up calls, then the median of 10 timed calls, each bracketed by its
own pair of events, so launch overhead is in the time as cleave.profile/1 asks. It writes
PROFILE.json (cleave.profile/1, one entry per line, keyed exactly as the piece list keys it) and
META.json (per piece: how it was timed, `faithful` or `proxy`, and the pieces skipped with why).
Both are rewritten every 25 pieces, so a run cut short still leaves what it measured.

With --steps-out it then measures whole training steps of the same models in plain PyTorch
(eager; SGD with momentum 0.9 as cleave's zoo trains them): torchvision's ResNet-50, a GPT-2 small
and a BERT-large written below with the zoo's shapes (explicit attention: matmul, scale, mask,
softmax, matmul, as the zoo's graphs have it), each in AMP bf16 (torch.autocast) and in fp32 with
TF32 enabled for cuDNN and cuBLAS (cleave's fp32 on an H100, docs/precision.md). The median of 10
steps after 3 warm-up steps, and samples/s. Pieces and steps alike run with TF32 enabled and
cudnn.benchmark on.

--device cpu is for a dry run of the script on a machine without a GPU (tiny piece lists only).
"""
import argparse
import datetime
import json
import math
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

ARGS = None
DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16,
          "int32": torch.int32, "int64": torch.int64}


# ---- attributes: cleave's Attrs::to_string() text, "name=value, ..." with lists as [1,1]

def parse_attrs(text):
    out = {}
    depth, start, parts = 0, 0, []
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if text.strip():
        parts.append(text[start:])
    for part in parts:
        name, value = part.strip().split("=", 1)
        out[name] = json.loads(value)
    return out


def pair(v):
    return list(v) if isinstance(v, list) else [v, v]


def conv_padding(attrs, x_shape, y_shape, kernel):
    """The symmetric padding torch takes for cleave's: where cleave pads asymmetrically (top,
    left, bottom, right: TF's SAME at stride 2), per axis whichever of the two sides gives the
    piece's own output size (the time differs by a row of zeros, the shapes agree)."""
    p = pair(attrs.get("padding", [0, 0]))
    if len(p) != 4:
        return p
    stride = pair(attrs.get("stride", 1))
    out = []
    for d in range(2):
        n, m, k, s = x_shape[2 + d], y_shape[2 + d], kernel[d], stride[d]
        fits = [v for v in (p[d], p[d + 2]) if (n + 2 * v - k) // s + 1 == m]
        out.append(fits[0] if fits else p[d])
    return out


# ---- tensors of a piece's regions

def rand(shape, dtype, high=None):
    dev = ARGS.device
    t = DTYPES[dtype]
    if t in (torch.int32, torch.int64):
        return torch.randint(0, max(1, high or 2), shape, dtype=t, device=dev)
    return torch.randn(shape, dtype=t, device=dev)


def inputs_of(piece, high=None):
    return [rand(r["shape"], r["dtype"], high) for r in piece["inputs"]]


def out_dtype(piece):
    return DTYPES[piece["output"]["dtype"]]


# ---- one builder per op type: returns a zero-argument function that runs the piece, and
# whether it is the op's faithful PyTorch equivalent ("faithful") or a stand-in ("proxy").

def t_conv2d(p, a):
    x, w = inputs_of(p)
    pad = conv_padding(a, x.shape, p["output"]["shape"], w.shape[2:])
    s, g = pair(a.get("stride", 1)), a.get("groups", 1)
    return (lambda: F.conv2d(x, w, None, s, pad, 1, g)), "faithful"


def t_conv2d_grad_input(p, a):
    dy, w = inputs_of(p)
    x = rand(p["output"]["shape"], p["output"]["dtype"])
    pad = conv_padding(a, x.shape, dy.shape, w.shape[2:])
    s, g = pair(a.get("stride", 1)), a.get("groups", 1)
    return (lambda: torch.ops.aten.convolution_backward(
        dy, x, w, None, s, pad, [1, 1], False, [0, 0], g, [True, False, False])), "faithful"


def t_conv2d_grad_weight(p, a):
    dy, x = inputs_of(p)
    w = rand(p["output"]["shape"], p["output"]["dtype"])
    pad = conv_padding(a, x.shape, dy.shape, w.shape[2:])
    s, g = pair(a.get("stride", 1)), a.get("groups", 1)
    return (lambda: torch.ops.aten.convolution_backward(
        dy, x, w, None, s, pad, [1, 1], False, [0, 0], g, [False, True, False])), "faithful"


def t_linear(p, a):
    x, w = inputs_of(p)
    return (lambda: F.linear(x, w)), "faithful"


def t_linear_grad_input(p, a):
    dy, w = inputs_of(p)
    return (lambda: torch.matmul(dy, w)), "faithful"


def t_linear_grad_weight(p, a):
    dy, x = inputs_of(p)
    dy2, x2 = dy.reshape(-1, dy.shape[-1]), x.reshape(-1, x.shape[-1])
    return (lambda: torch.matmul(dy2.t(), x2)), "faithful"


def t_batch_matmul(p, a):
    x, y = inputs_of(p)
    ta, tb = a.get("transpose_a", 0), a.get("transpose_b", 0)
    return (lambda: torch.matmul(x.transpose(-1, -2) if ta else x,
                                 y.transpose(-1, -2) if tb else y)), "faithful"


def t_elementwise(fn):
    def build(p, a):
        ins = inputs_of(p)
        return (lambda: fn(a, *ins)), "faithful"
    return build


def t_cast(p, a):
    x, = inputs_of(p)
    t = out_dtype(p)
    return (lambda: x.to(t)), "faithful"


def t_softmax_grad(p, a):
    dy, y = inputs_of(p)
    return (lambda: torch.ops.aten._softmax_backward_data(dy, y, a.get("axis", -1), y.dtype)
            ), "faithful"


def t_gelu_grad(p, a):
    dy, x = inputs_of(p)
    approx = a.get("approximate", "none")
    return (lambda: torch.ops.aten.gelu_backward(dy, x, approximate=approx)), "faithful"


def t_relu_grad(p, a):
    dy, y = inputs_of(p)
    return (lambda: torch.ops.aten.threshold_backward(dy, y, 0)), "faithful"


def t_layer_norm(p, a):
    x, g, b = inputs_of(p)
    eps = a.get("eps", 1e-5)
    return (lambda: F.layer_norm(x, (x.shape[-1],), g, b, eps)), "faithful"


def layer_norm_backward(p, a, mask):
    big = [r for r in p["inputs"] if len(r["shape"]) > 1][0]
    x = rand(big["shape"], big["dtype"])
    dy = rand(big["shape"], big["dtype"])
    h = x.shape[-1]
    g = torch.ones(h, dtype=x.dtype, device=x.device)
    _, mean, rstd = torch.native_layer_norm(x, [h], g, g, a.get("eps", 1e-5))
    return (lambda: torch.ops.aten.native_layer_norm_backward(dy, x, [h], mean, rstd, g, g, mask)
            ), "faithful"


def t_layer_norm_grad_input(p, a):
    return layer_norm_backward(p, a, [True, False, False])


def t_layer_norm_grad_gamma(p, a):
    return layer_norm_backward(p, a, [False, True, False])


def t_bn_mean(p, a):
    x, = inputs_of(p)
    dims = [0] + list(range(2, x.dim()))
    return (lambda: x.mean(dims)), "faithful"


def with_params(build, x):
    """Runs build(params) with fp32 statistics and affine parameters, as PyTorch keeps them under
    AMP (cuDNN's mixed-precision batch norm); where the device has no such kernel (CPU dry runs),
    with parameters in x's dtype."""
    c, dev = x.shape[1], x.device
    for dtype in (torch.float32, x.dtype):
        m, v = torch.zeros(c, dtype=dtype, device=dev), torch.ones(c, dtype=dtype, device=dev)
        fn = build(m, v, torch.ones(c, dtype=dtype, device=dev))
        try:
            fn()
            return fn
        except RuntimeError:
            if dtype == x.dtype:
                raise
    raise AssertionError("unreachable")


def t_bn_apply(p, a):
    r = p["inputs"][0]
    x = rand(r["shape"], r["dtype"])
    # Batch norm with given statistics: the normalising pass alone (cuDNN's forward-training
    # kernel also computes the statistics, which cleave prices as bn_mean).
    return with_params(lambda m, v, g: lambda: F.batch_norm(x, m, v, g, g, False, 0.0, 1e-5),
                       x), "faithful"


def bn_backward(p, mask):
    big = [r for r in p["inputs"] if len(r["shape"]) == 4 and r["shape"][0] > 0][0]
    x = rand(big["shape"], big["dtype"])
    dy = rand(big["shape"], big["dtype"])
    # Eval-mode backward: the input gradient's direct term alone (one element-wise pass), or the
    # per-channel reductions alone; cleave's other batch-norm gradient parts are fused. CUDA's
    # kernel wants the saved statistics even in eval mode: the running ones stand in.
    return with_params(lambda m, v, g: lambda: torch.ops.aten.native_batch_norm_backward(
        dy, x, g, m, v, m, v, False, 1e-5, mask), x), "faithful"


def t_bn_apply_grad_input(p, a):
    return bn_backward(p, [True, False, False])


def t_bn_apply_grad_gamma(p, a):
    return bn_backward(p, [False, True, True])


def t_global_avg_pool(p, a):
    x, = inputs_of(p)
    return (lambda: x.mean((2, 3), keepdim=True)), "faithful"


def t_global_avg_pool_grad(p, a):
    dy, = inputs_of(p)
    x = rand(p["output"]["shape"], p["output"]["dtype"])
    return (lambda: torch.ops.aten._adaptive_avg_pool2d_backward(dy, x)), "faithful"


def pool_args(a, x_shape, y_shape):
    k = pair(a["kernel"])
    return k, pair(a.get("stride", a["kernel"])), conv_padding(a, x_shape, y_shape, k)


def t_max_pool2d(p, a):
    x, = inputs_of(p)
    k, s, pad = pool_args(a, x.shape, p["output"]["shape"])
    return (lambda: F.max_pool2d(x, k, s, pad)), "faithful"


def t_max_pool2d_grad(p, a):
    x = rand(p["inputs"][0]["shape"], p["inputs"][0]["dtype"])
    k, s, pad = pool_args(a, x.shape, p["inputs"][1]["shape"])
    y, idx = F.max_pool2d(x, k, s, pad, return_indices=True)
    dy = torch.randn_like(y)
    return (lambda: torch.ops.aten.max_pool2d_with_indices_backward(
        dy, x, k, s, pad, [1, 1], False, idx)), "faithful"


def t_avg_pool2d(p, a):
    x, = inputs_of(p)
    k, s, pad = pool_args(a, x.shape, p["output"]["shape"])
    inc = bool(a.get("count_include_pad", 1))
    return (lambda: F.avg_pool2d(x, k, s, pad, False, inc)), "faithful"


def t_avg_pool2d_grad(p, a):
    x = rand(a["input_shape"], p["inputs"][0]["dtype"])
    k, s, pad = pool_args(a, x.shape, p["inputs"][0]["shape"])
    inc = bool(a.get("count_include_pad", 1))
    dy = torch.randn_like(F.avg_pool2d(x, k, s, pad, False, inc))
    return (lambda: torch.ops.aten.avg_pool2d_backward(
        dy, x, k, s, pad, False, inc, None)), "faithful"


def t_concat(p, a):
    xs = inputs_of(p)
    axis = a.get("axis", 0)
    return (lambda: torch.cat(xs, axis)), "faithful"


def slices_of(a, rank):
    index = [slice(None)] * rank
    for axis, b, e in zip(a["axes"], a["starts"], a["ends"]):
        index[axis] = slice(b, e)
    return tuple(index)


def t_slice(p, a):
    # cleave's slice makes a new tensor (a copy), as the runtime runs it; PyTorch would make a
    # view where the next op can read one.
    x, = inputs_of(p)
    index = slices_of(a, x.dim())
    return (lambda: x[index].clone()), "faithful"


def t_slice_grad(p, a):
    # PyTorch's slice_backward: zeros of the input's shape, then the gradient copied in.
    dy, = inputs_of(p)
    index = slices_of(a, len(a["input_shape"]))

    def run():
        dx = dy.new_zeros(a["input_shape"])
        dx[index] = dy
        return dx
    return run, "faithful"


def t_pad(p, a):
    # cleave's pads are ONNX's (every axis's begin, then every axis's end); F.pad takes
    # (begin, end) pairs from the last axis back.
    x, = inputs_of(p)
    pads, rank = a["pads"], x.dim()
    torch_pads = []
    for axis in reversed(range(rank)):
        torch_pads += [pads[axis], pads[axis + rank]]
    return (lambda: F.pad(x, torch_pads)), "faithful"


def t_cross_entropy(p, a):
    x = rand(p["inputs"][0]["shape"], p["inputs"][0]["dtype"])
    t = rand(p["inputs"][1]["shape"], p["inputs"][1]["dtype"], x.shape[-1])
    return (lambda: F.cross_entropy(x, t)), "faithful"


def t_cross_entropy_grad(p, a):
    # PyTorch's backward of cross_entropy: nll_loss's backward, then log_softmax's.
    x = rand(p["inputs"][0]["shape"], p["inputs"][0]["dtype"])
    t = rand(p["inputs"][1]["shape"], p["inputs"][1]["dtype"], x.shape[-1])
    ls = torch.log_softmax(x, -1)
    dl = torch.ones((), dtype=x.dtype, device=x.device)

    def run():
        g = torch.ops.aten.nll_loss_backward(dl, ls, t, None, 1, -100, dl)
        return torch.ops.aten._log_softmax_backward_data(g, ls, 1, x.dtype)
    return run, "faithful"


def t_embedding(p, a):
    w = rand(p["inputs"][0]["shape"], p["inputs"][0]["dtype"])
    i = rand(p["inputs"][1]["shape"], p["inputs"][1]["dtype"], w.shape[0])
    return (lambda: F.embedding(i, w)), "faithful"


def t_embedding_grad(p, a):
    vocab = a["vocab"]
    i = rand(p["inputs"][0]["shape"], p["inputs"][0]["dtype"], vocab)
    dy = rand(p["inputs"][1]["shape"], p["inputs"][1]["dtype"])
    return (lambda: torch.ops.aten.embedding_dense_backward(dy, i, vocab, -1, False)), "faithful"


def t_fill(p, a):
    y = torch.empty(p["output"]["shape"], dtype=out_dtype(p), device=ARGS.device)
    v = a.get("value", 0.0)
    return (lambda: y.fill_(v)), "faithful"


def t_sum_to_shape(p, a):
    x, = inputs_of(p)
    shape = p["output"]["shape"]  # the piece's part of attribute `shape` (a split's slice)
    lead = x.dim() - len(shape)
    dims = list(range(lead)) + [lead + d for d, n in enumerate(shape)
                                if n == 1 and x.shape[lead + d] != 1]
    return (lambda: x.sum(dims).reshape(shape)), "faithful"


def t_transpose(p, a):
    x, = inputs_of(p)
    perm = a["perm"]
    return (lambda: x.permute(perm).contiguous()), "faithful"


def t_proxy(p, a):
    # No PyTorch equivalent here: an element-wise copy moving the piece's bytes.
    n = max(1, int(p["bytes"]) // 2 // 2)
    src = torch.randn(n, dtype=torch.bfloat16, device=ARGS.device)
    dst = torch.empty_like(src)
    return (lambda: dst.copy_(src)), "proxy"


TIMERS = {
    "conv2d": t_conv2d, "conv2d_grad_input": t_conv2d_grad_input,
    "conv2d_grad_weight": t_conv2d_grad_weight, "linear": t_linear,
    "linear_grad_input": t_linear_grad_input, "linear_grad_weight": t_linear_grad_weight,
    "batch_matmul": t_batch_matmul, "cast": t_cast,
    "add": t_elementwise(lambda a, x, y: x + y),
    "scale": t_elementwise(lambda a, x: x * a.get("alpha", 1.0)),
    "relu": t_elementwise(lambda a, x: F.relu(x)), "relu_grad": t_relu_grad,
    "gelu": t_elementwise(lambda a, x: F.gelu(x, approximate=a.get("approximate", "none"))),
    "gelu_grad": t_gelu_grad,
    "softmax": t_elementwise(lambda a, x: torch.softmax(x, a.get("axis", -1))),
    "softmax_grad": t_softmax_grad,
    "layer_norm": t_layer_norm, "layer_norm_grad_input": t_layer_norm_grad_input,
    "layer_norm_grad_gamma": t_layer_norm_grad_gamma,
    "bn_mean": t_bn_mean, "bn_apply": t_bn_apply, "bn_apply_grad_input": t_bn_apply_grad_input,
    "bn_apply_grad_gamma": t_bn_apply_grad_gamma,
    "global_avg_pool": t_global_avg_pool, "global_avg_pool_grad": t_global_avg_pool_grad,
    "max_pool2d": t_max_pool2d, "max_pool2d_grad": t_max_pool2d_grad,
    "avg_pool2d": t_avg_pool2d, "avg_pool2d_grad": t_avg_pool2d_grad, "concat": t_concat,
    "slice": t_slice, "slice_grad": t_slice_grad, "pad": t_pad,
    "cross_entropy": t_cross_entropy, "cross_entropy_grad": t_cross_entropy_grad,
    "embedding": t_embedding, "embedding_grad": t_embedding_grad, "fill": t_fill,
    "sgd_momentum": t_elementwise(lambda a, v, g: torch.add(g, v, alpha=a.get("momentum", 0.9))),
    "sgd_update": t_elementwise(lambda a, w, d: torch.add(w, d, alpha=-a.get("lr", 0.01))),
    "sum_to_shape": t_sum_to_shape, "transpose": t_transpose,
}
# Priced at nothing by cleave's GPU model and run as no kernel by PyTorch: not timed.
NO_KERNEL = {"reshape": "a view: no kernel (the GPU model prices it at 0)"}


# ---- timing

def sync():
    if ARGS.device == "cuda":
        torch.cuda.synchronize()


def time_calls(fn, warmup, reps):
    """Seconds of each of `reps` calls after `warmup` calls: CUDA events around each call."""
    for _ in range(warmup):
        fn()
    sync()
    out = []
    if ARGS.device == "cuda":
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(reps)]
        for start, end in events:
            start.record()
            fn()
            end.record()
        torch.cuda.synchronize()
        out = [s.elapsed_time(e) / 1e3 for s, e in events]
    else:
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
    return out


def device_name():
    if ARGS.device == "cuda":
        return torch.cuda.get_device_name(0)
    return "cpu (dry run)"


def source_text():
    cudnn = torch.backends.cudnn.version() if ARGS.device == "cuda" else None
    return ("bench/gpu_pieces_torch.py: PyTorch %s (cuDNN %s), %s, TF32 on, cudnn.benchmark, "
            "CUDA events, median of %d calls after %d warm-ups, launch included, %s" % (
                torch.__version__, cudnn, device_name(), ARGS.reps, ARGS.warmup,
                datetime.date.today().isoformat()))


def write_profile(entries, meta):
    lines = []
    for e in sorted(entries, key=lambda e: (e["op"], e["attrs"], e["extents"], e["dtype"])):
        lines.append(json.dumps(e, separators=(",", ":")))
    text = ('{"format":"cleave.profile/1",\n"source":%s,\n"calibrations":[],\n"entries":[\n%s\n]}\n'
            % (json.dumps(source_text()), ",\n".join(lines)))
    with open(ARGS.out + ".tmp", "w") as f:
        f.write(text)
    os.replace(ARGS.out + ".tmp", ARGS.out)
    if ARGS.meta:
        with open(ARGS.meta + ".tmp", "w") as f:
            json.dump(meta, f, indent=0)
        os.replace(ARGS.meta + ".tmp", ARGS.meta)


def time_pieces(pieces, deadline):
    entries, meta = [], {"source": source_text(), "timed": [], "skipped": []}
    for n, p in enumerate(pieces):
        if time.time() > deadline:
            meta["skipped"].append({"op": p["op"], "extents": p["extents"],
                                    "why": "the run's time budget ran out"})
            continue
        if p["bytes"] > ARGS.max_bytes:
            meta["skipped"].append({"op": p["op"], "extents": p["extents"],
                                    "why": "moves more than --max-bytes"})
            continue
        if p["op"] in NO_KERNEL:
            meta["skipped"].append({"op": p["op"], "extents": p["extents"],
                                    "why": NO_KERNEL[p["op"]]})
            continue
        try:
            a = parse_attrs(p["attrs"])
            build = TIMERS.get(p["op"], t_proxy)
            fn, how = build(p, a)
            times = time_calls(fn, ARGS.warmup, ARGS.reps)
            del fn
        except Exception as e:  # a piece PyTorch cannot run as listed: said, not hidden
            meta["skipped"].append({"op": p["op"], "extents": p["extents"],
                                    "why": "%s: %s" % (type(e).__name__, str(e)[:200])})
            continue
        sec = max(statistics.median(times), 1e-9)
        entries.append({"op": p["op"], "attrs": p["attrs"], "extents": p["extents"],
                        "dtype": p["dtype"], "device_kind": p["device_kind"], "seconds": sec,
                        "samples": len(times)})
        meta["timed"].append({"op": p["op"], "attrs": p["attrs"], "extents": p["extents"],
                              "dtype": p["dtype"], "how": how, "seconds": sec,
                              "min_s": min(times), "roofline_s": p["roofline_s"]})
        if (n + 1) % 25 == 0:
            write_profile(entries, meta)
            print("%d/%d pieces" % (n + 1, len(pieces)), flush=True)
    write_profile(entries, meta)
    if ARGS.device == "cuda":
        torch.cuda.empty_cache()
    return entries, meta


# ---- whole training steps in plain PyTorch, with the zoo's shapes

class Block(torch.nn.Module):
    """A transformer block as the zoo writes it: separate q, k, v projections, explicit attention
    (scores, scale, optional causal mask, softmax, context), pre-LN (GPT) or post-LN (BERT)."""

    def __init__(self, hidden, heads, gelu, pre_ln):
        super().__init__()
        nn = torch.nn
        self.q, self.k, self.v = (nn.Linear(hidden, hidden) for _ in range(3))
        self.o = nn.Linear(hidden, hidden)
        self.fc, self.proj = nn.Linear(hidden, 4 * hidden), nn.Linear(4 * hidden, hidden)
        self.ln1, self.ln2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
        self.heads, self.gelu, self.pre_ln = heads, gelu, pre_ln

    def attn(self, x, mask):
        b, s, h = x.shape
        split = lambda t: t.view(b, s, self.heads, h // self.heads).transpose(1, 2)
        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(h // self.heads))
        if mask is not None:
            scores = scores + mask
        ctx = torch.matmul(torch.softmax(scores, -1), v)
        return self.o(ctx.transpose(1, 2).reshape(b, s, h))

    def mlp(self, x):
        return self.proj(F.gelu(self.fc(x), approximate=self.gelu))

    def forward(self, x, mask):
        if self.pre_ln:
            x = x + self.attn(self.ln1(x), mask)
            return x + self.mlp(self.ln2(x))
        x = self.ln1(x + self.attn(x, mask))
        return self.ln2(x + self.mlp(x))


class Transformer(torch.nn.Module):
    def __init__(self, layers, hidden, heads, seq, vocab, gpt):
        super().__init__()
        nn = torch.nn
        self.wte, self.wpe = nn.Embedding(vocab, hidden), nn.Embedding(seq, hidden)
        self.tte = None if gpt else nn.Embedding(2, hidden)
        self.ln_emb = None if gpt else nn.LayerNorm(hidden)
        self.blocks = nn.ModuleList(Block(hidden, heads, "tanh" if gpt else "none", gpt)
                                    for _ in range(layers))
        self.ln_f = nn.LayerNorm(hidden)
        self.transform = None if gpt else nn.Linear(hidden, hidden)
        self.bias = None if gpt else nn.Parameter(torch.zeros(vocab))
        self.gpt = gpt
        if gpt:
            self.register_buffer("mask", torch.full((seq, seq), -1e4).triu(1))

    def forward(self, ids, labels):
        s = ids.shape[1]
        pos = torch.arange(s, device=ids.device)
        x = self.wte(ids) + self.wpe(pos)
        if not self.gpt:
            x = self.ln_emb(x + self.tte(torch.zeros_like(ids)))
        mask = self.mask if self.gpt else None
        for blk in self.blocks:
            x = blk(x, mask)
        if self.gpt:
            logits = F.linear(self.ln_f(x), self.wte.weight)
        else:
            x = self.ln_f(F.gelu(self.transform(x)))
            logits = F.linear(x, self.wte.weight, self.bias)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1))


def make_model(name):
    dev = ARGS.device
    if name.startswith("resnet50"):
        import torchvision
        batch = int(name.split("b")[-1])
        model = torchvision.models.resnet50().to(dev)
        x = torch.randn(batch, 3, 224, 224, device=dev)
        if "_nhwc" in name:  # channels-last, as NVIDIA's and timm's training scripts run it
            model = model.to(memory_format=torch.channels_last)
            x = x.contiguous(memory_format=torch.channels_last)
        y = torch.randint(0, 1000, (batch,), device=dev)
        return model, lambda: F.cross_entropy(model(x).float(), y), batch
    if name.startswith("nasnetalarge"):  # timm's NASNet-A Large (6 @ 4032), 331x331
        import timm
        batch = int(name.split("_b")[-1])
        model = timm.create_model("nasnetalarge", pretrained=False).to(dev)
        x = torch.randn(batch, 3, 331, 331, device=dev)
        y = torch.randint(0, 1000, (batch,), device=dev)
        return model, lambda: F.cross_entropy(model(x).float(), y), batch
    if name.startswith("gpt2"):
        cfg = dict(layers=12, hidden=768, heads=12, seq=1024, vocab=50257, gpt=True)
    else:
        cfg = dict(layers=24, hidden=1024, heads=16, seq=512, vocab=30522, gpt=False)
    batch = int(name.split("b")[-1])
    if ARGS.device == "cpu":
        cfg.update(layers=1, seq=64)
    model = Transformer(**cfg).to(dev)
    ids = torch.randint(0, cfg["vocab"], (batch, cfg["seq"]), device=dev)
    labels = torch.randint(0, cfg["vocab"], (batch, cfg["seq"]), device=dev)
    return model, lambda: model(ids, labels), batch


def time_step(name, precision):
    model, loss_fn, batch = make_model(name)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    amp = precision == "amp-bf16"

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(ARGS.device, dtype=torch.bfloat16, enabled=amp):
            loss = loss_fn()
        loss.backward()
        opt.step()
    times = time_calls(step, ARGS.step_warmup, ARGS.step_reps)
    med = statistics.median(times)
    out = {"model": name, "precision": precision, "batch": batch, "median_step_s": med,
           "min_step_s": min(times), "samples_per_s": batch / med, "steps": len(times)}
    out.update(kernel_summary(step))
    if ARGS.device == "cuda":
        out["peak_memory_bytes"] = torch.cuda.max_memory_allocated()
        torch.cuda.reset_peak_memory_stats()
    del model, opt
    if ARGS.device == "cuda":
        torch.cuda.empty_cache()
    return out


def kernel_summary(step):
    """One more step under PyTorch's profiler: how many GPU kernels it ran and their summed
    time, beside the step's time (the gap is launch overhead and idle GPU)."""
    if ARGS.device != "cuda":
        return {}
    try:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            step()
            torch.cuda.synchronize()
        # GPU-side ranges of annotations (the optimizer's step) overlap kernels: left out.
        kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA
                   and not getattr(e, "is_user_annotation", False)
                   and not e.name.startswith("Optimizer.")]
        by_name = {}
        for e in kernels:
            by_name[e.name] = by_name.get(e.name, 0.0) + e.time_range.elapsed_us() / 1e6
        top = sorted(by_name.items(), key=lambda kv: -kv[1])[:15]
        return {"kernels": len(kernels), "kernel_s": sum(by_name.values()),
                "top_kernels": [[n[:120], t] for n, t in top]}
    except Exception as e:  # the profiler is a help, not the measurement
        return {"kernel_summary_error": "%s: %s" % (type(e).__name__, str(e)[:200])}


STEP_MODELS = ["resnet50_b256", "resnet50_nhwc_b256", "gpt2_b8", "bertlarge_b8"]


def time_steps(deadline):
    results = {"source": source_text(), "steps": []}
    models = STEP_MODELS if ARGS.device == "cuda" else ["resnet50_b2", "gpt2_b1", "bertlarge_b1"]
    if ARGS.step_models:
        models = ARGS.step_models.split(",")
    for name in models:
        for precision in ARGS.step_precisions.split(","):
            if time.time() > deadline:
                results["steps"].append({"model": name, "precision": precision,
                                         "error": "the run's time budget ran out"})
                continue
            try:
                r = time_step(name, precision)
            except Exception as e:
                r = {"model": name, "precision": precision,
                     "error": "%s: %s" % (type(e).__name__, str(e)[:300])}
            print(json.dumps(r), flush=True)
            results["steps"].append(r)
            with open(ARGS.steps_out, "w") as f:
                json.dump(results, f, indent=1)
    return results


def main():
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pieces", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--meta", default="")
    ap.add_argument("--steps-out", default="")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--budget-s", type=float, default=260, help="for the pieces")
    ap.add_argument("--steps-budget-s", type=float, default=130)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--step-models", default="",
                    help="comma-separated steps to time instead of the default ones "
                         "(" + ",".join(STEP_MODELS) + ", nasnetalarge_bN)")
    ap.add_argument("--step-precisions", default="amp-bf16,tf32")
    ap.add_argument("--step-warmup", type=int, default=3)
    ap.add_argument("--step-reps", type=int, default=10)
    ap.add_argument("--limit", type=int, default=0, help="time only the first N pieces")
    ap.add_argument("--max-bytes", type=float, default=8e9,
                    help="skip pieces that read and write more (their inputs must fit the GPU)")
    ARGS = ap.parse_args()
    torch.manual_seed(0)
    # cleave's fp32 on an A100 or H100 is TF32 (docs/precision.md); cuDNN picks its fastest
    # algorithm per shape, as training scripts (NVIDIA's among them) ask it to.
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    torch.backends.cudnn.benchmark = True
    with open(ARGS.pieces) as f:
        pieces = json.load(f)["pieces"]
    if ARGS.limit:
        pieces = pieces[:ARGS.limit]
    print("torch %s on %s: %d pieces" % (torch.__version__, device_name(), len(pieces)),
          flush=True)
    t0 = time.time()
    entries, meta = time_pieces(pieces, t0 + ARGS.budget_s)
    print("timed %d pieces, skipped %d, in %.0f s" % (len(entries), len(meta["skipped"]),
                                                      time.time() - t0), flush=True)
    if ARGS.steps_out:
        t1 = time.time()
        time_steps(t1 + ARGS.steps_budget_s)
        print("steps in %.0f s" % (time.time() - t1), flush=True)


if __name__ == "__main__":
    sys.exit(main())
