#!/usr/bin/env python3
"""The run-time scheduling assistant (issue 17 item 2): `cleave run --rebalance` on cpu:devices=4.

A correct profile of an LSTM's ops is measured with `cleave calibrate`; a copy of it prices one op
type 4x too dear or too cheap: of the op types with at least 1% of the measured time, the one and
the direction whose mispricing gives the slowest mincut plan when simulated with the correct
profile (the worst case of the mispricings tried). mincut plans with each profile; the mispriced plan runs with --rebalance (measured
steps 2-4, re-partitioned on the measured times, switched after step 4, steps 6-10 counted), the
correct plan runs the same way with a threshold no imbalance reaches (so it is measured on the
same steps and never switches). Rounds alternate the two so that the machine's load falls on
both. Writes bench/results/rebalance.md (run by bench/run.sh; docs/runtime.md explains it).

    /usr/bin/python3 bench/rebalance.py --cleave build-release/cleave
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile

MODEL = "rnn:layers=4,hidden=512,steps=8,batch=32,vocab=2048"
CLUSTER = "cpu:devices=4"
FACTOR = 4.0
MIN_SHARE = 0.01  # op types tried: those with at least this share of the measured time
STEPS = 10
MEASURED = 3


def cleave(binary, *args):
    done = subprocess.run([binary, *args], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"cleave {' '.join(args)} failed:\n{done.stderr}")
    return done.stdout


def mispriced(profile, op, factor):
    out = json.loads(json.dumps(profile))
    for entry in out["entries"]:
        if entry["op"] == op:
            entry["seconds"] *= factor
    for calibration in out.get("calibrations", []):
        efficiency = calibration.get("efficiency", {})
        if op in efficiency:
            efficiency[op] /= factor
    out["source"] = f"{profile.get('source', '')}; {op} priced {factor:g}x its measured time"
    return out


def balance(plan_path):
    config = json.load(open(plan_path))["provenance"]["config"]
    return float(config.split("balance=")[1].split()[0])


def predicted(binary, plan_path, profile):
    """The simulated step time and imbalance (busiest device's compute over the mean)."""
    plan = json.loads(cleave(binary, "simulate", plan_path, "--profile", profile,
                             "--json"))["plans"][0]
    compute = [d["compute_s"] for d in plan["devices"]]
    return plan["step_time_s"], max(compute) / (sum(compute) / len(compute))


def rebalanced_run(binary, plan_path, profile, threshold):
    out = json.loads(cleave(binary, "run", plan_path, "--steps", str(STEPS), "--rebalance",
                            "--rebalance-steps", str(MEASURED), "--rebalance-threshold",
                            str(threshold), "--profile", profile, "--check", "--json"))
    return out["rebalance"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cleave", default="build-release/cleave")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--output", default="bench/results/rebalance.md")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    work = tempfile.mkdtemp(prefix="cleave_rebalance_")
    path = lambda name: os.path.join(work, name)

    cleave(args.cleave, "plan", MODEL, "--cluster", CLUSTER, "--algo", "mincut", "-o",
           path("roofline.json"))
    cleave(args.cleave, "calibrate", "--cluster", CLUSTER, "--plan", path("roofline.json"),
           "--steps", "5", "-o", path("correct.json"))
    correct = json.load(open(path("correct.json")))
    cleave(args.cleave, "plan", MODEL, "--cluster", CLUSTER, "--algo", "mincut", "--profile",
           path("correct.json"), "-o", path("correct_plan.json"))
    share = {}
    for entry in correct["entries"]:
        share[entry["op"]] = share.get(entry["op"], 0) + entry["seconds"]
    worst = None
    total = sum(share.values())
    for op in [o for o in sorted(share) if share[o] >= MIN_SHARE * total]:
        for factor in (FACTOR, 1 / FACTOR):
            json.dump(mispriced(correct, op, factor), open(path("try.json"), "w"))
            cleave(args.cleave, "plan", MODEL, "--cluster", CLUSTER, "--algo", "mincut",
                   "--profile", path("try.json"), "-o", path("try_plan.json"))
            step, _ = predicted(args.cleave, path("try_plan.json"), path("correct.json"))
            if worst is None or step > worst[0]:
                worst = (step, op, factor)
                os.replace(path("try.json"), path("mispriced.json"))
                os.replace(path("try_plan.json"), path("mispriced_plan.json"))
    _, mispriced_op, mispriced_factor = worst

    rows = []
    for _ in range(args.rounds):
        good = rebalanced_run(args.cleave, path("correct_plan.json"), path("correct.json"), 100)
        bad = rebalanced_run(args.cleave, path("mispriced_plan.json"), path("mispriced.json"),
                             1.1)
        rows.append((good, bad))

    ms = lambda s: f"{s * 1e3:.1f}"
    sim_correct = predicted(args.cleave, path("correct_plan.json"), path("correct.json"))
    sim_mispriced = predicted(args.cleave, path("mispriced_plan.json"), path("correct.json"))
    lines = [
        "# The run-time scheduling assistant: `cleave run --rebalance`",
        "",
        f"Generated by `/usr/bin/python3 bench/rebalance.py --cleave {args.cleave}` (part of "
        f"`bench/run.sh`) on {os.cpu_count()} cores, "
        f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d}. Model `{MODEL}` on "
        f"`{CLUSTER}` (four worker threads on this machine's cores). The correct profile: "
        f"`cleave calibrate --plan` of mincut's roofline plan, 5 steps; the mispriced one prices "
        f"`{mispriced_op}` at {mispriced_factor:g}x its measured time (of the op types with at "
        f"least {MIN_SHARE:.0%} of the measured time, each at {FACTOR:g}x and 1/{FACTOR:g}x, the "
        f"mispricing whose mincut plan simulates slowest with the correct profile). Both plans are mincut's with their "
        f"profile. Each run: {STEPS} steps, step 1 a warm-up, steps 2-{MEASURED + 1} measured, "
        f"the plan partitioned again on the measured times if the imbalance passes the "
        f"threshold (1.1 for the mispriced plan; 100, never, for the correct one), step "
        f"{MEASURED + 2} a warm-up, steps {MEASURED + 3}-{STEPS} counted; `--check` on the last "
        f"step of each plan. Step times are medians of the steps named, in ms; imbalance is the "
        f"busiest device's compute time over the devices' mean. Rounds alternate the two runs. "
        f"Load average (1 min) {load_before:.1f} before, {os.getloadavg()[0]:.1f} after.",
        "",
        "Plans as made, simulated with the correct profile: correct "
        f"{ms(sim_correct[0])} ms a step, imbalance {sim_correct[1]:.3f}; mispriced "
        f"{ms(sim_mispriced[0])} ms, imbalance {sim_mispriced[1]:.3f} (METIS's balance by the "
        f"plans' own profiles: {balance(path('correct_plan.json')):.3f} and "
        f"{balance(path('mispriced_plan.json')):.3f}).",
        "",
        "| round | correct plan: step (ms) | imbalance | mispriced plan before: step (ms) | "
        "imbalance | predicted with measured times: kept / new plan (ms) | switched | "
        "after --rebalance: step (ms) | imbalance | after / correct | checks |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    ratios = []
    for i, (good, bad) in enumerate(rows, 1):
        ratio = bad["after"]["step_time_s"] / good["after"]["step_time_s"]
        ratios.append(ratio)
        checks = all(p.get("check_passed", False)
                     for p in (good["before"], good["after"], bad["before"], bad["after"]))
        lines.append(
            f"| {i} | {ms(good['after']['step_time_s'])} | {good['after']['imbalance']:.3f} | "
            f"{ms(bad['before']['step_time_s'])} | {bad['before']['imbalance']:.3f} | "
            f"{ms(bad.get('predicted_before_s', 0))} / {ms(bad.get('predicted_after_s', 0))} | "
            f"{'yes' if bad['switched'] else 'no'} | {ms(bad['after']['step_time_s'])} | "
            f"{bad['after']['imbalance']:.3f} | {ratio:.3f} | "
            f"{'passed' if checks else 'FAILED'} |")
    med = lambda f: statistics.median(f(g, b) for g, b in rows)
    lines += [
        f"| median | {ms(med(lambda g, b: g['after']['step_time_s']))} | "
        f"{med(lambda g, b: g['after']['imbalance']):.3f} | "
        f"{ms(med(lambda g, b: b['before']['step_time_s']))} | "
        f"{med(lambda g, b: b['before']['imbalance']):.3f} | | | "
        f"{ms(med(lambda g, b: b['after']['step_time_s']))} | "
        f"{med(lambda g, b: b['after']['imbalance']):.3f} | {statistics.median(ratios):.3f} | |",
        "",
        f"Decision of the last round: {rows[-1][1]['decision']}.",
        "",
        "Target (issue 17): after --rebalance within 10% of the correct plan: median after / "
        f"correct = {statistics.median(ratios):.3f} "
        f"({'met' if abs(statistics.median(ratios) - 1) <= 0.10 else 'not met'}).",
    ]
    text = "\n".join(lines) + "\n"
    with open(args.output + ".tmp", "w") as f:
        f.write(text)
    os.replace(args.output + ".tmp", args.output)
    print(text, end="")


if __name__ == "__main__":
    main()
