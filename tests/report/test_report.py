"""`cleave report` and `cleave compare --html` opened by headless Chromium (Debian's chromium):
the page is self-contained, its script runs without a console message, the timeline and memory
charts are in the DOM with what they drew, the memory explanation lists evaluated fixes, and a
screenshot is taken. Run by ctest (tests/report/CMakeLists.txt) with CLEAVE_BINARY set."""

import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

CLEAVE = os.environ["CLEAVE_BINARY"]
CHROMIUM = shutil.which("chromium")
MODEL = "mlp:batch=16"


def cleave(*args, ok=True):
    done = subprocess.run([CLEAVE, *args], capture_output=True, text=True, check=False)
    if ok and done.returncode != 0:
        raise AssertionError(f"cleave {' '.join(args)} failed: {done.stderr}")
    return done


class Browser:
    """Headless Chromium on a file: the DOM after the page's script ran, and what it logged."""

    def __init__(self, tmp):
        self.tmp = tmp

    def run(self, page, *args):
        # As root Chromium needs --no-sandbox; the profile goes in the test's directory.
        cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               f"--user-data-dir={os.path.join(self.tmp, 'profile')}",
               "--enable-logging=stderr", "--v=0", *args, "file://" + page]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
        return done.stdout, [l for l in done.stderr.splitlines() if ":CONSOLE" in l]

    def dom(self, page):
        return self.run(page, "--dump-dom")

    def screenshot(self, page, png):
        return self.run(page, f"--screenshot={png}", "--window-size=1060,1400")


def attrs(dom, element_id):
    """The attributes of the element with this id, as a dict."""
    tag = re.search(r'<[a-z]+ [^>]*id="' + re.escape(element_id) + r'"[^>]*>', dom)
    if not tag:
        raise AssertionError(f"no element #{element_id} in the DOM")
    return dict(re.findall(r'([a-z-]+)="([^"]*)"', tag.group(0)))


