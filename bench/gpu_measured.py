#!/usr/bin/python3
"""cleave's predictions beside PyTorch measured on an H100 (issue 24 item 4).

  gpu_measured.py pieces [--cleave BIN] [--out FILE]   the pieces to time (cleave.pieces/1)
  gpu_measured.py table  [--cleave BIN]                bench/results/gpu_measured.md on stdout

`pieces` lists, with `cleave compare --list-pieces`, every compute piece that cleave prices for
the models below on the h100-2x8 preset (single GPU, and GPT-2's 8-GPU Tofu plan), merged by
profile key. On a GPU machine, bench/gpu_pieces_torch.py times them with PyTorch and measures
whole PyTorch steps of the same models; its outputs are committed under
bench/results/gpu_measured/ (MEASURED below). `table` reads only those committed files and cleave
(it times nothing): per model and precision, cleave's prediction with the roofline GPU model,
with the measured profile (`--profile`), and PyTorch's measured step; per op type, measured piece
time against the roofline's; run against run. docs/cost_model.md explains the disagreements.
"""
import argparse
import json
import math
import os
import statistics
import sys
import tempfile

from compare_json import compare
from cleave_cli import run

MEASURED = "bench/results/gpu_measured"
PROFILE = MEASURED + "/h100_pytorch_profile.json"
CLUSTER = "h100-2x8:nodes=1"
PRECISIONS = ["amp-bf16", "tf32"]

# (label, cleave model spec, the PyTorch step's name in steps.json, samples per step)
MODELS = [
    ("ResNet-50, batch 256", "resnet:depth=50,batch=256,precision={p}", "resnet50_b256", 256),
    ("GPT-2 small, seq 1024, batch 8", "gpt:batch=8,seq=1024,precision={p}", "gpt2_b8", 8),
    ("BERT-large, seq 512, batch 8",
     "bert:layers=24,hidden=1024,heads=16,seq=512,batch=8,precision={p}", "bertlarge_b8", 8),
]
# PyTorch variants measured beside a model's own step (cleave has no layout choice to price).
VARIANTS = {"resnet50_b256": [("resnet50_nhwc_b256", "channels-last")]}
# The linear layers' GEMMs (compute-bound over 50 us here, where the attention's batched matmuls
# are memory-bound), and the vocabularies of the models' (unaligned) logits.
GEMMS = {"linear", "linear_grad_input", "linear_grad_weight"}
VOCABULARIES = {50257, 30522}
# Plans of 8 GPUs: predictions only (one GPU was lent), with and without the profile.
MULTI = [("GPT-2 small, seq 1024, batch 64", "gpt:batch=64,seq=1024,precision=amp-bf16",
          ["data-parallel", "tofu"])]

# SwapAdvisor's models whose compute time per byte swapped decides their % of ideal
# (swapadvisor_eval.md): their pieces on one H100 (fp32, run as TF32), and the PyTorch step of
# NASNet-A Large (timm's, the same cells as NasNet-25 at 6 per stage) beside cleave's.
SWAP_MODELS = [("NasNet-25, batch 64", "nasnet:cells=25,batch=64", None),
               ("WResNet-152-10, batch 64", "resnet:depth=152,width=10,batch=64", None)]

SWAP_PROFILE = MEASURED + "/h100_swap_profile.json"
NASNET_LARGE = ("NASNet-A Large (6 @ 4032), batch 64", "nasnet:cells=6,batch=64", "nasnetalarge_b64")

