#!/usr/bin/python3
"""cleave's GPU predictions beside published training throughputs (issue 24).

Runs `cleave compare MODEL --cluster C --algos A --json` for every row and prints a Markdown
table: source, published throughput, cleave's prediction, their ratio (predicted / published),
and whether the GPU model's constants were fitted on the row (src/cost/gpu_compute.cc) or the row
is held out. docs/cost_model.md explains the rows and the disagreements.

  gpu_truth.py [--cleave BIN] [--timeout S]
"""
import argparse
import statistics
import sys

from compare_json import compare

DLE_RN50 = ("NVIDIA DeepLearningExamples, PyTorch ResNet-50 v1.5 README, NGC 21.03 "
            "(PyTorch/Classification/ConvNets/resnet50v1.5)")
DLE_BERT = ("NVIDIA DeepLearningExamples, PyTorch BERT README, NGC 20.06, pre-training "
            "(PyTorch/LanguageModeling/BERT)")
FOUNDRY = ("MosaicML llm-foundry scripts/train/benchmarking/README.md (MPT, FSDP FULL_SHARD, "
           "flash attention, no activation checkpointing)")

RN50 = "resnet:depth=50,batch={b},precision={p}"
BERT = "bert:layers=24,hidden=1024,heads=16,seq={s},vocab=30528,batch={b},dropout=0.1,precision={p}"
MPT = "gpt:layers={l},hidden={h},heads={n},seq=512,vocab=50368,batch={b},precision=amp-bf16"

# (label, device, precision, model spec, cluster, algorithm, GPUs, published, unit, source, fit)
# unit "samples/s": the whole machine's samples per second; "tokens/s/GPU": tokens per second
# per GPU (samples/s x sequence length / GPUs). A model's batch is the whole step's: on 8 GPUs,
# 8 x the published batch per GPU.
ROWS = [
    ("ResNet-50", "V100", "AMP", RN50.format(b=256, p="amp-fp16"), "v100x1", "single", 1, 1200,
     "samples/s", DLE_RN50 + ", DGX-1 16 GB, 1 GPU, batch 256", True),
    ("ResNet-50", "V100", "FP32", RN50.format(b=112, p="fp32"), "v100x1", "single", 1, 367,
     "samples/s", DLE_RN50 + ", DGX-1 16 GB, 1 GPU, batch 112", True),
    ("ResNet-50", "A100", "AMP", RN50.format(b=256, p="amp-fp16"), "dgx-a100", "single", 1, 2470,
     "samples/s", DLE_RN50 + ", DGX A100 80 GB, 1 GPU, batch 256", True),
    ("ResNet-50", "A100", "TF32", RN50.format(b=256, p="tf32"), "dgx-a100", "single", 1, 938,
     "samples/s", DLE_RN50 + ", DGX A100 80 GB, 1 GPU, batch 256", True),
    ("BERT-large seq 128", "V100", "AMP", BERT.format(s=128, b=16, p="amp-fp16"), "v100x1",
     "single", 1, 164, "samples/s", DLE_BERT + ", DGX-1 16 GB, 1 GPU", True),
    ("BERT-large seq 128", "V100", "FP32", BERT.format(s=128, b=8, p="fp32"), "v100x1", "single",
     1, 40, "samples/s", DLE_BERT + ", DGX-1 16 GB, 1 GPU", False),
    ("BERT-large seq 128", "A100", "AMP", BERT.format(s=128, b=64, p="amp-fp16"),
     "dgx-a100-40gb",
     "single", 1, 415, "samples/s", DLE_BERT + ", DGX A100 40 GB, 1 GPU", True),
    ("BERT-large seq 128", "A100", "TF32", BERT.format(s=128, b=54, p="tf32"),
     "dgx-a100-40gb",
     "single", 1, 234, "samples/s", DLE_BERT + ", DGX A100 40 GB, 1 GPU", False),
    ("BERT-large seq 512", "V100", "AMP", BERT.format(s=512, b=4, p="amp-fp16"), "v100x1",
     "single", 1, 34, "samples/s", DLE_BERT + ", DGX-1 16 GB, 1 GPU", False),
    ("BERT-large seq 512", "A100", "AMP", BERT.format(s=512, b=16, p="amp-fp16"),
     "dgx-a100-40gb",
     "single", 1, 78, "samples/s", DLE_BERT + ", DGX A100 40 GB, 1 GPU", False),
    ("ResNet-50", "8x A100", "AMP", RN50.format(b=2048, p="amp-fp16"), "dgx-a100",
     "data-parallel", 8, 16621, "samples/s", DLE_RN50 + ", DGX A100 80 GB, 8 GPUs, batch 256 "
     "per GPU", False),
    ("ResNet-50", "8x A100", "TF32", RN50.format(b=2048, p="tf32"), "dgx-a100", "data-parallel", 8,
     7248, "samples/s", DLE_RN50 + ", DGX A100 80 GB, 8 GPUs, batch 256 per GPU", False),
    ("MPT-1B seq 512", "8x A100", "AMP bf16", MPT.format(l=24, h=2048, n=16, b=8 * 56),
     "dgx-a100", "data-parallel", 8, 23148, "tokens/s/GPU", FOUNDRY + ", A100 80 GB, micro-batch "
     "56", False),
    ("MPT-3B seq 512", "8x A100", "AMP bf16", MPT.format(l=32, h=2560, n=20, b=8 * 40),
     "dgx-a100", "data-parallel", 8, 12127, "tokens/s/GPU", FOUNDRY + ", A100 80 GB, micro-batch "
     "40", False),
    ("MPT-1B seq 512", "8x H100", "AMP bf16", MPT.format(l=24, h=2048, n=16, b=8 * 56),
     "h100-2x8:nodes=1", "data-parallel", 8, 52275, "tokens/s/GPU", FOUNDRY + ", H100 80 GB, "
     "micro-batch 56", False),
    ("MPT-3B seq 512", "8x H100", "AMP bf16", MPT.format(l=32, h=2560, n=20, b=8 * 40),
     "h100-2x8:nodes=1", "data-parallel", 8, 27965, "tokens/s/GPU", FOUNDRY + ", H100 80 GB, "
     "micro-batch 40", False),
]


