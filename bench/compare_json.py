"""`cleave compare --json` from the evaluation scripts (tofu_eval.py, flexflow_eval.py)."""
import json
import subprocess


def compare(cleave, model, cluster, algos, timeout):
    """The JSON rows of `cleave compare`, or (None, error text)."""
    cmd = [cleave, "compare", model, "--cluster", cluster, "--algos", ",".join(algos), "--json"]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout} s"
    if r.returncode != 0:
        return None, (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1]
    return json.loads(r.stdout)["plans"], None
