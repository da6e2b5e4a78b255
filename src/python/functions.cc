// The functions of the Python module: thin shells over src/api, returning what the CLI's --json
// prints as Python dicts (so that the figures are the same by construction).
#include <atomic>
#include <cstdio>

#include "api/add_swaps.h"
#include "api/evaluate.h"
#include "api/html.h"
#include "api/plan_search.h"
#include "api/run.h"
#include "cluster/presets.h"
#include "models/model_zoo.h"
#include "plan/plan_json.h"
#include "python/bindings.h"
#include "report/plan_report.h"
#include "search/common/progress.h"
#include "search/search.h"
#include "support/file_io.h"

namespace cleave::python {

namespace {

api::TrainingFlags training_flags(std::string optimizer, std::optional<double> lr, std::string loss,
                                  bool allow_opaque, std::string precision = "") {
  return {std::move(optimizer), lr, std::move(loss), allow_opaque, std::move(precision),
          /*progress=*/stderr};
}

// An option's Python value as the command line would write it: 4 -> "4", [4, 2] -> "4,2".
std::string option_text(py::handle value) {
  if (py::isinstance<py::str>(value)) return value.cast<std::string>();
  if (py::isinstance<py::bool_>(value)) return value.cast<bool>() ? "1" : "0";
  if (py::isinstance<py::int_>(value)) return std::to_string(value.cast<std::int64_t>());
  if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
    std::string out;
    for (auto item : value)
      out += (out.empty() ? "" : ",") + option_text(item);
    return out;
  }
  raise(Error(ErrorCode::invalid_argument, "option value " + py::repr(value).cast<std::string>() +
                                               ": use an integer, a list of integers or a string"));
}

api::SearchRequest search_request(std::string algorithm, std::uint64_t seed,
                                  std::optional<double> budget_seconds,
                                  std::optional<std::int64_t> budget_iterations,
                                  py::kwargs const& options) {
  api::SearchRequest r;
  r.algorithm = std::move(algorithm);
  r.seed = seed;
  if (budget_seconds) r.budget.time = Seconds(*budget_seconds);
  r.budget.iterations = budget_iterations;
  for (auto const& [key, value] : options)
    r.options.emplace_back(key.cast<std::string>(), option_text(value));
  // Ctrl-C stops a search as in the CLI, with the best plan so far (marked interrupted): Python
  // only notes a signal while the search runs without the GIL, so the search's progress reports
  // ask it, at most every 0.1 s, and set the budget's stop flag.
  struct Interrupt {
    std::atomic<bool> stop{false};
    Seconds checked{0};
  };
  auto interrupt = std::make_shared<Interrupt>();
  r.budget.stop = &interrupt->stop;
  r.progress = [terminal = search::terminal_progress(stderr),
                interrupt](search::Progress const& p) {
    if (terminal) terminal(p);
    if (p.done || p.elapsed < interrupt->checked + Seconds(0.1)) return;
    interrupt->checked = p.elapsed;
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) {
      PyErr_Clear();
      interrupt->stop = true;
    }
  };
  return r;
}

// The one row of `cleave simulate --json` / `cleave plan --json`.
py::object row_dict(api::ModelInput const& model, ClusterInput const& cluster,
                    report::PlanRow row) {
  std::vector<report::PlanRow> rows;
  rows.push_back(std::move(row));
  return from_json(report::rows_to_json(model.label, cluster.spec, rows))["plans"][py::int_(0)];
}

py::object evaluate(api::ModelInput const& model, ClusterInput const& cluster, plan::Plan const& p,
                    std::string const& profile) {
  std::optional<report::PlanRow> row;
  {
    py::gil_scoped_release release;
    auto cost = unwrap(api::load_cost_model(cluster.cluster, profile));
    double ideal = unwrap(api::ideal_step_time(model, cost, registry()));
    row = unwrap(api::plan_row(model, p, cost, ideal, registry()));
  }
  return row_dict(model, cluster, std::move(*row));
}

// `cleave plan --swap --json`: the plan with swaps on every device it overflows, and its row (the
// plan with them evaluated; "swap" says per device what was over, swapped and what it costs).
py::tuple add_swaps(api::ModelInput const& model, ClusterInput const& cluster, plan::Plan const& p,
                    std::string const& profile) {
  std::vector<plan::Plan> plans{p};
  std::vector<report::PlanRow> rows;
  std::string json;
  {
    py::gil_scoped_release release;
    auto cost = unwrap(api::load_cost_model(cluster.cluster, profile));
    double ideal = unwrap(api::ideal_step_time(model, cost, registry()));
    rows.push_back(unwrap(api::plan_row(model, p, cost, ideal, registry())));
    auto swaps = unwrap(api::add_swaps(model, cost, registry(), plans, rows));
    json = api::rows_with_swaps_to_json(model.label, cluster.spec, rows, swaps);
  }
  return py::make_tuple(std::move(plans.front()), from_json(json)["plans"][py::int_(0)]);
}