def predicted(row, timeout):
    _, _, _, spec, cluster, algo, gpus, _, unit, _, _ = row
    plans, err = compare(ARGS.cleave, spec, cluster, [algo], timeout)
    if plans is None:
        return None, err
    p = plans[0]
    if unit == "tokens/s/GPU":
        return p["samples_per_s"] * 512 / gpus, None
    return p["samples_per_s"], None


def main():
    print("| model | GPUs | precision | cleave model, cluster, algorithm | published | cleave "
          "| ratio | fit | source |")
    print("|---|---|---|---|---|---|---|---|---|")
    ratios = {True: [], False: []}
    for row in ROWS:
        label, device, prec, spec, cluster, algo, _, published, unit, source, fit = row
        value, err = predicted(row, ARGS.timeout)
        if value is None:
            print(f"| {label} | {device} | {prec} | `{spec}`, `{cluster}`, {algo} | {published} "
                  f"{unit} | failed: {err} | — | {'fit' if fit else 'held out'} | {source} |")
            continue
        ratio = value / published
        ratios[fit].append(ratio)
        print(f"| {label} | {device} | {prec} | `{spec}`, `{cluster}`, {algo} | {published} {unit} "
              f"| {value:.0f} | {ratio:.2f} | {'fit' if fit else 'held out'} | {source} |")
    every = ratios[True] + ratios[False]
    print()
    for name, rs in (("all rows", every), ("fit rows", ratios[True]),
                     ("held-out rows", ratios[False])):
        if rs:
            inside = sum(1 for r in rs if 0.8 <= r <= 1.25)
            print(f"- {name}: {len(rs)}, median ratio {statistics.median(rs):.2f}, range "
                  f"{min(rs):.2f}-{max(rs):.2f}, {inside} of {len(rs)} within 0.8-1.25")
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--cleave", default="build-release/cleave")
    ap.add_argument("--timeout", type=int, default=900)
    ARGS = ap.parse_args()
    sys.exit(main())