# Read off h100_swap_*.json; swapadvisor_eval.md's NasNet-25 paragraph rests on it.
WHY_SWAP = """- **NasNet's compute is far above its roofline, WResNet's below it.** NasNet-25's step,
  priced by its pieces' PyTorch times, takes 2.3x the roofline's compute on the H100: its
  depthwise convolutions' gradients run at 7-10x the roofline (PyTorch's native depthwise kernels,
  not cuDNN's implicit GEMMs), the average pools' gradients at 10x, and the SGD updates of its
  1,018 small parameters at about 7.5x (the per-op floor). WResNet-152-10's large dense
  convolutions run at 190-370 TFLOP/s in TF32, where the GPU model prices them at about 120: its
  measured compute is half the roofline's. Relative to cleave's model, NasNet computes about 4.5x
  longer per byte swapped than WResNet does.
- **What it means for swapadvisor_eval.md.** NasNet-25's bound there (16.5% of ideal: 4.1 s of
  V100 roofline compute against 24.8 s of copies that no schedule avoids) becomes about 38% if its
  compute is 2.3x the roofline on a V100 too; the paper reports 53% or more. That is an
  assumption (the V100 runs fp32 without tensor cores, so its dense convolutions sit nearer the
  roofline than the H100's TF32 ones), but the direction is the explanation's: the paper's
  measured NasNet computes far longer per byte than a roofline says.
- **The host link is as priced, but its two directions share it.** The H100's pinned copies
  ran at 55 GB/s each way alone (the h100-2x8 preset: 50), and at 46 and 51 GB/s both ways at
  once (84% and 94% of one way alone), where cleave gives each direction its own full
  bandwidth: against the preset's 50, copies both ways at once are priced up to 8% optimistic,
  copies one way 10% pessimistic. The copies slowed neither a
  compute-bound matrix product nor a memory-bound kernel beside them by more than 4%, as the
  simulator assumes (copy engines, not SMs).
- **The profile predicts PyTorch's NASNet step:** the sum of its pieces' PyTorch times (one
  stream, no overlap) is within 6% of timm's NASNet-A Large step (0.94), where the roofline is
  2.4x optimistic. The convolution efficiency was not changed: the ResNet fits (gpu_truth.md)
  rest on it, and the V100's and A100's figures were fitted, not measured here.
"""


# Read off the committed measurements (pieces_meta's per-piece times and steps' kernel lists);
# docs/cost_model.md ("Measured on an H100") says the same with what it means for the model.
WHY = """## Why they differ

- **Per-op floor.** No piece of PyTorch eager took less than 13.9 us (the median of the 171
  pieces the roofline prices under 6 us is 16 us): each call pays the dispatcher and the launch
  before the GPU starts, which per-call CUDA events include. The roofline charges 3 us per kernel,
  the GPU-side gap of a well-fed queue. Weight casts (AMP), the SGD updates of small parameters,
  biases and norms' parameters are all at that floor: cast 4.9x, sgd_update and sgd_momentum
  4.4x the roofline (median). PyTorch's own steps are launch-bound where kernels are small: BERT
  AMP ran 2,684 kernels in an 80 ms step with the GPU busy 78% of it (run 2; 66 ms in run 1 on
  another machine of the kind: the host's speed decides such a step). Setting the roofline's
  per-kernel cost to that floor, and nothing else ("eager floor" above: a calibration, no step
  fitted), moves its median ratio from 1.37 to 1.10. The built-in 3 us stays the default: the
  published figures of gpu_truth.md (NGC containers with fused optimizers and kernels, FSDP at
  large micro-batches) were fitted with it and do not pay eager PyTorch's per-op cost; CUDA
  graphs and torch.compile remove most of it. The calibration is how to predict eager PyTorch.
- **Unaligned GEMMs.** The vocabulary projections (GPT-2's 50257, BERT's 30522 columns, not
  multiples of 8) run cuBLAS's align-1 and align-2 kernels at 3-8x the aligned roofline; the GPU
  model prices operand alignment (docs/cost_model.md), which leaves the 15 vocabulary GEMM
  pieces at 0.58-1.58x the roofline (GPT-2's bf16 logits 0.94x, their gradients 0.6x: 8x
  charged, 5x measured; BERT's TF32 ones 1.3-1.6x: 2x charged, 3x measured). The linear layers'
  other GEMMs set the H100's GEMM efficiency (the line above the skipped list). Padding the
  vocabulary to a multiple of 64 (as nanoGPT does) is the usual cure.
- **Layout and cuDNN's algorithms.** PyTorch's NCHW ResNet-50 under bf16 spends part of its step
  converting layouts (cuDNN's nchwToNhwc kernels) and in batch norm kernels that cleave prices as
  two passes each; channels-last runs the same model 1.78x faster (AMP) and 1.35x (TF32). The
  roofline sits between the two; the profile, timed in NCHW, matches NCHW. The 7x7 stem
  convolution on 3 channels runs 4-15x the roofline (forward and weight gradient), the strided
  1x1 convolutions' forward and weight gradient 0.8-3.2x, the other convolutions over 100 us
  0.4-2.3x (median 1.16 in bf16, 0.94 in TF32): one convolution efficiency cannot hold them all.
- **Fusion.** The profile times every op cleave writes as a kernel of its own, as eager PyTorch
  runs them, so a chain of element-wise ops costs each link's launch and traffic; the roofline
  fuses them (docs/cost_model.md) and is optimistic against eager PyTorch by that much. Ops the GPU
  model fuses into cuDNN's batch norm cost nothing either way (a profile entry never prices them).
  Where PyTorch fuses and cleave's graph does not (a linear's bias in cuBLAS's epilogue) the
  profile is pessimistic, and where PyTorch does more (autocast runs layer norm and softmax in
  fp32 with casts around them; cleave's AMP keeps them in half) it is optimistic: these meet near
  1 in the step rows.
- **No overlap.** Eager PyTorch runs one stream, so a step is about the sum of its kernels; the
  profile's prediction is that sum for cleave's graph. The remaining gaps are the graphs' own
  differences (BERT's fp32 step is 0.83: cleave's graph has ops PyTorch fuses, each timed at the
  per-op floor).
- **Gathers and scatters.** `embedding_grad` is priced as the scatter-add it is (docs/tdl.md;
  before, as a dense sum over vocabulary x positions, 50-100x the measured time), and now sits
  below PyTorch's: its embedding_dense_backward sorts the indices and reduces segments in about
  ten kernels, each at the per-op floor (a 2-row table took 0.14 ms). `embedding` reads a row
  per position, not the whole table; its pieces are at the floor.
"""


