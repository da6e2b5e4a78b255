#!/usr/bin/python3
"""Tofu's evaluation (EuroSys'19 §7, Fig. 8/9) in simulation on k80x8 (issue 5).

Runs `cleave compare MODEL --cluster k80x8 --algos ... --json` for WResNet-{50,101,152} x widths
and RNN-{6,8,10} x hidden sizes and prints a Markdown table: per model and algorithm the
simulated samples/s, efficiency against Ideal (single-device step / 8), the peak memory of the
fullest device against its capacity (12 GB on a K80 die), whether the plan fits, the bytes
communicated per step and the search time. The paper's figures stand beside Tofu's and the
placement baseline's rows. docs/search_tofu.md explains the disagreements.

  tofu_eval.py [--cleave BIN] [--subset] [--timeout S]
"""
import argparse
import sys
import time

from compare_json import compare

ALGOS = ["tofu", "data-parallel", "expert", "allrow-greedy", "equal-chop", "optcnn"]
CLUSTER = "k80x8"

# The paper's numbers (Tofu §7.2, Fig. 8 and 9): Tofu's efficiency ranges, and the RNN samples/s
# it prints for hidden 4K (Tofu and layer placement).
PAPER_RANGE = {"wresnet": "Tofu 60-95 % of Ideal", "rnn": "Tofu 70-98 % of Ideal"}
PAPER_RNN_4K = {6: (210, 107), 8: (154, 95), 10: (122, 59)}


def models(subset):
    widths = [4, 10] if subset else [4, 6, 8, 10]
    hiddens = [4096, 8192] if subset else [4096, 6144, 8192]
    out = []
    for depth in (50, 101, 152):
        for w in widths:
            out.append(("wresnet", f"WResNet-{depth}-{w}",
                        f"resnet:depth={depth},width={w},batch=128", None))
    for layers in (6, 8, 10):
        for h in hiddens:
            paper = PAPER_RNN_4K[layers] if h == 4096 else None
            out.append(("rnn", f"RNN-{layers}-{h // 1024}K",
                        f"rnn:layers={layers},hidden={h},steps=20,batch=512,vocab=2", paper))
    return out


def rows_for(cleave, model, timeout):
    """Every algorithm's row; an algorithm that fails is reported alone, not the whole model."""
    plans, err = compare(cleave, model, CLUSTER, ALGOS, timeout)
    if plans is not None:
        return {p["algorithm"]: p for p in plans}
    out = {}
    for a in ALGOS:
        p, e = compare(cleave, model, CLUSTER, [a], timeout)
        out[a] = p[0] if p else {"error": e}
    return out


def gb(b):
    """GiB; a per-device list gives its largest entry (the fullest device)."""
    return (max(b) if isinstance(b, list) else b) / 2**30


def over(r):
    peak, cap = r["peak_memory_bytes"], r["memory_capacity_bytes"]
    if not isinstance(peak, list):
        return peak / cap
    caps = cap if isinstance(cap, list) else [cap] * len(peak)
    return max(p / c for p, c in zip(peak, caps))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cleave", default="build-release/cleave")
    ap.add_argument("--subset", action="store_true",
                    help="widths 4 and 10, hidden 4K and 8K only")
    ap.add_argument("--timeout", type=int, default=1800)
    args = ap.parse_args()

    print("| model | algorithm | samples/s | efficiency vs Ideal | peak memory / device (GiB) "
          "| fits | comm per step (GiB) | search (s) | paper |")
    print("|---|---|---|---|---|---|---|---|---|")
    summary = []
    for family, name, spec, paper in models(args.subset):
        t0 = time.time()
        rows = rows_for(args.cleave, spec, args.timeout)
        for a in ALGOS:
            r = rows.get(a, {"error": "missing"})
            note = ""
            if a == "tofu":
                note = PAPER_RANGE[family]
                if paper:
                    note = f"Tofu {paper[0]} samples/s"
            if a == "expert" and paper:
                note = f"placement {paper[1]} samples/s"
            if "error" in r:
                print(f"| {name} | {a} | — | — | — | — | — | — | {note} (failed: {r['error']}) |")
                continue
            print(f"| {name} | {a} | {r['samples_per_s']:.1f} | {100 * r['efficiency']:.0f} % "
                  f"| {gb(r['peak_memory_bytes']):.1f} / {gb(r['memory_capacity_bytes']):.1f} "
                  f"| {'yes' if r['fits'] else 'no'} | {gb(r['comm_bytes']):.2f} "
                  f"| {r['search_time_s']:.2f} | {note} |")
        t = rows.get("tofu", {})
        if "error" not in t and t:
            summary.append((name, t))
        print(f"model {name}: {time.time() - t0:.0f} s", file=sys.stderr)
        sys.stdout.flush()
    print()
    print("Tofu's plans against memory: peak of the fullest device / capacity.")
    print()
    print("| model | tofu samples/s | efficiency | peak GiB | over capacity |")
    print("|---|---|---|---|---|")
    for name, t in summary:
        print(f"| {name} | {t['samples_per_s']:.1f} | {100 * t['efficiency']:.0f} % "
              f"| {gb(t['peak_memory_bytes']):.1f} | {over(t):.2f}x |")


if __name__ == "__main__":
    main()
