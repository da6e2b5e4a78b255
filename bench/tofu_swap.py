#!/usr/bin/python3
"""Tofu's plans with swaps (issue 18 item 5) in simulation on k80x8.

For every model of bench/tofu_eval.py, runs `cleave plan MODEL --cluster k80x8 --algo tofu --swap
--json` and prints a Markdown table of the plans that do not fit a K80 die's 12 GiB without swaps:
the fullest device's peak without and with the swaps, whether every device fits with them, the
bytes swapped (the most on one device, and all devices'), the step time without and with the swaps
and the slowdown. The models whose Tofu plan fits without swaps are listed below the table.
docs/search_swapadvisor.md "Swaps for any plan" explains the figures.

  tofu_swap.py [--cleave BIN] [--subset] [--timeout S]
"""
import argparse
import json
import subprocess
import sys
import time

from tofu_eval import CLUSTER, models


def plan_with_swaps(cleave, spec, timeout):
    """The plan's JSON row (with "swap"), or (None, the error); a plan that does not fit even
    with swaps exits non-zero but still prints its row."""
    cmd = [cleave, "plan", spec, "--cluster", CLUSTER, "--algo", "tofu", "--swap", "--json"]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout} s"
    try:
        return json.loads(r.stdout)["plans"][0], None
    except (json.JSONDecodeError, KeyError, IndexError):
        return None, (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]


def gib(b):
    return b / 2**30


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cleave", default="build-release/cleave")
    ap.add_argument("--subset", action="store_true",
                    help="widths 4 and 10, hidden 4K and 8K only")
    ap.add_argument("--timeout", type=int, default=1800)
    args = ap.parse_args()

    print("| model | peak / device without swaps (GiB) | fits with swaps | peak with swaps (GiB) "
          "| swapped / device, most (GiB) | swapped, all devices (GiB) | step without swaps (s) "
          "| step with swaps (s) | slowdown |")
    print("|---|---|---|---|---|---|---|---|---|")
    fit_already, failed = [], []
    for _, name, spec, _ in models(args.subset):
        t0 = time.time()
        row, err = plan_with_swaps(args.cleave, spec, args.timeout)
        print(f"model {name}: {time.time() - t0:.0f} s", file=sys.stderr)
        if row is None:
            failed.append(f"{name} ({err})")
            continue
        s = row["swap"]
        if not s["changed"]:
            fit_already.append(name)
            continue
        devices = s["devices"]
        before = max(d["peak_before_bytes"] for d in devices)
        after = max(row["peak_memory_bytes"])
        most = max(d["swapped_bytes"] for d in devices)
        print(f"| {name} | {gib(before):.1f} / 12.0 | {'yes' if s['fits'] else 'no'} "
              f"| {gib(after):.2f} / 12.0 | {gib(most):.2f} | {gib(s['swapped_bytes']):.1f} "
              f"| {s['step_time_before_s']:.3f} | {s['step_time_s']:.3f} "
              f"| {100 * (s['slowdown'] - 1):.2f} % |")
        sys.stdout.flush()
    print()
    print("Tofu's plans that fit without swaps (`--swap` leaves them unchanged): " +
          (", ".join(fit_already) or "none") + ".")
    if failed:
        print()
        print("Failed: " + "; ".join(failed) + ".")


if __name__ == "__main__":
    main()