def key(e):
    return (e["op"], e["attrs"], tuple(e["extents"]), e["dtype"])


def load(name):
    with open(os.path.join(MEASURED, name)) as f:
        return json.load(f)


def list_pieces():
    lines = [json.dumps(p, sort_keys=True)
             for p in listed_pieces(ARGS.out + ".part", ARGS.set == "swap")]
    with open(ARGS.out, "w") as f:
        f.write('{"format":"cleave.pieces/1",\n"pieces":[\n' + ",\n".join(lines) + "\n]}\n")
    print(f"{len(lines)} pieces in {ARGS.out}", file=sys.stderr)
    return 0


def listed_pieces(path, swap=False):
    """Every distinct piece cleave prices for the models, with the current model's roofline."""
    pieces = {}
    if swap:
        jobs = [(spec, ["single"]) for _, spec, _ in SWAP_MODELS]
    else:
        jobs = [(m[1].format(p=p), ["single"]) for m in MODELS for p in PRECISIONS]
        jobs += [(spec, algos) for _, spec, algos in MULTI]
    for spec, algos in jobs:
        for p in model_pieces(spec, algos, path):
            pieces.setdefault(key(p), p)
    return list(pieces.values())


def model_pieces(spec, algos, path):
    _, err = run([ARGS.cleave, "compare", spec, "--cluster", CLUSTER, "--algos",
                  ",".join(algos), "--json", "--list-pieces", path], ARGS.timeout)
    if err:
        sys.exit(f"cleave compare {spec}: {err}")
    with open(path) as f:
        pieces = json.load(f)["pieces"]
    os.remove(path)
    return pieces


def predict(spec, algos, profile):
    extra = ["--profile", profile] if profile else []
    plans, err = compare(ARGS.cleave, spec, CLUSTER, algos, ARGS.timeout, extra)
    if plans is None:
        sys.exit(f"cleave compare {spec}: {err}")
    return plans


def steps_by_name(doc):
    return {(s["model"], s["precision"]): s for s in doc["steps"] if "error" not in s}


def floor_calibration(meta, path):
    """A profile with no entries whose calibration sets the H100's per-kernel cost to the shortest
    piece PyTorch ran (eager PyTorch's per-op floor): measured, not fitted on any step."""
    floor = min(t["seconds"] for t in meta["timed"])
    cal = {"format": "cleave.profile/1", "source": "the per-op floor of " + PROFILE,
           "calibrations": [{"device_kind": "H100-SXM5-80GB", "launch_s": floor}], "entries": []}
    with open(path, "w") as f:
        json.dump(cal, f)
    return floor


