#!/usr/bin/python3
"""cleave's runtime against PyTorch on the same models, one and two cores (issue 22).

Each model is written once in PyTorch, exported to ONNX (static shapes, training mode) and run
by both: PyTorch trains the module, cleave imports the ONNX file, plans it and runs `cleave run`.
Both train with SGD, momentum 0.9, lr 0.01 (cleave's training graph) against cross-entropy on
random labels. Step times are medians of the measured steps
after warm-up ones, taken in rounds (cleave, then PyTorch, per model and round) so that a shared
machine's load falls on both alike.

One core: cleave's `single` plan on cpu:devices=1 with `--threads 1` against PyTorch with
torch.set_num_threads(1). Two cores: the best measured of cleave's plans on cpu:devices=2 (and
the single plan on both cores, `--threads 2`) against PyTorch with 2 threads and PyTorch DDP (2
processes over gloo, one thread each, each half the batch).

Usage: /usr/bin/python3 bench/peer_pytorch.py --cleave build-release/cleave [--models a,b]
       [--steps N] [--rounds R] [--no-two-cores]
       /usr/bin/python3 bench/peer_pytorch.py --cleave ... --ops MODEL [--threads N]  # op by op
Writes the markdown table to stdout (bench/run.sh keeps it in bench/results/peer_pytorch.md).
"""
import argparse
import collections
import ctypes
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

LR, MOMENTUM = 0.01, 0.9


class Mlp(nn.Module):
    """The zoo's `mlp` (defaults): 784 -> 3 x (1024, relu) -> 10."""

    def __init__(self, layers=3, hidden=1024, inputs=784, classes=10):
        super().__init__()
        dims = [inputs] + [hidden] * layers
        self.hidden = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims, dims[1:]))
        self.classifier = nn.Linear(hidden, classes)

    def forward(self, x):
        for layer in self.hidden:
            x = torch.relu(layer(x))
        return self.classifier(x)


class Block(nn.Module):
    """A pre-norm GPT block: causal self-attention and a GELU MLP (no dropout)."""

    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        self.ln2 = nn.LayerNorm(hidden)
        self.fc1 = nn.Linear(hidden, 4 * hidden)
        self.fc2 = nn.Linear(4 * hidden, hidden)

    def attention(self, x):
        b, s, h = x.shape
        d = h // self.heads
        q, k, v = self.qkv(x).split(h, dim=2)
        q, k, v = (t.view(b, s, self.heads, d).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d)
        # Built here, not a buffer: gloo (DDP) cannot broadcast bool buffers; exported, it folds.
        mask = torch.tril(torch.ones(s, s, dtype=torch.bool))
        att = torch.softmax(att.masked_fill(~mask, float("-inf")), dim=-1)
        return self.proj((att @ v).transpose(1, 2).reshape(b, s, h))

    def forward(self, x):
        x = x + self.attention(self.ln1(x))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class Gpt(nn.Module):
    """A small GPT language model: token and position embeddings, blocks, a vocabulary head."""

    def __init__(self, vocab=2000, hidden=256, heads=4, layers=2, seq=64):
        super().__init__()
        self.tok = nn.Embedding(vocab, hidden)
        self.pos = nn.Embedding(seq, hidden)
        self.blocks = nn.Sequential(*[Block(hidden, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, vocab, bias=False)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1]).unsqueeze(0)
        return self.head(self.ln_f(self.blocks(self.tok(ids) + self.pos(pos))))


def models():
    """name: (constructor, input, label shape, what it is)."""
    tv = torchvision.models
    images = lambda batch, side: torch.randn(batch, 3, side, side)
    return {
        "mlp": (Mlp, torch.randn(64, 784), (64,), "zoo `mlp`: 3 x 1024, batch 64"),
        "resnet18": (lambda: tv.resnet18(num_classes=10), images(16, 32), (16,),
                     "torchvision ResNet-18, 32x32 images, batch 16"),
        "gpt": (Gpt, torch.randint(0, 2000, (8, 64)), (8, 64),
                "GPT, 2 layers, hidden 256, 4 heads, seq 64, vocab 2000, batch 8"),
        "mobilenet_v2": (lambda: tv.mobilenet_v2(num_classes=10), images(16, 32), (16,),
                         "torchvision MobileNet-v2, 32x32 images, batch 16"),
    }


def export(name, model, example, directory):
    path = os.path.join(directory, name + ".onnx")
    torch.onnx.export(model, (example,), path, opset_version=17, do_constant_folding=False,
                      input_names=["input"], output_names=["output"],
                      training=torch.onnx.TrainingMode.TRAINING)
    return path


def cleave_plan(cleave, onnx, cluster, algo, directory):
    path = os.path.join(directory, f"{os.path.basename(onnx)}.{algo}.{cluster}.plan.json")
    subprocess.run([cleave, "plan", onnx, "--cluster", cluster, "--algo", algo, "-o", path],
                   check=True, stdout=subprocess.DEVNULL)
    return path


