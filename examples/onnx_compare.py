#!/usr/bin/python3
"""A PyTorch model exported to ONNX, planned by cleave's algorithms side by side on a cluster, and
an HTML report of the fastest plan that fits (or of the fastest, with what overflows explained).

Run from the repository root after building:

    PYTHONPATH=build/python /usr/bin/python3 examples/onnx_compare.py [OUT_DIR]

Writes OUT_DIR (default examples-out/) with resnet18.onnx, compare.html (every plan side by
side), the chosen plan (plan.json) and its report (report.html). docs/python.md has the API."""
import os
import sys
import warnings

import torch
import torchvision

import cleave

CLUSTER = "k80x8"  # Tofu's machine: 8 K80 dies of 12 GB on PCIe (`cleave clusters`)
ALGOS = ["data-parallel", "expert", "tofu", "mincut", "flexflow"]
BATCH = 32


def export(path):
    """torchvision's ResNet-18 in training mode (batch norm with batch statistics), opset 17."""
    model = torchvision.models.resnet18(num_classes=1000)
    example = torch.randn(BATCH, 3, 224, 224)
    with warnings.catch_warnings():
        # The exporter warns about every batch norm's step counter, which cleave does not train.
        warnings.simplefilter("ignore", UserWarning)
        torch.onnx.export(model, (example,), path, opset_version=17, do_constant_folding=False,
                          input_names=["input"], output_names=["output"],
                          training=torch.onnx.TrainingMode.TRAINING)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "examples-out"
    os.makedirs(out, exist_ok=True)
    onnx_path = os.path.join(out, "resnet18.onnx")
    export(onnx_path)
    print(f"exported {onnx_path}")

    model = cleave.load_model(onnx_path)  # imported, with cross-entropy of its output as the loss
    cluster = cleave.load_cluster(CLUSTER)
    print(f"{model.label}: {model.num_ops} ops in the training graph, batch {model.batch}")

    # FlexFlow's search is anytime: a budget bounds it; the others ignore the budget or finish first.
    rows = cleave.compare(model, cluster, ALGOS, budget_seconds=10,
                          html=os.path.join(out, "compare.html"))
    print(f"\n{'algorithm':<15}{'step':>12}{'samples/s':>12}{'peak GiB':>10}  fits")
    for r in rows:
        peak = max(r["peak_memory_bytes"]) / 2**30
        print(f"{r['algorithm']:<15}{r['step_time_s'] * 1e3:>10.2f}ms{r['samples_per_s']:>12.1f}"
              f"{peak:>10.2f}  {'yes' if r['fits'] else 'no'}")

    fitting = [r for r in rows if r["fits"]] or rows
    best = min(fitting, key=lambda r: r["step_time_s"])["algorithm"]
    # The search again, to keep its plan (a budget in seconds may end FlexFlow's elsewhere).
    plan = cleave.plan(model, cluster, best, budget_seconds=10)
    plan_path = os.path.join(out, "plan.json")
    plan.save(plan_path)
    report = os.path.join(out, "report.html")
    cleave.report(cleave.load_plan_input(plan_path), report)
    print(f"\nbest: {best}; wrote {os.path.join(out, 'compare.html')}, {plan_path}, {report}")


if __name__ == "__main__":
    main()
