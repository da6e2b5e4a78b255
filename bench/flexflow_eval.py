#!/usr/bin/python3
"""FlexFlow's evaluation (SysML'19 §8) in simulation (issue 15).

Runs `cleave compare MODEL --cluster C --algos ... --json` for AlexNet, Inception-v3, ResNet-101,
RNNTC, RNNLM and NMT (FlexFlow's per-GPU batch times the devices, RNNs unrolled 40 steps) and
prints a Markdown table: per model and algorithm the simulated samples/s, flexflow's speedup over
the best of the others, the bytes moved per step and the search time, with the paper's figure
beside flexflow's row.

  flexflow_eval.py [--cluster DEVICES:CLUSTER[@SECONDS] ...] [--models NAME ...] [--timeout S]
                   [--cleave BIN]

@SECONDS bounds the searches that take a budget (flexflow, tofu-ranked) on that cluster with
--budget-seconds: on 64 devices a proposal re-simulates some 10^5 tasks (about a second), so
FlexFlow's default 3000 proposals would take an hour per model; the paper's own 64-GPU searches
ran 20-40 minutes to their final plans.
"""
import argparse
import sys
import time

from compare_json import compare

ALGOS = ["data-parallel", "expert", "tofu", "tofu-ranked", "flexflow"]

# name, zoo spec with {b} the global batch, per-GPU batch, the paper's figure.
MODELS = [
    ("AlexNet", "alexnet:batch={b}", 256, "1.3-3.3x over data/expert"),
    ("Inception-v3", "inception:batch={b}", 64, "1.3-3.3x over data/expert"),
    ("ResNet-101", "resnet:depth=101,batch={b}", 64, "about data parallelism"),
    ("RNNTC", "rnn:layers=2,hidden=1024,steps=40,task=classify,batch={b}", 64,
     "1.3-3.3x over data/expert"),
    ("RNNLM", "rnn:layers=2,hidden=1024,steps=40,task=lm,batch={b}", 64,
     "1.3-3.3x over data/expert"),
    ("NMT", "nmt:steps=40,batch={b}", 64, "64 K80s: 1.7-2.4x, 2-5.5x less data"),
]


BUDGETED = {"flexflow", "tofu-ranked"}


def rows_for(cleave, model, cluster, timeout, budget):
    """Every algorithm's row; an algorithm that fails is reported alone, not the whole model."""
    out = {}
    for a in ALGOS:
        extra = ["--budget-seconds", budget] if budget and a in BUDGETED else []
        p, e = compare(cleave, model, cluster, [a], timeout, extra)
        out[a] = p[0] if p else {"error": e}
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cluster", nargs="+", default=["4:p100-4x4:nodes=1"],
                    help="DEVICES:CLUSTER[@SECONDS], e.g. 4:p100-4x4:nodes=1 16:p100-4x4 "
                    "64:k80-16x4@300")
    ap.add_argument("--models", nargs="+", default=[m[0] for m in MODELS], metavar="NAME",
                    help="of " + ", ".join(m[0] for m in MODELS) + " (default: all)")
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per compare")
    ap.add_argument("--cleave", default="build-release/cleave")
    args = ap.parse_args()

    print("| model | cluster | algorithm | samples/s | speedup over the best other | "
          "GiB moved per step | search (s) | paper |")
    print("|---|---|---|---|---|---|---|---|")
    for entry in args.cluster:
        count, _, rest = entry.partition(":")
        cluster, _, budget = rest.partition("@")
        n = int(count)
        for name, spec, per_gpu, paper in MODELS:
            if name not in args.models:
                continue
            t0 = time.time()
            model = spec.format(b=per_gpu * n)
            rows = rows_for(args.cleave, model, cluster, args.timeout, budget)
            others = [r["samples_per_s"] for a, r in rows.items()
                      if a != "flexflow" and "error" not in r and r.get("fits")]
            for a in ALGOS:
                r = rows[a]
                if "error" in r:
                    print(f"| {name} | {cluster} | {a} | — | — | — | — | (failed: {r['error']}) |")
                    continue
                speedup = ""
                note = ""
                if a == "flexflow":
                    note = paper
                    if others:
                        speedup = f"{r['samples_per_s'] / max(others):.2f}x"
                fits = "" if r["fits"] else " (does not fit)"
                print(f"| {name} | {cluster} | {a} | {r['samples_per_s']:.1f}{fits} | {speedup} "
                      f"| {r['comm_bytes'] / 2**30:.2f} | {r['search_time_s']:.2f} | {note} |")
            print(f"model {name} on {cluster}: {time.time() - t0:.0f} s", file=sys.stderr)
            sys.stdout.flush()


if __name__ == "__main__":
    main()