std::shared_ptr<PlanBundle> load_plan_input(std::string const& path, api::TrainingFlags const& f) {
  auto in = unwrap(api::load_plan_input(path, registry(), f));
  auto cluster =
      std::make_shared<ClusterInput>(ClusterInput{in.plan.cluster, std::move(in.cluster)});
  return std::make_shared<PlanBundle>(PlanBundle{
      std::move(in.plan), std::make_shared<api::ModelInput>(std::move(in.model)), cluster});
}

py::object run(PlanBundle const& in, int steps, std::uint64_t seed, bool check, double tolerance,
               std::string const& trace, std::string const& profile, std::string const& loss,
               bool deterministic) {
  api::RunRequest request;
  request.steps = steps;
  request.seed = seed;
  request.check = check;
  request.deterministic = deterministic;
  request.tolerance = tolerance;
  request.profile = profile;
  request.progress = stderr;
  api::PlanInput input{in.plan, *in.model, in.cluster->cluster};
  std::string json;
  {
    py::gil_scoped_release release;
    auto out = unwrap(api::run_plan(input, request, registry(), loss));
    if (!trace.empty())
      unwrap(write_file_atomic(
          trace, report::chrome_trace(input.model.training, out.program, out.timeline)));
    json = api::run_to_json(input, request, out, loss);
  }
  return from_json(json);
}

void bind_loading(py::module_& m) {
  m.def(
      "load_model",
      [](std::string const& spec, std::string optimizer, std::optional<double> lr, std::string loss,
         bool allow_opaque, std::string precision) {
        auto flags = training_flags(std::move(optimizer), lr, std::move(loss), allow_opaque,
                                    std::move(precision));
        py::gil_scoped_release release;
        return std::make_shared<api::ModelInput>(unwrap(api::load_model(spec, registry(), flags)));
      },
      "a model's training graph: a zoo spec NAME[:key=value,...], a cleave.graph/1 file (.json) "
      "or an ONNX model (.onnx)",
      py::arg("spec"), py::arg("optimizer") = "sgd", py::arg("lr") = py::none(),
      py::arg("loss") = "loss", py::arg("allow_opaque") = false, py::arg("precision") = "");
  m.def(
      "load_cluster",
      [](std::string const& spec) {
        return std::make_shared<ClusterInput>(
            ClusterInput{spec, unwrap(cluster::load_cluster(spec))});
      },
      "a cluster preset NAME[:key=value,...] or a cleave.cluster/1 file", py::arg("spec"));
  m.def(
      "load_plan", [](std::string const& path) { return unwrap(plan::load_plan(path)); },
      "a cleave.plan/2 file", py::arg("path"));
  m.def(
      "plan_from_json", [](std::string const& text) { return unwrap(plan::plan_from_json(text)); },
      py::arg("text"));
  m.def(
      "load_plan_input",
      [](std::string const& path, std::string optimizer, std::optional<double> lr,
         std::string loss) {
        return load_plan_input(path, training_flags(std::move(optimizer), lr, std::move(loss),
                                                    /*allow_opaque=*/false));
      },
      "a saved plan with its model and cluster rebuilt from what it records", py::arg("path"),
      py::arg("optimizer") = "sgd", py::arg("lr") = py::none(), py::arg("loss") = "loss");
  m.def("algorithms", &search::algorithms, "the planning algorithms by name");
  m.def(
      "models", [] { return models::ModelZoo::with_builtins().names(); }, "the zoo's models");
}

