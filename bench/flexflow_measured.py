#!/usr/bin/env python3
"""FlexFlow's #217 complaint, answered on this machine (issue 15): with op times measured on
demand (`--measure`), is flexflow's plan, as `cleave run` measures it, no slower than the best
baseline measured the same way?

For each of bench/fidelity's models on cpu:devices=2: one profile file timed on demand while
data-parallel, expert, tofu and flexflow plan (in that order; each later run reuses the pieces
already timed), then every plan run for real (`cleave run --steps N --json`, the median step of
the steps after the first). Prints a Markdown table.

  flexflow_measured.py [--cleave BIN] [--steps N] [--workdir DIR]
"""
import argparse
import json
import os
import statistics
import sys
import tempfile

from cleave_cli import run

MODELS = [
    "mlp:layers=4,hidden=1024,input=1024,classes=64,batch=64",
    "gpt:layers=2,hidden=256,heads=4,seq=64,batch=8,vocab=512",
    "resnet:depth=18,image=32,batch=8,classes=10",
]
BASELINES = ["data-parallel", "expert", "tofu"]
CLUSTER = "cpu:devices=2"


def plan(cleave, model, algo, profile, out, timeout=1800):
    cmd = [cleave, "plan", model, "--cluster", CLUSTER, "--algo", algo, "--measure", profile,
           "--seed", "0", "-o", out, "--json"]
    text, err = run(cmd, timeout)
    if text is None:
        return None, err
    return json.loads(text)["plans"][0], None


def measure(cleave, plan_file, steps, timeout=1800):
    text, err = run([cleave, "run", plan_file, "--steps", str(steps), "--json"], timeout)
    if text is None:
        return None, err
    times = json.loads(text)["step_times_s"][1:]  # the first step warms the kernels up
    return statistics.median(times), None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cleave", default="build/cleave")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--workdir", default=None)
    args = ap.parse_args()
    work = args.workdir or tempfile.mkdtemp(prefix="cleave_ff_measured_")
    print("| model | algorithm | predicted step (ms) | measured step (ms, median) | "
          "flexflow against the best baseline, measured |")
    print("|---|---|---|---|---|")
    for i, model in enumerate(MODELS):
        profile = os.path.join(work, f"pieces{i}.json")
        if os.path.exists(profile):
            os.remove(profile)
        measured = {}
        for algo in BASELINES + ["flexflow"]:
            out = os.path.join(work, f"plan{i}_{algo}.json")
            row, err = plan(args.cleave, model, algo, profile, out)
            if err:
                print(f"| `{model}` | {algo} | — | — | (failed: {err}) |")
                continue
            step, err = measure(args.cleave, out, args.steps)
            if err:
                print(f"| `{model}` | {algo} | {row['step_time_s'] * 1e3:.2f} | — | (run failed: {err}) |")
                continue
            measured[algo] = step
            verdict = ""
            if algo == "flexflow" and len(measured) > 1:
                best = min(v for a, v in measured.items() if a != "flexflow")
                verdict = f"{step / best:.2f}x the best baseline's step"
            print(f"| `{model}` | {algo} | {row['step_time_s'] * 1e3:.2f} | {step * 1e3:.2f} | "
                  f"{verdict} |")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
