"""Runs the cleave program for the bench scripts (tofu_eval.py, mincut_eval.py)."""
import subprocess


def run(cmd, timeout):
    """(stdout, None), or (None, the last line of stderr or why it did not finish)."""
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout} s"
    if r.returncode != 0:
        return None, (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1]
    return r.stdout, None
