#!/usr/bin/env python3
"""Measures a GPU's link to host memory with PyTorch, as swapping uses it (issue 18): pinned
host <-> device copies one way, both ways at once on two streams, and each way beside a
compute-bound matrix product on a third stream (does a copy slow the computation, or the
computation the copy?). Runs on the GPU machine; writes one JSON file.

  gpu_host_link.py --out FILE [--mib N] [--reps R]

cleave's simulator gives each direction of the host link its own bandwidth (the presets' `host`
key) and lets copies overlap computation at full rate; gpu_measured.md sets these figures beside
the H100 preset's 50 GB/s.
"""
import argparse
import json
import statistics
import sys

import torch


def timed(streams_work, reps):
    """Median seconds each (stream, fn) took when all ran at once: from one shared start event to
    an event recorded on its own stream after its work."""
    times = [[] for _ in streams_work]
    for i in range(reps + 2):
        torch.cuda.synchronize()
        start = torch.cuda.Event(enable_timing=True)
        start.record()
        ends = []
        for stream, fn in streams_work:
            stream.wait_event(start)
            with torch.cuda.stream(stream):
                fn()
                ends.append(torch.cuda.Event(enable_timing=True))
                ends[-1].record()
        torch.cuda.synchronize()
        if i >= 2:
            for t, end in zip(times, ends):
                t.append(start.elapsed_time(end) / 1e3)
    return [statistics.median(t) for t in times]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--mib", type=int, default=1024, help="bytes per copy, in MiB")
    ap.add_argument("--reps", type=int, default=10)
    args = ap.parse_args()
    n = args.mib << 20
    host = torch.empty(n, dtype=torch.uint8, pin_memory=True)
    host2 = torch.empty(n, dtype=torch.uint8, pin_memory=True)
    dev = torch.empty(n, dtype=torch.uint8, device="cuda")
    dev2 = torch.empty(n, dtype=torch.uint8, device="cuda")
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    s_in, s_out, s_mm = torch.cuda.Stream(), torch.cuda.Stream(), torch.cuda.Stream()
    h2d = (s_in, lambda: dev.copy_(host, non_blocking=True))
    d2h = (s_out, lambda: host2.copy_(dev2, non_blocking=True))
    matmuls = 8
    mm = (s_mm, lambda: [torch.mm(a, a) for _ in range(matmuls)])
    # A memory-bound kernel beside the copies: they share the GPU's memory, not its SMs.
    x = torch.zeros(1 << 29, device="cuda")
    adds = 8
    ew = (s_mm, lambda: [x.add_(1.0) for _ in range(adds)])
    r = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "bytes": n,
         "reps": args.reps, "matmul": f"{matmuls} bf16 8192^3 products",
         "elementwise": f"{adds} in-place adds over 2 GiB of fp32"}
    r["h2d_s"], = timed([h2d], args.reps)
    r["d2h_s"], = timed([d2h], args.reps)
    r["matmul_s"], = timed([mm], args.reps)
    r["both_ways_s"] = timed([h2d, d2h], args.reps)
    r["h2d_beside_matmul_s"] = timed([h2d, mm], args.reps)
    r["d2h_beside_matmul_s"] = timed([d2h, mm], args.reps)
    r["both_ways_beside_matmul_s"] = timed([h2d, d2h, mm], args.reps)
    r["elementwise_s"], = timed([ew], args.reps)
    r["both_ways_beside_elementwise_s"] = timed([h2d, d2h, ew], args.reps)
    gb = n / 1e9
    r["h2d_GBps"], r["d2h_GBps"] = gb / r["h2d_s"], gb / r["d2h_s"]
    r["both_ways_GBps"] = [gb / t for t in r["both_ways_s"]]
    r["matmul_TFLOPps"] = matmuls * 2 * 8192**3 / r["matmul_s"] / 1e12
    r["elementwise_TBps"] = adds * 2 * x.numel() * 4 / r["elementwise_s"] / 1e12
    for mib in (16, 64, 256):  # smaller copies: the latency's share
        m = mib << 20
        r[f"h2d_{mib}MiB_GBps"] = m / 1e9 / timed([(s_in, lambda: dev[:m].copy_(
            host[:m], non_blocking=True))], args.reps)[0]
        r[f"d2h_{mib}MiB_GBps"] = m / 1e9 / timed([(s_out, lambda: host2[:m].copy_(
            dev2[:m], non_blocking=True))], args.reps)[0]
    print(json.dumps(r, indent=1), flush=True)
    with open(args.out, "w") as f:
        json.dump(r, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