def model_table(steps, meta):
    with tempfile.TemporaryDirectory() as tmp:
        floor_path = os.path.join(tmp, "floor.json")
        floor = floor_calibration(meta, floor_path)
        print(f"Columns: cleave with the roofline GPU model (3 us per kernel); the same with the "
              f"per-kernel cost set to eager PyTorch's per-op floor, {floor * 1e6:.1f} us (the "
              f"shortest piece measured; a profile calibration, fitted on no step); cleave with "
              f"the measured profile (each piece's PyTorch time); PyTorch's measured step.")
        print()
        print("| model | precision | cleave, roofline | roofline, eager floor | cleave, measured "
              "profile | PyTorch measured | roofline / measured | floor / measured | profile / "
              "measured | PyTorch kernels, GPU busy |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        ratios = {"roofline": [], "roofline with the eager floor": [], "measured profile": []}
        for label, spec, name, batch in MODELS:
            for p in PRECISIONS:
                roof = predict(spec.format(p=p), ["single"], None)[0]
                low = predict(spec.format(p=p), ["single"], floor_path)[0]
                prof = predict(spec.format(p=p), ["single"], PROFILE)[0]
                for step_name, variant in [(name, "")] + VARIANTS.get(name, []):
                    s = steps.get((step_name, p))
                    if s is None:
                        continue
                    got = s["samples_per_s"]
                    rs = [x["samples_per_s"] / got for x in (roof, low, prof)]
                    if not variant:
                        for k, r in zip(ratios, rs):
                            ratios[k].append(r)
                    busy = s["kernel_s"] / s["median_step_s"] if "kernel_s" in s else float("nan")
                    what = label + (f" (PyTorch {variant})" if variant else "")
                    print(f"| {what} | {p} | {rate(roof)} | {rate(low)} | {rate(prof)}; "
                          f"{prof['measured_tasks']} of {prof['priced_tasks']} tasks measured "
                          f"| {got:.0f}/s ({s['median_step_s'] * 1e3:.1f} ms) | "
                          + " | ".join(f"{r:.2f}" for r in rs)
                          + f" | {s.get('kernels', '?')}, {busy:.0%} |")
    print()
    for name, rs in ratios.items():
        inside = sum(1 for r in rs if 0.8 <= r <= 1.25)
        print(f"- {name} / measured (NCHW rows): median {statistics.median(rs):.2f}, range "
              f"{min(rs):.2f}-{max(rs):.2f}, {inside} of {len(rs)} within 0.8-1.25")


def rate(plan):
    return f"{plan['samples_per_s']:.0f}/s ({plan['step_time_s'] * 1e3:.1f} ms)"


def op_table(meta, pieces):
    # Weighted by how often the listed plans price each piece; the roofline is today's model's
    # (the meta file keeps the one of when the pieces were timed).
    uses = {key(p): p["uses"] for p in pieces}
    roofline = {key(p): p["roofline_s"] for p in pieces}
    by_op = {}
    for t in meta["timed"]:
        if key(t) in roofline:
            by_op.setdefault(op_kind(t), []).append(dict(t, roofline_s=roofline[key(t)]))
    print("| op type | pieces | median measured / roofline | range | time-weighted measured / "
          "roofline | share of measured time |")
    print("|---|---|---|---|---|---|")
    rows = []
    for op, ts in by_op.items():
        rs = [t["seconds"] / t["roofline_s"] for t in ts if t["roofline_s"] > 0]
        if not rs:
            continue
        w = [uses.get(key(t), 1) for t in ts]
        measured = sum(u * t["seconds"] for u, t in zip(w, ts))
        roofline = sum(u * t["roofline_s"] for u, t in zip(w, ts))
        rows.append((measured, op, len(ts), statistics.median(rs), min(rs), max(rs),
                     measured / roofline))
    total = sum(r[0] for r in rows)
    for measured, op, n, med, lo, hi, weighted in sorted(rows, reverse=True):
        print(f"| {op} | {n} | {med:.2f} | {lo:.2f}-{hi:.2f} | {weighted:.2f} | "
              f"{measured / total:.1%} |")
    skipped = {}
    for s in meta["skipped"]:
        skipped.setdefault((s["op"], s["why"].split(":")[0]), []).append(s)
    print()
    print("Not timed: " + "; ".join(f"{op} x{len(v)} ({why})" for (op, why), v in
                                    sorted(skipped.items())) + ".")


def op_kind(piece):
    """The op type, with depthwise (grouped) convolutions apart from dense ones."""
    grouped = piece["op"].startswith("conv2d") and "groups=1," not in piece["attrs"] + ","
    return piece["op"] + (" (depthwise)" if grouped else "")


def gemm_line(meta, pieces):
    # The H100's GEMM efficiency (src/cost/gpu_compute.cc) was set on these.
    roofline = {key(p): p["roofline_s"] for p in pieces}
    gemms = [t["seconds"] / roofline[key(t)] for t in meta["timed"]
             if t["op"] in GEMMS and roofline.get(key(t), 0) > 50e-6
             and not any(e in VOCABULARIES for e in t["extents"])]
    print(f"Linear layers' GEMM pieces over 50 us but the vocabulary projections ({len(gemms)}; "
          f"the H100's GEMM efficiency was set on them): median measured / roofline "
          f"{statistics.median(gemms):.2f}.")


def repeat_table(run1, run2, steps1, steps2):
    a = {key(e): e["seconds"] for e in run1["entries"]}
    b = {key(e): e["seconds"] for e in run2["entries"]}
    common = [k for k in a if k in b]
    logs = sorted(abs(math.log(b[k] / a[k])) for k in common)
    q = lambda f: math.exp(logs[min(len(logs) - 1, int(f * len(logs)))]) - 1
    print(f"- pieces timed in both runs: {len(common)}; run-to-run difference: median "
          f"{q(0.5):.1%}, 90th percentile {q(0.9):.1%}, largest {math.exp(logs[-1]) - 1:.0%}")
    for k, s2 in sorted(steps2.items()):
        s1 = steps1.get(k)
        if s1:
            print(f"- {k[0]} {k[1]}: step {s1['median_step_s'] * 1e3:.1f} ms in run 1, "
                  f"{s2['median_step_s'] * 1e3:.1f} ms in run 2")


def multi_table():
    print("| model | precision | algorithm | cleave, roofline | cleave, measured profile | "
          "tasks measured |")
    print("|---|---|---|---|---|---|")
    for label, spec, algos in MULTI:
        roof = {r["algorithm"]: r for r in predict(spec, algos, None)}
        prof = {r["algorithm"]: r for r in predict(spec, algos, PROFILE)}
        for algo in algos:
            r, p = roof[algo], prof[algo]
            print(f"| {label}, 8x H100 | amp-bf16 | {algo} | {r['samples_per_s']:.0f}/s "
                  f"| {p['samples_per_s']:.0f}/s | {p['measured_tasks']} of "
                  f"{p['priced_tasks']} |")


def table():
    steps = load("h100_pytorch_steps.json")
    meta = load("h100_pytorch_pieces_meta.json")
    print(f"Measured: {steps['source']}.")
    print()
    print("## Steps: cleave's prediction beside PyTorch's measured step (one H100)")
    print()
    model_table(steps_by_name(steps), meta)
    print()
    print("## Pieces: measured against the roofline, by op type")
    print()
    with tempfile.TemporaryDirectory() as tmp:
        pieces = listed_pieces(os.path.join(tmp, "pieces.json"))
    op_table(meta, pieces)
    print()
    gemm_line(meta, pieces)
    print()
    print("## 8-GPU plans: predictions with and without the profile (not measured: one GPU)")
    print()
    multi_table()
    print()
    print("## Run against run (the same script, two machines of the same kind, minutes apart)")
    print()
    repeat_table(load("run1_profile.json"), load("h100_pytorch_profile.json"),
                 steps_by_name(load("run1_steps.json")), steps_by_name(steps))
    print()
    print(WHY)
    swap_table()
    return 0


def host_link_table():
    """bench/gpu_host_link.py's measurements beside the preset's host link."""
    link = load("h100_host_link.json")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "cluster.json")
        _, err = run([ARGS.cleave, "clusters", "--export", CLUSTER, "-o", path], ARGS.timeout)
        if err:
            sys.exit(f"cleave clusters --export {CLUSTER}: {err}")
        with open(path) as f:
            links = json.load(f)["links"]
    preset = next(l["bandwidth_bytes_per_s"] for l in links if l["kind"] == "host") / 1e9
    print(f"### The host link (`bench/gpu_host_link.py`, pinned memory, {link['device']}, "
          f"torch {link['torch']}, median of {link['reps']})")
    print()
    print("| copy | measured | the preset's `host` | measured / preset |")
    print("|---|---|---|---|")
    rows = [("host to device, 1 GiB", link["h2d_GBps"]), ("device to host, 1 GiB", link["d2h_GBps"]),
            ("host to device, both ways at once", link["both_ways_GBps"][0]),
            ("device to host, both ways at once", link["both_ways_GBps"][1])]
    rows += [(f"{w}, {mib} MiB", link[f"{k}_{mib}MiB_GBps"]) for mib in (16, 64, 256)
             for k, w in (("h2d", "host to device"), ("d2h", "device to host"))]
    for what, gbps in rows:
        print(f"| {what} | {gbps:.1f} GB/s | {preset:.1f} GB/s | {gbps / preset:.2f} |")
    print()
    mm, ew = link["matmul_s"], link["elementwise_s"]
    both_mm, both_ew = link["both_ways_beside_matmul_s"], link["both_ways_beside_elementwise_s"]
    print(f"Beside computation on a third stream, both ways at once: {link['matmul']} took "
          f"{both_mm[2] * 1e3:.1f} ms against {mm * 1e3:.1f} ms alone "
          f"({link['matmul_TFLOPps']:.0f} TFLOP/s), the copies {both_mm[0] * 1e3:.1f} and "
          f"{both_mm[1] * 1e3:.1f} ms against {link['both_ways_s'][0] * 1e3:.1f} and "
          f"{link['both_ways_s'][1] * 1e3:.1f} ms; {link['elementwise']} took "
          f"{both_ew[2] * 1e3:.1f} ms against {ew * 1e3:.1f} ms alone "
          f"({link['elementwise_TBps']:.1f} TB/s), the copies {both_ew[0] * 1e3:.1f} and "
          f"{both_ew[1] * 1e3:.1f} ms.")