def cleave_steps(cleave, plan, steps, threads, trace=None):
    """Step times (s) of `cleave run` after its first (warm-up) step."""
    cmd = [cleave, "run", plan, "--steps", str(steps + 1), "--threads", str(threads), "--json"]
    if trace:
        cmd += ["--trace", trace]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)["step_times_s"][1:]


def set_threads(threads):
    """PyTorch's threads, and OpenBLAS's: its pthread build ignores torch.set_num_threads and
    otherwise uses every core for the linear layers."""
    torch.set_num_threads(threads)
    for name in ("libopenblas.so.0", "libblas.so.3"):
        try:
            ctypes.CDLL(name).openblas_set_num_threads(threads)
        except (OSError, AttributeError):
            pass


def torch_step(model, optimizer, x, labels):
    optimizer.zero_grad(set_to_none=True)
    out = model(x)
    loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), labels.reshape(-1))
    loss.backward()
    optimizer.step()


def torch_steps(make, example, label_shape, steps, threads, warmup=2):
    set_threads(threads)
    torch.manual_seed(0)
    model = make().train()
    optimizer = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    labels = torch.randint(0, 10, label_shape)
    times = []
    for i in range(warmup + steps):
        start = time.perf_counter()
        torch_step(model, optimizer, example, labels)
        if i >= warmup:
            times.append(time.perf_counter() - start)
    return times


