"""Issue 21: planning GPT-3 for 8 to 1,024 H100s on this machine (bench/results/scale.md).

Per algorithm and device count, two processes, each timed and its peak resident memory read
from the kernel (wait4's rusage): `cleave plan` (the search, then lower + simulate of its plan;
its search time is the one the plan reports) and `cleave simulate` of the saved plan (lower +
simulate alone, with the model built and the plan read). Each runs under an address-space cap
and a time limit, so that a row past them says so instead of taking the machine down. The target
(< 8 GiB at 1,024 devices) is on peak resident memory; the cap, 12 GiB by default, is above it
because address space also counts what is reserved and never touched (the lowering reserves the
program's whole task list up front: under an 8 GiB cap, data parallelism at 1,024 devices fails
at 6.7 GiB resident)."""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

MODEL = "gpt:layers=96,hidden=12288,heads=96,seq=2048,batch={batch}"


def measured(cmd, cap_bytes, timeout):
    """(stdout or None, wall seconds, peak RSS bytes, why it failed or None)."""

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (cap_bytes, cap_bytes))

    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=limit)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return None, time.monotonic() - start, 0, f"over {timeout} s"
    wall = time.monotonic() - start
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    if proc.returncode != 0:
        lines = err.strip().splitlines() or [f"exit {proc.returncode}"]
        why = "over the memory cap" if "bad_alloc" in err or proc.returncode < 0 else lines[-1]
        return None, wall, rss, why
    return out, wall, rss, None


def gib(n):
    return f"{n / 2**30:.2f} GiB"


def row(cleave, algo, devices, cap, timeout, workdir):
    model = MODEL.format(batch=devices)
    cluster = f"h100-2x8:nodes={devices // 8}"
    plan_file = os.path.join(workdir, f"{algo}_{devices}.json")
    # One child at a time: RUSAGE_CHILDREN's peak is the largest so far, so each measurement runs
    # in a fresh helper process of its own.
    out, wall, rss, why = isolated(
        cleave, ["plan", model, "--cluster", cluster, "--algo", algo, "-o", plan_file, "--json"],
        cap, timeout)
    if why and not os.path.exists(plan_file):  # the search itself failed
        return f"| {algo} | {devices} | {why} | {wall:.1f} s | {gib(rss)} | | | |"
    # `cleave plan` writes the plan before evaluating it: its search time survives an evaluation
    # past the limits.
    with open(plan_file) as f:
        search = json.load(f)["provenance"]["search_time_s"]
    plan_wall = f"{wall:.1f} s" + (f" ({why})" if why else "")
    sim_out, sim_wall, sim_rss, sim_why = isolated(cleave, ["simulate", plan_file, "--json"], cap,
                                                   timeout)
    os.remove(plan_file)
    if sim_why:
        return (f"| {algo} | {devices} | {search:.1f} s | {plan_wall} | {gib(rss)} | "
                f"{sim_wall:.1f} s ({sim_why}) | {gib(sim_rss)} | |")
    tasks = json.loads(sim_out)["plans"][0]["priced_tasks"]
    return (f"| {algo} | {devices} | {search:.1f} s | {plan_wall} | {gib(rss)} | "
            f"{sim_wall:.1f} s | {gib(sim_rss)} | {tasks} |")


def isolated(cleave, args, cap, timeout):
    """measured() in a child of its own, so that its peak RSS is its own."""
    helper = [sys.executable, __file__, "--measure-one", str(cap), str(timeout), cleave] + args
    r = subprocess.run(helper, capture_output=True, text=True)
    result = json.loads(r.stdout)
    return result["out"], result["wall"], result["rss"], result["why"]


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--measure-one":
        cap, timeout = int(sys.argv[2]), float(sys.argv[3])
        out, wall, rss, why = measured(sys.argv[4:], cap, timeout)
        print(json.dumps({"out": out, "wall": wall, "rss": rss, "why": why}))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--cleave", default="build-release/cleave")
    ap.add_argument("--devices", default="8,64,512,1024")
    ap.add_argument("--algos", default="data-parallel,expert,tofu")
    ap.add_argument("--cap-gib", type=float, default=12)
    ap.add_argument("--timeout", type=float, default=1200)
    args = ap.parse_args()
    cap = int(args.cap_gib * 2**30)
    print(f"Model `{MODEL.format(batch='DEVICES')}` on `h100-2x8:nodes=DEVICES/8` (one sample per")
    print(f"device). Each command capped at {args.cap_gib:g} GiB of address space and "
          f"{args.timeout:g} s.")
    print("`plan`: `cleave plan --algo A -o P` (search, then lower + simulate of its plan); its")
    print("search time is the one the plan reports. `lower + simulate`: `cleave simulate P` (the")
    print("model built, the plan read, lowered, priced and simulated, memory explained).")
    print()
    print("| algorithm | devices | search | plan (wall) | plan peak RSS | lower + simulate (wall) "
          "| lower + simulate peak RSS | priced tasks |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as workdir:
        for devices in (int(d) for d in args.devices.split(",")):
            for algo in args.algos.split(","):
                print(row(args.cleave, algo, devices, cap, args.timeout, workdir), flush=True)


if __name__ == "__main__":
    main()
