"""`import cleave` against the `cleave` program: the same model, cluster and plan give the same
figures through Python as through the CLI's --json, and an edit made in Python evaluates as the
same edit made to the plan file. Run by ctest (tests/python/CMakeLists.txt) with
PYTHONPATH=build/python and CLEAVE_BINARY set."""

import json
import os
import signal
import subprocess
import sys
import tempfile
import unittest

import cleave

CLEAVE = os.environ["CLEAVE_BINARY"]
MODEL = "mlp:batch=16"
CLUSTER = "cpu:devices=2"
# The figures of a plan that do not depend on when it was searched.
FIGURES = ["step_time_s", "samples_per_s", "ideal_step_time_s", "efficiency",
           "peak_memory_bytes", "memory_capacity_bytes", "fits", "comm_bytes", "link_bytes",
           "breakdown", "devices", "violations", "algorithm"]


def cli(*args):
    done = subprocess.run([CLEAVE, *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise AssertionError(f"cleave {' '.join(args)} failed: {done.stderr}")
    return done.stdout


def cli_json(*args):
    return json.loads(cli(*args, "--json"))


class Figures(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.plan_path = os.path.join(cls.dir.name, "tofu.json")
        cls.cli_row = cli_json("plan", MODEL, "--cluster", CLUSTER, "--algo", "tofu",
                               "-o", cls.plan_path)["plans"][0]
        cls.model = cleave.load_model(MODEL)
        cls.cluster = cleave.load_cluster(CLUSTER)

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def assert_same_figures(self, py_row, cli_row):
        for key in FIGURES:
            self.assertEqual(py_row[key], cli_row[key], key)

    def test_plan_and_evaluate_match_the_cli(self):
        plan = cleave.plan(self.model, self.cluster, "tofu")
        self.assertEqual(plan.algorithm, "tofu")
        self.assert_same_figures(cleave.evaluate(self.model, self.cluster, plan), self.cli_row)
        saved = cleave.load_plan(self.plan_path)
        self.assertEqual([(c.degrees, c.devices) for c in plan.ops],
                         [(c.degrees, c.devices) for c in saved.ops])

    def test_options_reach_the_search(self):
        cli_row = cli_json("plan", MODEL, "--cluster", CLUSTER, "--algo", "tofu",
                           "--option", "fetch=shared")["plans"][0]
        plan = cleave.plan(self.model, self.cluster, "tofu", fetch="shared")
        self.assertIn("fetch=shared", plan.config)
        self.assert_same_figures(cleave.evaluate(self.model, self.cluster, plan), cli_row)

    def test_simulate_matches_the_cli(self):
        plan_input = cleave.load_plan_input(self.plan_path)
        trace = os.path.join(self.dir.name, "trace.json")
        row = cleave.simulate(plan_input, trace=trace)
        self.assert_same_figures(row, cli_json("simulate", self.plan_path)["plans"][0])
        with open(trace, encoding="utf-8") as f:
            self.assertTrue(json.load(f)["traceEvents"])

    def test_compare_matches_the_cli(self):
        algos = ["data-parallel", "tofu", "mincut"]
        cli_rows = cli_json("compare", MODEL, "--cluster", CLUSTER, "--algos",
                            ",".join(algos))["plans"]
        rows = cleave.compare(self.model, self.cluster, algos)
        self.assertEqual([r["algorithm"] for r in rows], algos)
        for py_row, cli_row in zip(rows, cli_rows):
            self.assert_same_figures(py_row, cli_row)

    def test_swaps_match_the_cli(self):
        # Tofu's plan of this MLP peaks at 13.0 MiB on each device, over the 10 MiB cap.
        model_spec = "mlp:batch=2048,hidden=256,layers=8,input=256"
        cluster_spec = "cpu:devices=2,memory=10MiB"
        cli_row = cli_json("plan", model_spec, "--cluster", cluster_spec, "--algo", "tofu",
                           "--swap")["plans"][0]
        model = cleave.load_model(model_spec)
        cluster = cleave.load_cluster(cluster_spec)
        plan = cleave.plan(model, cluster, "tofu")
        self.assertFalse(cleave.evaluate(model, cluster, plan)["fits"])
        swapped, row = cleave.add_swaps(model, cluster, plan)
        self.assert_same_figures(row, cli_row)
        self.assertEqual(row["swap"], cli_row["swap"])
        self.assertTrue(row["swap"]["changed"] and row["swap"]["fits"])
        self.assertTrue(swapped.has_order)
        self.assertTrue(cleave.evaluate(model, cluster, swapped)["fits"])
        rows = cleave.compare(model, cluster, ["tofu"], swap=True)
        self.assertEqual(rows[0]["swap"], cli_row["swap"])
        self.assertNotIn("swap", cleave.compare(model, cluster, ["tofu"])[0])

    def test_report_and_compare_write_html(self):
        page = os.path.join(self.dir.name, "report.html")
        trace = os.path.join(self.dir.name, "run_trace.json")
        plan_input = cleave.load_plan_input(self.plan_path)
        result = cleave.run(plan_input, trace=trace)
        # The run's trace carries each device's measured memory over time, up to its peak.
        with open(trace, encoding="utf-8") as f:
            counters = [e for e in json.load(f)["traceEvents"] if e["ph"] == "C"]
        for device, stats in enumerate(result["devices"]):
            self.assertEqual(max(e["args"]["bytes"] for e in counters if e["pid"] == device),
                             stats["peak_memory_bytes"])
        cleave.report(plan_input, page, run_trace=trace)
        with open(page, encoding="utf-8") as f:
            self.assertIn('"label":"measured"', f.read())
        page = os.path.join(self.dir.name, "compare.html")
        rows = cleave.compare(self.model, self.cluster, ["single", "tofu"], html=page)
        with open(page, encoding="utf-8") as f:
            data = f.read()
        for row in rows:
            self.assertIn('"title":"%s"' % row["algorithm"], data)

    def test_run_matches_the_cli(self):
        cli_run = cli_json("run", self.plan_path, "--steps", "2", "--seed", "3", "--check")
        run = cleave.run(cleave.load_plan_input(self.plan_path), steps=2, seed=3, check=True)
        self.assertEqual(run["format"], "cleave.run/1")
        self.assertEqual(len(run["step_times_s"]), 2)
        for key in ["loss", "predicted_step_time_s", "model", "cluster", "algorithm"]:
            self.assertEqual(run[key], cli_run[key], key)
        self.assertTrue(run["check"]["passed"])
        for py_dev, cli_dev in zip(run["devices"], cli_run["devices"]):
            for key in ["name", "predicted_peak_memory_bytes", "memory_capacity_bytes",
                        "kernel_tasks", "interpreted_tasks"]:
                self.assertEqual(py_dev[key], cli_dev[key], key)


class Editing(unittest.TestCase):
    def test_an_edit_in_python_evaluates_as_the_same_edit_to_the_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "dp.json")
            cli("plan", MODEL, "--cluster", CLUSTER, "--algo", "data-parallel", "-o", path)
            plan_input = cleave.load_plan_input(path)
            model = plan_input.model
            op = model.find_op("fc1.linear")
            dims = [d["name"] for d in model.op_dims("fc1.linear")]
            degrees = [2 if d == "o" else 1 for d in dims]
            before = cleave.evaluate(model, plan_input.cluster, plan_input.plan)
            # The edit: split fc1's output features instead of its batch, and put the halves on
            # devices 1 and 0.
            plan_input.plan.ops[op].degrees = degrees
            plan_input.plan.ops[op].devices = [1, 0]
            self.assertEqual(plan_input.plan.ops[op].devices, [1, 0])
            after = cleave.evaluate(model, plan_input.cluster, plan_input.plan)

            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
            doc["ops"][op] = {"degrees": degrees, "devices": [1, 0]}
            edited = os.path.join(tmp, "edited.json")
            with open(edited, "w", encoding="utf-8") as f:
                json.dump(doc, f)
            cli_after = cli_json("simulate", edited)["plans"][0]
            for key in ["step_time_s", "peak_memory_bytes", "comm_bytes", "link_bytes",
                        "breakdown", "devices"]:
                self.assertEqual(after[key], cli_after[key], key)
            self.assertNotEqual(after["comm_bytes"], before["comm_bytes"])

            saved = os.path.join(tmp, "saved.json")
            plan_input.plan.save(saved)
            with open(saved, encoding="utf-8") as f:
                self.assertEqual(json.load(f)["ops"][op], {"degrees": degrees, "devices": [1, 0]})


# A search that cannot finish within the test: only Ctrl-C ends it early. The test sends one
# SIGINT per "ready"; one that lands before the search has begun raises KeyboardInterrupt in
# Python, and the child says "ready" again.
INTERRUPTED_CHILD = """
import cleave, json
model = cleave.load_model("mlp:layers=4,hidden=64,input=32,classes=8,batch=32")
cluster = cleave.load_cluster("cpu:devices=4")
while True:
    try:
        print("ready", flush=True)
        plan = cleave.plan(model, cluster, "flexflow", budget_seconds=120,
                           budget_iterations=1000000000)
        break
    except KeyboardInterrupt:
        pass
print(json.dumps({"interrupted": plan.interrupted, "algorithm": plan.algorithm}), flush=True)
"""


class Interrupt(unittest.TestCase):
    def test_ctrl_c_stops_a_search_with_its_best_plan(self):
        with subprocess.Popen([sys.executable, "-c", INTERRUPTED_CHILD], stdout=subprocess.PIPE,
                              text=True) as child:
            line = child.stdout.readline().strip()
            while line == "ready":
                child.send_signal(signal.SIGINT)
                line = child.stdout.readline().strip()
            self.assertEqual(child.wait(timeout=60), 0)
        self.assertEqual(json.loads(line), {"interrupted": True, "algorithm": "flexflow"})


class Errors(unittest.TestCase):
    def assert_same_error(self, call, *cli_args):
        done = subprocess.run([CLEAVE, *cli_args], capture_output=True, text=True, check=False)
        self.assertEqual(done.returncode, 1)
        with self.assertRaises(cleave.Error) as raised:
            call()
        self.assertEqual(str(raised.exception), done.stderr.strip())

    def test_precision_is_the_clis(self):
        amp = cleave.load_model(MODEL, precision="amp-bf16")
        self.assertGreater(amp.num_ops, cleave.load_model(MODEL).num_ops)  # the casts
        self.assertEqual(amp.num_ops, cli_json("inspect", MODEL, "--precision", "amp-bf16")["training_ops"])
        self.assert_same_error(lambda: cleave.load_model(MODEL, precision="fp8"),
                               "inspect", MODEL, "--precision", "fp8")

    def test_errors_carry_cleaves_message(self):
        self.assert_same_error(lambda: cleave.load_model("no-such-model"),
                               "inspect", "no-such-model")
        self.assert_same_error(lambda: cleave.load_cluster("k80x8:gpus=0"),
                               "clusters", "--show", "k80x8:gpus=0")
        model = cleave.load_model(MODEL)
        cluster = cleave.load_cluster(CLUSTER)
        self.assert_same_error(lambda: cleave.plan(model, cluster, "tofu", ways="x"),
                               "plan", MODEL, "--cluster", CLUSTER, "--algo", "tofu",
                               "--option", "ways=x")

    def test_an_invalid_edit_is_an_error_not_a_crash(self):
        model = cleave.load_model(MODEL)
        cluster = cleave.load_cluster(CLUSTER)
        plan = cleave.plan(model, cluster, "single")
        plan.ops[0].devices = [7]
        with self.assertRaisesRegex(cleave.Error, "device"):
            cleave.evaluate(model, cluster, plan)
        with self.assertRaisesRegex(cleave.Error, "no op named 'nope'"):
            model.find_op("nope")
        with self.assertRaises(cleave.Error):
            cleave.plan(model, cluster, "tofu", ways=1.5)


if __name__ == "__main__":
    unittest.main()
