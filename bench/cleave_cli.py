"""Runs the cleave program for the bench scripts (tofu_eval.py, mincut_eval.py)."""
import subprocess


def run(cmd, timeout):
    """(stdout, None), or (None, the error stderr ends with or why it did not finish)."""
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout} s"
    if r.returncode != 0:
        lines = r.stderr.strip().splitlines() or ["exit %d" % r.returncode]
        # The last error and its context lines ("  in ..."), which follow it; else the last line.
        start = max((i for i, line in enumerate(lines) if line.startswith("error")),
                    default=len(lines) - 1)
        return None, "; ".join(line.strip() for line in lines[start:])
    return r.stdout, None