void bind_planning(py::module_& m) {
  m.def(
      "plan",
      [](std::shared_ptr<api::ModelInput> model, std::shared_ptr<ClusterInput> cluster,
         std::string algo, std::uint64_t seed, std::optional<double> budget_seconds,
         std::optional<std::int64_t> budget_iterations, std::string const& profile,
         py::kwargs options) {
        auto request =
            search_request(std::move(algo), seed, budget_seconds, budget_iterations, options);
        py::gil_scoped_release release;
        auto cost = unwrap(api::load_cost_model(cluster->cluster, profile));
        return unwrap(api::make_plan(*model, cost, cluster->spec, request, registry()));
      },
      "search a plan with an algorithm (cleave.algorithms()); keyword arguments beyond these are "
      "the algorithm's options (cleave plan --help)",
      py::arg("model"), py::arg("cluster"), py::arg("algo") = "data-parallel", py::arg("seed") = 0,
      py::arg("budget_seconds") = py::none(), py::arg("budget_iterations") = py::none(),
      py::arg("profile") = "");
  m.def("evaluate", &evaluate,
        "a plan's prediction, as one row of `cleave simulate --json` (step_time_s, breakdown, "
        "devices, violations, ...)",
        py::arg("model"), py::arg("cluster"), py::arg("plan"), py::arg("profile") = "");
  m.def(
      "compare",
      [](std::shared_ptr<api::ModelInput> model, std::shared_ptr<ClusterInput> cluster,
         std::vector<std::string> algos, std::optional<double> budget_seconds,
         std::optional<std::int64_t> budget_iterations, std::string const& profile,
         std::string const& html, bool swap, py::kwargs options) -> py::object {
        auto request = search_request("", 0, budget_seconds, budget_iterations, options);
        std::string json;
        {
          py::gil_scoped_release release;
          auto cost = unwrap(api::load_cost_model(cluster->cluster, profile));
          std::vector<plan::Plan> plans;
          auto rows = unwrap(api::compare(*model, cost, cluster->spec, std::move(algos), request,
                                          registry(), &plans));
          std::vector<api::SwapOutcome> swaps;
          if (swap) swaps = unwrap(api::add_swaps(*model, cost, registry(), plans, rows));
          if (!html.empty())
            unwrap(write_file_atomic(html, unwrap(api::compare_html(*model, cluster->spec, cost,
                                                                    plans, rows, registry()))));
          json = api::rows_with_swaps_to_json(model->label, cluster->spec, rows, swaps);
        }
        return from_json(json)["plans"];
      },
      "every algorithm of ALGOS (default all) side by side: a list of dicts as `cleave compare "
      "--json` prints them, and the HTML page of them all to HTML if given; an option applies to "
      "each algorithm that declares it; SWAP: each plan with swaps where it overflows a device, as "
      "`--swap` (each row's \"swap\" says what they did)",
      py::arg("model"), py::arg("cluster"), py::arg("algos") = std::vector<std::string>{},
      py::arg("budget_seconds") = py::none(), py::arg("budget_iterations") = py::none(),
      py::arg("profile") = "", py::arg("html") = "", py::arg("swap") = false);
  m.def("add_swaps", &add_swaps,
        "`cleave plan --swap --json`: (the plan with swaps on every device it overflows, its row "
        "with \"swap\" saying per device what was over, what was swapped and the slowdown)",
        py::arg("model"), py::arg("cluster"), py::arg("plan"), py::arg("profile") = "");
  m.def(
      "report",
      [](PlanBundle const& in, std::string const& output, std::string const& run_trace,
         std::string const& profile) {
        py::gil_scoped_release release;
        api::PlanInput input{in.plan, *in.model, in.cluster->cluster};
        auto cost = unwrap(api::load_cost_model(input.cluster, profile));
        unwrap(write_file_atomic(output,
                                 unwrap(api::report_html(input, cost, run_trace, registry()))));
      },
      "write the plan's self-contained HTML page (`cleave report`) to OUTPUT; RUN_TRACE: a "
      "measured Chrome trace of it (run(..., trace=...)) drawn beside the simulated timeline",
      py::arg("plan_input"), py::arg("output"), py::arg("run_trace") = "", py::arg("profile") = "");
  m.def(
      "simulate",
      [](PlanBundle const& in, std::string const& trace, std::string const& profile) {
        py::object row = evaluate(*in.model, *in.cluster, in.plan, profile);
        if (!trace.empty()) {
          py::gil_scoped_release release;
          auto cost = unwrap(api::load_cost_model(in.cluster->cluster, profile));
          auto e = unwrap(api::evaluate(*in.model, in.plan, cost, registry()));
          unwrap(write_file_atomic(
              trace, report::chrome_trace(in.model->training, e.program, e.prediction)));
        }
        return row;
      },
      "evaluate a plan input as `cleave simulate --json` does, writing the simulated Chrome "
      "trace to TRACE if given",
      py::arg("plan_input"), py::arg("trace") = "", py::arg("profile") = "");
  m.def("run", &run,
        "real training steps on this machine's CPU, one worker per device: `cleave run --json`'s "
        "cleave.run/1 dict",
        py::arg("plan_input"), py::arg("steps") = 1, py::arg("seed") = 0, py::arg("check") = false,
        py::arg("tolerance") = runtime::default_tolerance, py::arg("trace") = "",
        py::arg("profile") = "", py::arg("loss") = "loss", py::arg("deterministic") = false);
}

}  // namespace

void bind_functions(py::module_& m) {
  bind_loading(m);
  bind_planning(m);
}

}  // namespace cleave::python
