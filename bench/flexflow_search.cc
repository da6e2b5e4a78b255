// FlexFlow's search speed (issue 15): the same MCMC (same seed, same proposals, the same plan)
// priced by the delta simulator and by full simulation (lower + predict, as FlexFlow's public
// code does), proposals per second over the chains and time to the final plan (when the best plan
// was found, counted from the search's start), beside the paper's delta search; and when the first
// start was priced (every start's plan built, Tofu's search included). A second row per case runs
// the paper's starts (data-parallel, expert and random: `tofu_start=off`), delta only. Then what a
// rejected proposal costs: DeltaSimulator::undo against a second apply of the old configuration,
// on random proposals from the data-parallel plan (--samples of them, 40 by default), and what
// MCMC's pricing of one costs (stopped once it is sure to be rejected).
//
//   flexflow_search [--proposals N] [--full-proposals N] [--samples N] [--case NAME] [--markdown]
//                   [--course]
//     NAME: inception4, nmt4, inception64, nmt64 (default: the 4-device cases)
//     --course: each search's best step over time, on stderr
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "autodiff/training_graph.h"
#include "bench_util.h"
#include "cluster/presets.h"
#include "models/model_zoo.h"
#include "search/baselines/baselines.h"
#include "search/flexflow/config_space.h"
#include "search/search.h"
#include "sim/delta.h"