def swap_table():
    steps = steps_by_name(load("h100_swap_steps.json"))
    meta = load("h100_swap_pieces_meta.json")
    print("## SwapAdvisor's models: compute measured on an H100")
    print()
    print(f"Measured: {meta['source']}. Each model on one H100 (`single`), fp32 run as TF32; "
          f"cleave's step with the roofline and with the profile of these pieces "
          f"(`--profile {SWAP_PROFILE}`). NasNet-25 and WResNet-152-10 do not fit one GPU: "
          f"the step is their compute alone, as with infinite memory.")
    print()
    print("| model | cleave, roofline | cleave, measured profile | profile / roofline | "
          "PyTorch measured (timm) | roofline / measured | profile / measured |")
    print("|---|---|---|---|---|---|---|")
    label, spec, name = NASNET_LARGE
    for label, spec, step in SWAP_MODELS + [(label, spec, name)]:
        roof = predict(spec, ["single"], None)[0]
        prof = predict(spec, ["single"], SWAP_PROFILE)[0]
        s = steps.get((step, "tf32")) if step else None
        ratio = roof["step_time_s"] and prof["step_time_s"] / roof["step_time_s"]
        cells = [label, f"{roof['step_time_s']:.3f} s", f"{prof['step_time_s']:.3f} s "
                 f"({prof['measured_tasks']} of {prof['priced_tasks']} tasks measured)",
                 f"{ratio:.2f}"]
        if s:
            cells += [f"{s['median_step_s']:.3f} s, {s['kernels']} kernels, peak "
                      f"{s['peak_memory_bytes'] / 2**30:.1f} GiB",
                      f"{s['median_step_s'] / roof['step_time_s']:.2f}",
                      f"{s['median_step_s'] / prof['step_time_s']:.2f}"]
        else:
            cells += ["", "", ""]
        print("| " + " | ".join(cells) + " |")
    for label, spec, _ in SWAP_MODELS:
        print()
        print(f"### {label}: pieces measured against the roofline, by op type")
        print()
        with tempfile.TemporaryDirectory() as tmp:
            op_table(meta, model_pieces(spec, ["single"], os.path.join(tmp, "p.json")))
    print()
    host_link_table()
    print()
    print(WHY_SWAP)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["pieces", "table"])
    ap.add_argument("--cleave", default="build-release/cleave")
    ap.add_argument("--out", default="")
    ap.add_argument("--set", choices=["steps", "swap"], default="steps",
                    help="pieces: the models of the step table, or SwapAdvisor's (swap_pieces.json)")
    ap.add_argument("--timeout", type=int, default=900)
    ARGS = ap.parse_args()
    ARGS.out = ARGS.out or MEASURED + ("/swap_pieces.json" if ARGS.set == "swap" else "/pieces.json")
    sys.exit(list_pieces() if ARGS.what == "pieces" else table())