def ddp_worker(rank, name, steps, port, queue):
    """One of 2 DDP processes: one thread, half the batch; rank 0 reports its step times."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=2)
    set_threads(1)
    make, example, label_shape, _ = models()[name]
    torch.manual_seed(0)
    model = DistributedDataParallel(make().train())
    optimizer = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    half = example.shape[0] // 2
    x = example[rank * half:(rank + 1) * half]
    labels = torch.randint(0, 10, (half,) + tuple(label_shape[1:]))
    times = []
    for i in range(2 + steps):
        dist.barrier()
        start = time.perf_counter()
        torch_step(model, optimizer, x, labels)
        if i >= 2:
            times.append(time.perf_counter() - start)
    if rank == 0:
        queue.put(times)
    dist.destroy_process_group()


def ddp_steps(name, steps):
    import torch.multiprocessing as mp
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    port = 29500 + os.getpid() % 1000
    procs = [ctx.Process(target=ddp_worker, args=(r, name, steps, port, queue)) for r in range(2)]
    for p in procs:
        p.start()
    try:
        times = queue.get(timeout=600)
    finally:
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():
                p.kill()
    return times


def median_ms(times):
    return 1000 * statistics.median(times)


def load():
    return "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def shared():
    """Whether other processes shared the cores during the run (the 15-minute load average)."""
    if os.getloadavg()[2] > os.cpu_count():
        return "above the core count: other processes shared the cores"
    return "below the core count"


def priority():
    """The run's scheduling priority where raised (nice, and Linux's autogroup nice), else ''."""
    try:
        with open("/proc/self/autogroup") as f:
            group = int(f.read().split("nice")[1])
    except (OSError, IndexError, ValueError):
        group = 0
    if os.nice(0) >= 0 and group >= 0:
        return ""
    return (f" Run at raised priority (nice {os.nice(0)}, autogroup nice {group}), both sides alike, "
            "so that they had the cores the other processes would otherwise share.")


def one_core(args, directory):
    rows = []
    for name in args.models:
        make, example, label_shape, what = models()[name]
        onnx = export(name, make().train(), example, directory)
        plan = cleave_plan(args.cleave, onnx, "cpu:devices=1", "single", directory)
        cs, ts = [], []
        for _ in range(args.rounds):
            cs += cleave_steps(args.cleave, plan, args.steps, 1)
            ts += torch_steps(make, example, label_shape, args.steps, 1)
        c, t = median_ms(cs), median_ms(ts)
        rows.append((name, what, c, t))
        print(f"  {name}: cleave {c:.1f} ms, PyTorch {t:.1f} ms", file=sys.stderr, flush=True)
    return rows


def two_cores(args, directory):
    rows = []
    for name in args.models:
        make, example, label_shape, what = models()[name]
        onnx = os.path.join(directory, name + ".onnx")
        best = None
        for algo in args.algos:
            try:
                plan = cleave_plan(args.cleave, onnx, "cpu:devices=2", algo, directory)
            except subprocess.CalledProcessError:
                continue
            threads = 2 if algo == "single" else 1
            ms = median_ms(sum((cleave_steps(args.cleave, plan, args.steps, threads)
                                for _ in range(args.rounds)), []))
            label = f"{algo} ({threads} threads)" if algo == "single" else algo
            if best is None or ms < best[1]:
                best = (label, ms)
        t2 = median_ms(sum((torch_steps(make, example, label_shape, args.steps, 2)
                            for _ in range(args.rounds)), []))
        ddp = median_ms(sum((ddp_steps(name, args.steps) for _ in range(args.rounds)), []))
        rows.append((name, best[0], best[1], t2, ddp))
        print(f"  {name}: cleave {best[0]} {best[1]:.1f} ms, PyTorch 2 threads {t2:.1f} ms, "
              f"DDP {ddp:.1f} ms", file=sys.stderr, flush=True)
    return rows


def op_times(args, directory):
    """Per-op time of one step on `--threads` cores (1 by default): cleave's trace of the single
    plan (per op, its pieces summed) beside torch.profiler's self CPU time per aten op, both
    largest first."""
    name = args.ops
    make, example, label_shape, _ = models()[name]
    onnx = export(name, make().train(), example, directory)
    plan = cleave_plan(args.cleave, onnx, "cpu:devices=1", "single", directory)
    trace = os.path.join(directory, "trace.json")
    cleave_steps(args.cleave, plan, 2, args.threads, trace)
    with open(trace) as f:
        events = json.load(f)
    events = events["traceEvents"] if isinstance(events, dict) else events
    per_op = collections.Counter()
    for e in events:
        if e.get("ph") == "X":
            op = e.get("args", {}).get("op", e["name"])
            per_op[op] += e["dur"] / 1000
    print(f"cleave {name}: {sum(per_op.values()):.1f} ms in traced tasks")
    for op, ms in per_op.most_common(args.top):
        print(f"  {ms:8.2f} ms  {op}")
    set_threads(args.threads)
    model = make().train()
    optimizer = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    labels = torch.randint(0, 10, label_shape)
    for _ in range(2):
        torch_step(model, optimizer, example, labels)
    from torch.profiler import profile
    with profile() as prof:
        torch_step(model, optimizer, example, labels)
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=args.top))


def markdown(args, one, two):
    print("# cleave's runtime beside PyTorch, per core")
    print()
    print(f"Generated by `/usr/bin/python3 bench/peer_pytorch.py` (part of `bench/run.sh`) on "
          f"{os.cpu_count()} cores, {time.strftime('%Y-%m-%d', time.gmtime())}, PyTorch "
          f"{torch.__version__} (BLAS: libopenblas0-pthread, its threads set with PyTorch's; "
          f"convolutions: its oneDNN). Load "
          f"average at the end: {load()} ({shared()}; the ratios are of runs taken in turns, "
          "side by side; single runs vary by 10-30%). Each model is written in PyTorch and "
          "exported to ONNX; "
          f"cleave imports it and runs it with `cleave run`. Same shapes, SGD with momentum 0.9, "
          f"lr 0.01, cross-entropy; median step time over {args.rounds} rounds of {args.steps} "
          "steps after warm-up, cleave and PyTorch in turns each round (cleave's step time is "
          "`cleave run`'s: the workers' step, without loading the state into blocks before it "
          "and gathering it after). Ratio = cleave / PyTorch (target: <= 1.0 on the "
          "median model, <= 1.3 on every model)." + priority())
    print()
    print("## One core")
    print()
    print("cleave: `single` plan on cpu:devices=1, `--threads 1`; PyTorch: "
          "`torch.set_num_threads(1)`.")
    print()
    print("| model | what | cleave ms | PyTorch ms | ratio |")
    print("|---|---|---|---|---|")
    ratios = []
    for name, what, c, t in one:
        ratios.append(c / t)
        print(f"| {name} | {what} | {c:.1f} | {t:.1f} | {c / t:.2f} |")
    print()
    print(f"Median ratio: {statistics.median(ratios):.2f}; largest: {max(ratios):.2f}.")
    if not two:
        return
    print()
    print("## Two cores")
    print()
    print("cleave: the fastest measured of its plans on cpu:devices=2 (" +
          ", ".join(f"`{a}`" for a in args.algos) + "; one thread per device, the single plan "
          "with `--threads 2`); PyTorch: `torch.set_num_threads(2)`, and DDP over gloo with 2 "
          "processes of one thread, each half the batch. Ratio = cleave / the better PyTorch "
          "(target: <= 1.0).")
    print()
    print("| model | cleave plan | cleave ms | PyTorch 2 threads ms | PyTorch DDP ms | ratio |")
    print("|---|---|---|---|---|---|")
    for name, label, c, t2, ddp in two:
        print(f"| {name} | {label} | {c:.1f} | {t2:.1f} | {ddp:.1f} | {c / min(t2, ddp):.2f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cleave", required=True)
    parser.add_argument("--models", default=",".join(models()))
    parser.add_argument("--steps", type=int, default=5, help="measured steps per round")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds of cleave then PyTorch, per model (medians over all)")
    parser.add_argument("--algos", default="single,data-parallel,tofu,mincut")
    parser.add_argument("--no-two-cores", action="store_true")
    parser.add_argument("--ops", help="print op-by-op times of this model instead")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--threads", type=int, default=1, help="threads of --ops' runs")
    args = parser.parse_args()
    args.models = args.models.split(",")
    args.algos = args.algos.split(",")
    unknown = [m for m in args.models + ([args.ops] if args.ops else []) if m not in models()]
    if unknown:
        sys.exit(f"unknown model(s) {unknown}; known: {', '.join(models())}")
    with tempfile.TemporaryDirectory() as directory:
        if args.ops:
            op_times(args, directory)
            return
        one = one_core(args, directory)
        two = [] if args.no_two_cores else two_cores(args, directory)
    markdown(args, one, two)


if __name__ == "__main__":
    main()
