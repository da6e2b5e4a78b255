// Simulator fidelity (issue 6): predicted against measured step time of real plans run by the
// runtime on this machine's cores (cpu:devices=2 after calibration), and the runtime's own
// overhead on one device.
//
// 1. The machine is calibrated (runtime::measure_machine): the cluster is the cpu preset with the
//    measured peak, memory and copy bandwidth.
// 2. Every (model, algorithm) plan runs 2 x steps training steps (after warm-up). The odd steps
//    are the calibration: their per-piece durations become the profile's exact entries and
//    per-op-type efficiencies (what `cleave calibrate --plan` does). The even steps are the
//    measurement: their median step time is compared with the simulator's prediction from that
//    profile. Interleaving them keeps the machine's drift in load (it is shared) out of the
//    error: a calibration run before all the measurement runs made the same plan's error swing
//    by 25 points between two runs of the benchmark. A second prediction uses the profile's
//    per-op-type calibration only (no exact entries): the roofline calibrated, for pieces never
//    measured. A third prediction times each piece alone, on demand, with the runtime's kernels
//    (runtime::PieceTimer, FlexFlow's measure-once, `--measure`): no piece's time comes from a
//    run of the plan it prices (issue 15 item 3).
// 3. Ranking: per model, whether the plans' order by predicted time is their order by measured
//    time (pairs in the same order, of all pairs).
// 4. Overhead: on cpu:devices=1, the single plan's measured step time against the sum of its
//    tasks' measured durations (target: at most 10% more).
// 5. Swaps (issue 18): SwapAdvisor's runs-for-real model on one core capped at a third of its
//    peak, its swapadvisor plan measured and predicted as in 2 (its calibration steps join the
//    profile).
//
//   fidelity [--steps N] [--markdown]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fmt/format.h>
#include <map>
#include <string>

#include "autodiff/training_graph.h"
#include "bench_util.h"
#include "cluster/presets.h"
#include "models/model_zoo.h"
#include "runtime/calibrate.h"
#include "runtime/piece_timer.h"
#include "search/search.h"
#include "sim/predict.h"

