"""`cleave compare --json` from the evaluation scripts (tofu_eval.py, flexflow_eval.py)."""
import json

from cleave_cli import run


def compare(cleave, model, cluster, algos, timeout, extra=()):
    """The JSON rows of `cleave compare` (`extra`: more of its arguments), or (None, error text)."""
    cmd = [cleave, "compare", model, "--cluster", cluster, "--algos", ",".join(algos), "--json",
           *extra]
    out, err = run(cmd, timeout)
    return (json.loads(out)["plans"], None) if out is not None else (None, err)