namespace {

using namespace cleave;
using namespace cleave::bench;

struct Case {
  std::string name, model, cluster, paper;
  std::int64_t batch;
  bool by_default;  // run without --case (the 64-device cases take minutes)
};

struct Run {
  double proposals_per_s = 0, to_final_s = 0, step_s = 0, first_start_s = 0;
  std::int64_t proposals = 0;
};

// Proposals per second over the chains: from the first proposal's end to the last's (the
// progress callback's ticks), the chains' switches (each prices its start again) included.
Run run_search(search::SearchContext ctx, std::int64_t proposals, std::string const& simulator,
               std::string const& tofu_start, bool print_course) {
  ctx.budget.iterations = proposals;
  ctx.options = {{"simulator", simulator}, {"tofu_start", tofu_start}};
  std::vector<double> ticks;  // s into the search, per proposal
  ctx.progress = [&ticks](search::Progress const& p) {
    // Tofu's search (a start) ticks its own clock first: its ticks are dropped when MCMC's begin.
    if (p.iterations == 1) ticks.clear();
    if (!p.done && p.iterations == static_cast<std::int64_t>(ticks.size()) + 1)
      ticks.push_back(p.elapsed.value());
  };
  auto p = must(search::make_plan("flexflow", ctx));
  auto const& course = *p.provenance.course;
  if (print_course) {
    std::fprintf(stderr, "%s %s\n", ctx.model.c_str(), p.provenance.config.c_str());
    for (auto [t, step] : course.best)
      std::fprintf(stderr, "  %.3f s: %.6f s\n", t, step);
  }
  double rate =
      ticks.size() > 1 ? static_cast<double>(ticks.size() - 1) / (ticks.back() - ticks.front()) : 0;
  return {rate, course.best.back().first, course.best.back().second, course.best.front().first,
          course.iterations};
}

// Mean seconds of an apply, of undoing it, and of applying the old configuration again instead;
// and of pricing a proposal as MCMC does (DeltaSimulator::apply_unless_above at the acceptance
// test's median threshold, beta = 10 x ops, undone unless it is under it) and how many of those
// gave up before their run ended.
struct UndoCost {
  double apply_s = 0, undo_s = 0, reapply_s = 0, capped_s = 0;
  int gave_up = 0;
};

UndoCost undo_cost(search::SearchContext const& ctx, int n) {
  plan::Plan start = must(search::data_parallel(ctx));
  start.num_devices = static_cast<int>(ctx.cluster().num_devices());
  auto space = must(search::flexflow::ConfigSpace::create(ctx, false));
  auto sim = must(sim::DeltaSimulator::create(ctx.graph, start, ctx.registry, ctx.cost, ctx.batch));
  search::Rng rng(1);
  UndoCost c;
  for (int i = 0; i < n; ++i) {
    ir::OpId op(static_cast<std::uint32_t>(rng() % ctx.graph.num_ops()));
    auto old = sim.plan().ops[op.value()];
    auto config = space.random(op, rng);
    auto t0 = Clock::now();
    must(sim.apply(op, config));
    c.apply_s += seconds_since(t0);
    if (i % 2 == 0) {
      t0 = Clock::now();
      sim.undo();
      c.undo_s += seconds_since(t0);
    } else {
      t0 = Clock::now();
      must(sim.apply(op, old));
      c.reapply_s += seconds_since(t0);
    }
  }
  double beta = 10.0 * static_cast<double>(ctx.graph.num_ops());
  for (int i = 0; i < n; ++i) {
    ir::OpId op(static_cast<std::uint32_t>(rng() % ctx.graph.num_ops()));
    double limit = sim.prediction().step_time_s * (1 + std::log(2.0) / beta);
    auto t0 = Clock::now();
    auto priced = must(sim.apply_unless_above(op, space.random(op, rng), limit));
    if (!priced || priced->step_time_s > limit) sim.undo();
    c.capped_s += seconds_since(t0);
    c.gave_up += priced ? 0 : 1;
  }
  return {c.apply_s / n, c.undo_s / ((n + 1) / 2), c.reapply_s / (n / 2), c.capped_s / n,
          c.gave_up};
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t proposals = 2000, full_proposals = 200;
  int samples = 40;
  std::string only;
  bool markdown = false, print_course = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--markdown") markdown = true;
    if (a == "--course") print_course = true;
    if (i + 1 >= argc) continue;
    if (a == "--proposals") proposals = std::atoll(argv[i + 1]);
    if (a == "--full-proposals") full_proposals = std::atoll(argv[i + 1]);
    if (a == "--case") only = argv[i + 1];
    if (a == "--samples") samples = std::atoi(argv[i + 1]);
  }
  std::vector<Case> cases = {
      {"inception4", "inception:batch=256", "p100-4x4:nodes=1", "14 s -> 4.1 s", 256, true},
      {"nmt4", "nmt:batch=256", "p100-4x4:nodes=1", "40 s -> 16 s", 256, true},
      {"inception64", "inception:batch=4096", "k80-16x4", "8817 s -> 1278 s", 4096, false},
      {"nmt64", "nmt:batch=4096", "k80-16x4", "8982 s -> 2190 s", 4096, false},
  };
  char const* sep = markdown ? " | " : "  ";
  std::printf(markdown
                  ? "| case | starts | ops | delta proposals/s | full proposals/s | speedup | "
                    "first start priced (s) | delta: time to final plan (s) | step (s) | paper "
                    "(full -> delta, to final) | apply (ms) | undo (ms) | second apply (ms) | "
                    "MCMC pricing (ms) | gave up |\n"
                    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
                  : "case  starts  ops  delta/s  full/s  speedup  first-start(s)  to-final(s)  "
                    "step(s)  paper  apply  undo  reapply  mcmc (ms)  gave-up\n");
  for (auto const& c : cases) {
    if (only.empty() ? !c.by_default : c.name != only) continue;
    auto registry = ops::OpRegistry::with_builtins();
    auto forward = must(models::ModelZoo::with_builtins().build(c.model, *registry));
    ir::Graph g = must(autodiff::build_training_graph(forward, *registry));
    auto cluster = must(cluster::load_cluster(c.cluster));
    cost::CostModel cost(cluster);
    search::SearchContext ctx{g, *registry, cost, c.cluster, c.model, c.batch, 1};
    Run delta = run_search(ctx, proposals, "delta", "on", print_course);
    Run full = run_search(ctx, full_proposals, "full", "on", false);
    UndoCost u = undo_cost(ctx, samples);
    std::printf("%s%s%swith tofu%s%zu%s%.3g%s%.3g%s%.1fx%s%.2f%s%.2f%s%.5f%s%s%s%.2f%s%.2f%s%.2f%s"
                "%.2f%s%d/%d%s\n",
                markdown ? "| " : "", c.name.c_str(), sep, sep, g.num_ops(), sep,
                delta.proposals_per_s, sep, full.proposals_per_s, sep,
                delta.proposals_per_s / full.proposals_per_s, sep, delta.first_start_s, sep,
                delta.to_final_s, sep, delta.step_s, sep, c.paper.c_str(), sep, u.apply_s * 1e3,
                sep, u.undo_s * 1e3, sep, u.reapply_s * 1e3, sep, u.capped_s * 1e3, sep, u.gave_up,
                samples, markdown ? " |" : "");
    std::fflush(stdout);
    // The paper's starts: the same walk but for the chains from Tofu's plan, delta only.
    Run paper = run_search(ctx, proposals, "delta", "off", print_course);
    std::printf("%s%s%spaper's%s%zu%s%.3g%s-%s-%s%.2f%s%.2f%s%.5f%s%s%s-%s-%s-%s-%s-%s\n",
                markdown ? "| " : "", c.name.c_str(), sep, sep, g.num_ops(), sep,
                paper.proposals_per_s, sep, sep, sep, paper.first_start_s, sep, paper.to_final_s,
                sep, paper.step_s, sep, c.paper.c_str(), sep, sep, sep, sep, sep,
                markdown ? " |" : "");
    std::fflush(stdout);
  }
}