namespace {

using namespace cleave;
using namespace cleave::bench;

std::vector<std::string> const workload = {
    "mlp:layers=4,hidden=1024,input=1024,classes=64,batch=64",
    "gpt:layers=2,hidden=256,heads=4,seq=64,batch=8,vocab=512",
    "resnet:depth=18,image=32,batch=8,classes=10",
};
std::vector<std::string> const algos = {"data-parallel", "expert", "tofu", "optcnn"};
std::string const swap_model = "mlp:layers=24,hidden=64,input=64,classes=10,batch=4096";
std::string const swap_memory = "9MiB";

struct Pair {
  std::string model, algo;
  ir::Graph graph;
  std::int64_t batch = 0;
  std::unique_ptr<runtime::Executor> executor;
  runtime::MeasuredSteps calibration, measurement;
  double measured = 0, predicted = 0, predicted_roofline = 0, predicted_on_demand = 0;
};

ir::Graph training(std::string const& model, ops::OpRegistry const& registry) {
  auto zoo = models::ModelZoo::with_builtins();
  return must(autodiff::build_training_graph(must(zoo.build(model, registry)), registry));
}

std::int64_t batch_of(std::string const& model) {
  auto at = model.find("batch=");
  return std::stoll(model.substr(at + 6));
}

double relative(double predicted, double measured) {
  return (predicted - measured) / measured;
}

// Plans the pair on the cluster, then runs the plan 2 x steps times: the odd steps are its
// calibration, the even ones its measurement.
void run_pair(Pair& p, cluster::Cluster const& cluster, std::string const& spec,
              ops::OpRegistry const& registry, runtime::KernelRegistry const& kernels, int steps) {
  cost::CostModel cost(cluster);
  search::SearchContext ctx{p.graph, registry, cost, spec, p.model, p.batch, 0};
  auto plan = must(search::make_plan(p.algo, ctx));
  auto program = must(lower::lower(p.graph, plan, registry));
  std::vector<runtime::DeviceInfo> devices;
  for (std::size_t d = 0; d < cluster.devices().size(); ++d)
    devices.push_back({cluster.devices()[d].name, cluster.devices()[d].memory,
                       plan.pools.empty() ? memory::Pool{} : plan.pools[d]});
  p.executor = std::make_unique<runtime::Executor>(
      must(runtime::Executor::create(p.graph, std::move(program), registry, devices)));
  runtime::InProcessBackend backend;
  auto run = must(runtime::measure_steps(*p.executor, kernels, backend, 2 * steps));
  p.calibration = p.measurement = {run.graph, run.program, {}, {}};
  for (std::size_t s = 0; s < run.step_seconds.size(); ++s) {
    auto& half = s % 2 ? p.calibration : p.measurement;
    half.spans.push_back(std::move(run.spans[s]));
    half.step_seconds.push_back(run.step_seconds[s]);
  }
  p.measured = median(p.measurement.step_seconds);
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 5;
  bool markdown = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--steps") && i + 1 < argc) {
      steps = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--markdown")) {
      markdown = true;
    } else {
      std::fprintf(stderr, "usage: fidelity [--steps N] [--markdown]\n");
      return 2;
    }
  }
  auto registry = ops::OpRegistry::with_builtins();
  auto kernels = runtime::KernelRegistry::with_builtins();
  runtime::CalibrateOptions options;
  options.devices = 2;
  auto rates = must(runtime::measure_machine(*kernels, *registry, options));
  std::string spec = runtime::calibrated_cluster_spec(rates, 2);
  auto cluster = must(cluster::load_cluster(spec));

  std::vector<Pair> pairs;
  pairs.reserve(workload.size() * algos.size());  // executors refer to their pair's graph
  for (auto const& model : workload) {
    for (auto const& algo : algos) {
      pairs.push_back({model, algo, training(model, *registry), batch_of(model), {}, {}, {}});
      run_pair(pairs.back(), cluster, spec, *registry, *kernels, steps);
    }
  }
  std::string capped_spec = runtime::calibrated_cluster_spec(rates, 1) + ",memory=" + swap_memory;
  Pair swapped{
      swap_model, "swapadvisor", training(swap_model, *registry), batch_of(swap_model), {}, {}, {}};
  run_pair(swapped, must(cluster::load_cluster(capped_spec)), capped_spec, *registry, *kernels,
           steps);
  cost::ProfileTable profile;
  std::vector<runtime::MeasuredSteps> all;
  for (auto const& p : pairs)
    all.push_back(p.calibration);
  all.push_back(swapped.calibration);
  // The copies as the runtime does them, from the calibration runs' transfers.
  runtime::fit_transfers(rates, all);
  std::string refined_spec = runtime::calibrated_cluster_spec(rates, 2);
  auto refined = must(cluster::load_cluster(refined_spec));
  if (auto st = runtime::add_measurements(profile, all, rates, "cpu-core"); !st) die(st.error());
  cost::ProfileTable roofline;
  if (auto st = roofline.add_calibration("cpu-core", *profile.calibration("cpu-core")); !st)
    die(st.error());
  cost::CostModel exact(refined, {}, profile), calibrated(refined, {}, roofline);
  auto capped = must(
      cluster::load_cluster(runtime::calibrated_cluster_spec(rates, 1) + ",memory=" + swap_memory));
  cost::CostModel capped_exact(capped, {}, profile), capped_calibrated(capped, {}, roofline);
  auto const& swap_program = swapped.executor->program();
  swapped.predicted =
      sim::predict(swapped.graph, swap_program, capped_exact, swapped.batch).step_time_s;
  swapped.predicted_roofline =
      sim::predict(swapped.graph, swap_program, capped_calibrated, swapped.batch).step_time_s;
  // Pieces timed alone as the search would time them; copies by the links fitted above, reduce
  // tasks by the machine's measured roofline (no calibration from the plans' runs).
  cost::CostModel on_demand(refined);
  on_demand.set_measurer(std::make_shared<runtime::PieceTimer>(
      *registry, *kernels, runtime::PieceTimerOptions{"cpu-core", rates.threads_per_device}));
  std::vector<double> errors, roofline_errors, on_demand_errors;
  for (auto& p : pairs) {
    auto const& program = p.executor->program();
    p.predicted = sim::predict(p.graph, program, exact, p.batch).step_time_s;
    p.predicted_roofline = sim::predict(p.graph, program, calibrated, p.batch).step_time_s;
    p.predicted_on_demand = sim::predict(p.graph, program, on_demand, p.batch).step_time_s;
    errors.push_back(std::abs(relative(p.predicted, p.measured)));
    roofline_errors.push_back(std::abs(relative(p.predicted_roofline, p.measured)));
    on_demand_errors.push_back(std::abs(relative(p.predicted_on_demand, p.measured)));
  }
  // Ranking: pairs of plans of one model in the same order by prediction and by measurement.
  int concordant = 0, compared = 0;
  std::map<std::string, std::pair<int, int>> per_model;
  for (std::size_t a = 0; a < pairs.size(); ++a)
    for (std::size_t b = a + 1; b < pairs.size(); ++b) {
      if (pairs[a].model != pairs[b].model) continue;
      bool same =
          (pairs[a].predicted < pairs[b].predicted) == (pairs[a].measured < pairs[b].measured);
      concordant += same;
      ++compared;
      per_model[pairs[a].model].first += same;
      ++per_model[pairs[a].model].second;
    }

  // Overhead on one device: step time against the sum of the tasks' durations.
  auto one = must(cluster::load_cluster(runtime::calibrated_cluster_spec(rates, 1)));
  std::vector<std::string> overhead_rows;
  for (auto const& model : workload) {
    ir::Graph g = training(model, *registry);
    cost::CostModel cost(one);
    search::SearchContext ctx{g, *registry, cost, "cpu:devices=1", model, batch_of(model), 0};
    auto plan = must(search::make_plan("single", ctx));
    auto executor = must(runtime::Executor::create(g, must(lower::lower(g, plan, *registry)),
                                                   *registry, {{"cpu0", Bytes(64LL << 30)}}));
    runtime::InProcessBackend backend;
    auto m = must(runtime::measure_steps(executor, *kernels, backend, steps));
    std::vector<double> ratios, step_times, sums;
    for (std::size_t s = 0; s < m.step_seconds.size(); ++s) {
      double sum = 0;
      for (auto const& span : m.spans[s])
        sum += span.end - span.start;
      ratios.push_back(m.step_seconds[s] / sum);
      step_times.push_back(m.step_seconds[s]);
      sums.push_back(sum);
    }
    overhead_rows.push_back(fmt::format("| `{}` | {} | {:.4f} | {:.4f} | {:+.1f}% |", model,
                                        executor.program().tasks.size(), median(step_times),
                                        median(sums), 100 * (median(ratios) - 1)));
  }

  std::printf("calibrated cluster: %s (%d thread(s) per device); plans made on %s\n",
              refined_spec.c_str(), rates.threads_per_device, spec.c_str());
  if (markdown) {
    std::printf(
        "\n| model | algorithm | tasks | measured step (s) | predicted, profile (s) | error "
        "| predicted, calibrated roofline only (s) | error | predicted, pieces measured on demand "
        "(s) | error |\n|---|---|---|---|---|---|---|---|---|---|\n");
  }
  for (auto const& p : pairs) {
    std::printf(markdown ? "| `%s` | %s | %zu | %.4f | %.4f | %+.1f%% | %.4f | %+.1f%% | %.4f | "
                           "%+.1f%% |\n"
                         : "%s %s tasks %zu measured %.4f s predicted %.4f s (%+.1f%%) roofline "
                           "%.4f s (%+.1f%%) on demand %.4f s (%+.1f%%)\n",
                p.model.c_str(), p.algo.c_str(), p.executor->program().tasks.size(), p.measured,
                p.predicted, 100 * relative(p.predicted, p.measured), p.predicted_roofline,
                100 * relative(p.predicted_roofline, p.measured), p.predicted_on_demand,
                100 * relative(p.predicted_on_demand, p.measured));
  }
  auto max_of = [](std::vector<double> const& v) { return *std::max_element(v.begin(), v.end()); };
  std::printf("%s|error| with the profile: median %.1f%%, max %.1f%%; calibrated roofline only: "
              "median %.1f%%, max %.1f%%; pieces measured on demand: median %.1f%%, max %.1f%% "
              "(%zu pairs)\n",
              markdown ? "\n" : "", 100 * median(errors), 100 * max_of(errors),
              100 * median(roofline_errors), 100 * max_of(roofline_errors),
              100 * median(on_demand_errors), 100 * max_of(on_demand_errors), pairs.size());
  std::printf("%sranking: %d of %d pairs of plans of the same model in the same order",
              markdown ? "\n" : "", concordant, compared);
  for (auto const& [model, c] : per_model)
    std::printf("; %s %d/%d", model.substr(0, model.find(':')).c_str(), c.first, c.second);
  std::printf("\n");
  if (markdown)
    std::printf("\n| model, one device (`single`) | tasks | step (s, median) | sum of task "
                "durations (s) | overhead |\n|---|---|---|---|---|\n");
  for (auto const& row : overhead_rows)
    std::printf("%s\n", row.c_str());
  std::size_t swaps =
      std::count_if(swap_program.tasks.begin(), swap_program.tasks.end(),
                    [](lower::Task const& t) { return t.kind == lower::TaskKind::swap_out; });
  if (markdown)
    std::printf(
        "\n| model, one device capped at %s (`swapadvisor`) | tasks | swaps | measured step "
        "(s) | predicted, profile (s) | error | predicted, calibrated roofline only (s) "
        "| error |\n|---|---|---|---|---|---|---|---|\n",
        swap_memory.c_str());
  std::printf(markdown ? "| `%s` | %zu | %zu | %.4f | %.4f | %+.1f%% | %.4f | %+.1f%% |\n"
                       : "%s swapadvisor: tasks %zu swaps %zu measured %.4f s predicted "
                         "%.4f s (%+.1f%%) roofline %.4f s (%+.1f%%)\n",
              swap_model.c_str(), swap_program.tasks.size(), swaps, swapped.measured,
              swapped.predicted, 100 * relative(swapped.predicted, swapped.measured),
              swapped.predicted_roofline,
              100 * relative(swapped.predicted_roofline, swapped.measured));
  return 0;
}