@unittest.skipUnless(CHROMIUM, "chromium is not installed (scripts/install-deps.sh)")
class Report(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.tmp = cls.dir.name
        cls.browser = Browser(cls.tmp)
        cls.plan = os.path.join(cls.tmp, "tofu.json")
        cleave("plan", MODEL, "--cluster", "cpu:devices=2", "--algo", "tofu", "-o", cls.plan)
        cls.trace = os.path.join(cls.tmp, "run.json")
        cls.run_result = json.loads(cleave("run", cls.plan, "--trace", cls.trace, "--json").stdout)
        cls.page = os.path.join(cls.tmp, "report.html")
        cleave("report", cls.plan, "--run", cls.trace, "-o", cls.page)

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def test_the_page_is_self_contained(self):
        with open(self.page, encoding="utf-8") as f:
            html = f.read()
        self.assertNotIn("<link", html)
        self.assertNotRegex(html, r"<script[^>]* src=")
        self.assertNotRegex(html, r"(src|href)=\"?https?:")
        self.assertNotIn("@import", html)
        self.assertNotIn("url(", html)
        self.assertNotIn("fetch(", html)

    def test_chromium_draws_the_timelines_and_memory_charts(self):
        dom, console = self.browser.dom(self.page)
        self.assertEqual(console, [])
        self.assertIn('data-rendered="ok"', dom)
        simulated = attrs(dom, "timeline-0-simulated")
        measured = attrs(dom, "timeline-0-measured")
        self.assertEqual(simulated["data-events"], measured["data-events"])
        self.assertGreater(int(simulated["data-events"]), 10)
        for device in (0, 1):
            memory = attrs(dom, f"memory-0-{device}")
            self.assertGreater(int(memory["data-points"]), 2)
            self.assertGreater(int(memory["data-roles"]), 1)
            # Beside it, what the run's arena held: its peak is the run's measured peak.
            measured = attrs(dom, f"memory-measured-0-{device}")
            self.assertGreater(int(measured["data-points"]), 2)
            self.assertEqual(int(measured["data-peak-bytes"]),
                             self.run_result["devices"][device]["peak_memory_bytes"])
        self.assertIn('class="peak-marker"', dom)
        self.assertIn('id="links-0"', dom)
        self.assertIn("fc1.linear", dom)  # the plan per op

    def test_a_screenshot_is_taken(self):
        png = os.path.join(self.tmp, "report.png")
        _, console = self.browser.screenshot(self.page, png)
        self.assertEqual(console, [])
        with open(png, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")

    def test_an_over_capacity_plan_is_explained_with_evaluated_fixes(self):
        plan = os.path.join(self.tmp, "small.json")
        cleave("plan", MODEL, "--cluster", "cpu:devices=2,memory=16MiB", "--algo",
               "data-parallel", "-o", plan)
        page = os.path.join(self.tmp, "small.html")
        cleave("report", plan, "-o", page)
        dom, console = self.browser.dom(page)
        self.assertEqual(console, [])
        for device in (0, 1):
            self.assertIn(f'id="explain-0-{device}"', dom)
        self.assertIn("over capacity by", dom)
        # The page's data: every computed fix's saving is its peak before less after.
        with open(page, encoding="utf-8") as f:
            data = json.loads(re.search(r'id="cleave-data">(.*?)</script>', f.read(), re.S)
                              .group(1).replace("<\\/", "</"))
        p = data["plans"][0]
        computed = 0
        for device_fixes in p["fixes"]:
            before = p["devices"][device_fixes["device"]]["peak_memory_bytes"]
            for fix in device_fixes["fixes"]:
                if fix["computed"]:
                    computed += 1
                    self.assertEqual(fix["saved_bytes"], before - fix["peak_bytes"])
                else:
                    self.assertTrue(fix["change"].startswith("not computed: "))
        self.assertGreater(computed, 0)

    def test_swap_and_recomputation_fixes_of_an_activation_heavy_plan(self):
        # 8 MiB of saved activations per device against 10 MiB: the swap planner's swaps are
        # evaluated on the changed plan; recomputation is an estimate, marked as one.
        plan = os.path.join(self.tmp, "activations.json")
        cleave("plan", "mlp:batch=2048,hidden=256,layers=8,input=256", "--cluster",
               "cpu:devices=2,memory=10MiB", "--algo", "data-parallel", "-o", plan)
        page = os.path.join(self.tmp, "activations.html")
        cleave("report", plan, "-o", page)
        dom, console = self.browser.dom(page)
        self.assertEqual(console, [])
        self.assertIn("recomputation (estimate)", dom)
        with open(page, encoding="utf-8") as f:
            data = json.loads(re.search(r'id="cleave-data">(.*?)</script>', f.read(), re.S)
                              .group(1).replace("<\\/", "</"))
        p = data["plans"][0]
        self.assertEqual(len(p["fixes"]), 2)
        for device_fixes in p["fixes"]:
            before = p["devices"][device_fixes["device"]]["peak_memory_bytes"]
            fixes = {f["name"]: f for f in device_fixes["fixes"]}
            swap, recompute = fixes["swap"], fixes["recomputation"]
            self.assertTrue(swap["computed"], swap["change"])
            self.assertFalse(swap["estimate"])
            self.assertIn("swap planner", swap["change"])
            self.assertEqual(swap["saved_bytes"], before - swap["peak_bytes"])
            self.assertTrue(swap["device_fits"])
            self.assertGreaterEqual(swap["step_time_s"], p["step_time_s"])
            self.assertTrue(recompute["estimate"])
            self.assertIn("estimate", recompute["change"])
            self.assertEqual(recompute["saved_bytes"], before - recompute["peak_bytes"])
            self.assertGreater(recompute["saved_bytes"], 0)
            self.assertGreater(recompute["step_time_s"], p["step_time_s"])

    def test_compare_sets_plans_side_by_side(self):
        page = os.path.join(self.tmp, "compare.html")
        cleave("compare", MODEL, "--cluster", "cpu:devices=2", "--algos", "data-parallel,tofu",
               "--html", page)
        dom, console = self.browser.dom(page)
        self.assertEqual(console, [])
        for plan in (0, 1):
            self.assertIn(f'id="plan-{plan}"', dom)
            self.assertGreater(int(attrs(dom, f"timeline-{plan}-simulated")["data-events"]), 0)

    def test_a_bad_run_trace_is_an_error(self):
        not_a_trace = os.path.join(self.tmp, "not_a_trace.json")
        with open(not_a_trace, "w", encoding="utf-8") as f:
            json.dump({"format": "cleave.run/1"}, f)
        out = os.path.join(self.tmp, "bad.html")
        done = cleave("report", self.plan, "--run", not_a_trace, "-o", out, ok=False)
        self.assertEqual(done.returncode, 1)
        self.assertIn("expected a Chrome trace", done.stderr)
        other = os.path.join(self.tmp, "other_devices.json")
        with open(other, "w", encoding="utf-8") as f:
            json.dump({"traceEvents": [{"ph": "X", "pid": 5, "tid": 0, "ts": 0, "dur": 1,
                                        "name": "x"}]}, f)
        done = cleave("report", self.plan, "--run", other, "-o", out, ok=False)
        self.assertIn("the plan has 2 devices", done.stderr)
        self.assertFalse(os.path.exists(out))
        counter = os.path.join(self.tmp, "bad_counter.json")
        with open(counter, "w", encoding="utf-8") as f:
            json.dump({"traceEvents": [{"ph": "C", "pid": 0, "ts": 0, "name": "memory",
                                        "args": {"bytes": "many"}}]}, f)
        done = cleave("report", self.plan, "--run", counter, "-o", out, ok=False)
        self.assertIn("a memory counter without", done.stderr)
        self.assertFalse(os.path.exists(out))
        # A pid past int's range was narrowed to a device that exists (2^32 became 0).
        with open(counter, "w", encoding="utf-8") as f:
            json.dump({"traceEvents": [{"ph": "C", "pid": 2**32, "ts": 0, "name": "memory",
                                        "args": {"bytes": 1}}]}, f)
        done = cleave("report", self.plan, "--run", counter, "-o", out, ok=False)
        self.assertIn("a memory counter of device 4294967296: the plan has 2 devices", done.stderr)
        self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    unittest.main()
