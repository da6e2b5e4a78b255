#include "report/memory_fixes.h"

#include <fmt/format.h>
#include <optional>
#include <set>

#include "sim/predict.h"
#include "support/assert.h"
#include "support/format_bytes.h"

namespace cleave::report {

namespace {

// A changed plan's evaluation; none when the change does not make a valid plan.
std::optional<sim::Evaluation> try_evaluate(FixContext const& ctx, plan::Plan const& changed) {
  auto e = sim::evaluate({ctx.graph, ctx.registry, changed, ctx.cost, ctx.samples_per_step});
  if (!e) return std::nullopt;
  return std::move(*e);
}

MemoryFix evaluated_fix(std::string name, std::string change, sim::Evaluation const& before,
                        sim::Evaluation const& after, int device) {
  auto const& old_mem = before.devices[static_cast<std::size_t>(device)].memory;
  auto const& new_mem = after.devices[static_cast<std::size_t>(device)].memory;
  return {std::move(name),
          std::move(change),
          /*computed=*/true,
          old_mem.peak_bytes - new_mem.peak_bytes,
          new_mem.peak_bytes,
          new_mem.peak_bytes <= new_mem.capacity_bytes,
          after.prediction.step_time_s};
}

bool fetches_per_pass(plan::Plan const& p) {
  if (p.fetch != plan::FetchPolicy::per_pass) return false;
  for (auto const& t : p.tensor_fetch)
    if (t.policy != plan::FetchPolicy::per_pass) return false;
  return true;
}

// The op whose output is the largest block live at the device's peak; for a block nothing in the
// step writes (a weight, optimizer state), the first op that reads it.
std::optional<ir::OpId> largest_op(ir::Graph const& graph, sim::Violation const& v) {
  if (v.largest.empty()) return std::nullopt;
  auto t = graph.find_tensor(v.largest.front().tensor);
  if (!t) return std::nullopt;
  auto producer = graph.producer(*t);
  if (producer.valid()) return producer;
  auto readers = graph.consumers(*t);
  if (readers.empty()) return std::nullopt;
  return readers.front();
}

// The op's other splits into as many pieces: a factor 2 moved from one dimension to another, the
// pieces kept on the devices they had (row-major order). "n=4,co=2".
struct Split {
  plan::OpConfig config;
  std::string text;
};
std::vector<Split> other_splits(tdl::BoundOp const& bound, plan::OpConfig const& config) {
  auto const& dims = bound.dims();
  std::vector<Split> out;
  for (std::size_t from = 0; from < dims.size(); ++from) {
    if (config.degrees[from] % 2 != 0) continue;
    for (std::size_t to = 0; to < dims.size(); ++to) {
      if (to == from || !dims[to].splittable || config.degrees[to] * 2 > dims[to].extent) continue;
      Split s{config, ""};
      s.config.degrees[from] /= 2;
      s.config.degrees[to] *= 2;
      for (std::size_t d = 0; d < dims.size(); ++d)
        if (s.config.degrees[d] > 1)
          s.text += (s.text.empty() ? "" : ",") + dims[d].name + "=" +
                    std::to_string(s.config.degrees[d]);
      out.push_back(std::move(s));
    }
  }
  return out;
}

// Evaluations of the plan with one op split otherwise, cached per op (devices often share theirs).
using SplitTrials = std::vector<std::pair<std::string, sim::Evaluation>>;

SplitTrials split_trials(FixContext const& ctx, ir::OpId op) {
  SplitTrials out;
  auto bound = ctx.registry.bind(ctx.graph, op);
  if (!bound) return out;
  auto const& config = ctx.plan.ops[op.value()];
  for (auto& s : other_splits(**bound, config)) {
    plan::Plan changed = ctx.plan;
    changed.ops[op.value()] = std::move(s.config);
    if (auto e = try_evaluate(ctx, changed)) out.emplace_back(std::move(s.text), std::move(*e));
  }
  return out;
}

MemoryFix split_fix(FixContext const& ctx, SplitTrials const& trials, ir::OpId op, int device) {
  std::string name = "another split of " + ctx.graph.op(op).name;
  if (!ctx.plan.order.empty())
    return {name, "not computed: the plan fixes each device's order, which lists the op's pieces"};
  if (trials.empty()) return {name, "not computed: the op has no other split into as many pieces"};
  std::size_t best = 0;
  auto peak = [&](std::size_t i) {
    return trials[i].second.devices[static_cast<std::size_t>(device)].memory.peak_bytes;
  };
  for (std::size_t i = 1; i < trials.size(); ++i)
    if (peak(i) < peak(best)) best = i;
  return evaluated_fix(name,
                       "split " + trials[best].first + " (best of " +
                           std::to_string(trials.size()) + " splits tried)",
                       ctx.evaluation, trials[best].second, device);
}

// The plan with every over-capacity device's swaps (ctx.swap), evaluated once: each device reads
// its own figures there.
struct SwapTrial {
  std::optional<PlanChange> change;
  std::optional<sim::Evaluation> evaluation;
  std::string why_not;  // without an evaluation
};

SwapTrial swap_trial(FixContext const& ctx, sim::MemoryUse const& use) {
  auto change = ctx.swap(use);
  if (!change) return {std::nullopt, std::nullopt, change.error().message()};
  auto e = sim::evaluate({ctx.graph, ctx.registry, change->plan, ctx.cost, ctx.samples_per_step});
  if (!e)
    return {std::nullopt, std::nullopt, "the plan with swaps is invalid: " + e.error().message()};
  return {std::move(*change), std::move(*e), ""};
}

MemoryFix swap_fix(FixContext const& ctx, SwapTrial const& trial, int device) {
  if (!trial.evaluation) return {"swap", "not computed: " + trial.why_not};
  auto const& change = *trial.change;
  if (auto why = change.unchanged.find(device); why != change.unchanged.end())
    return {"swap", "not computed: " + why->second};
  auto what = change.changed.find(device);
  CLEAVE_ASSERT(what != change.changed.end(), "a swap change that says nothing of a device");
  return evaluated_fix("swap", what->second, ctx.evaluation, *trial.evaluation, device);
}

// Recomputation, estimated: the saved activations live at the device's peak dropped after the
// forward pass and their forward pieces run again before the backward pass reads them. Plans
// cannot say that yet, so nothing is evaluated: the saving is an upper bound (a checkpoint to
// recompute from, and the recomputed blocks while the backward pass reads them, take some back)
// and the cost is the pieces' time from the cost model, added to the step as if nothing hid it.
MemoryFix recompute_estimate(FixContext const& ctx, sim::MemoryUse const& use, int device) {
  auto const& program = ctx.evaluation.program;
  std::int64_t saved = 0;
  std::set<lower::TaskId> writers;
  for (auto b : live_at_peak(use, device)) {
    auto const& block = use.blocks[b];
    if (block.role != sim::MemoryRole::saved_activations || block.task == sim::held_before_step ||
        program.tasks[block.task].kind != lower::TaskKind::compute)
      continue;
    saved += block.bytes;
    writers.insert(block.task);
  }
  std::string name = "recomputation";
  if (writers.empty()) return {name, "not computed: no saved activations are live at the peak"};
  double rerun_s = 0;
  for (auto t : writers)
    rerun_s += sim::timing_of(program.tasks[t], ctx.graph, ctx.cost).seconds;
  auto const& memory = ctx.evaluation.devices[static_cast<std::size_t>(device)].memory;
  std::int64_t peak = memory.peak_bytes - saved;
  std::string change = fmt::format(
      "estimate (a plan cannot express recomputation, so this is not evaluated): drop the {} "
      "saved activations live at the peak ({}) after the forward pass and run their {} forward "
      "pieces again ({:.6f} s from the cost model) before the backward pass; an upper bound on "
      "the saving (checkpoints to recompute from take some back) and a step time that hides none "
      "of the re-run",
      writers.size(), format_bytes(Bytes(saved)), writers.size(), rerun_s);
  MemoryFix fix{name,
                std::move(change),
                /*computed=*/true,
                saved,
                peak,
                peak <= memory.capacity_bytes,
                ctx.evaluation.prediction.step_time_s + rerun_s};
  fix.estimate = true;
  return fix;
}

}  // namespace

std::vector<std::uint32_t> live_at_peak(sim::MemoryUse const& use, int device) {
  auto const& events = use.events[static_cast<std::size_t>(device)];
  std::int64_t now = 0, peak = 0;
  std::size_t peak_event = events.size();
  for (std::size_t e = 0; e < events.size(); ++e) {
    now += events[e].bytes;
    if (now > peak) {
      peak = now;
      peak_event = e;
    }
  }
  std::vector<std::int64_t> live(use.blocks.size(), 0);
  for (std::size_t e = 0; e < events.size() && e <= peak_event; ++e)
    live[events[e].block] += events[e].bytes;
  std::vector<std::uint32_t> out;
  for (std::uint32_t b = 0; b < live.size(); ++b)
    if (live[b] > 0) out.push_back(b);
  return out;
}

std::vector<DeviceFixes> memory_fixes(FixContext const& ctx) {
  CLEAVE_ASSERT(ctx.swap, "memory fixes without a swap planner");
  std::vector<DeviceFixes> out;
  if (ctx.evaluation.violations.empty()) return out;
  std::optional<sim::Evaluation> per_pass;
  if (!fetches_per_pass(ctx.plan)) {
    plan::Plan changed = ctx.plan;
    changed.fetch = plan::FetchPolicy::per_pass;
    changed.tensor_fetch.clear();
    per_pass = try_evaluate(ctx, changed);
  }
  auto use =
      sim::memory_use(ctx.graph, ctx.evaluation.program, ctx.evaluation.prediction.sim.spans);
  auto swap = swap_trial(ctx, use);
  std::map<ir::OpId, SplitTrials> trials;
  for (auto const& v : ctx.evaluation.violations) {
    DeviceFixes fixes{v.device, {}};
    if (per_pass)
      fixes.fixes.push_back(evaluated_fix("per-pass fetch", "every tensor fetched per pass",
                                          ctx.evaluation, *per_pass, v.device));
    else
      fixes.fixes.push_back({"per-pass fetch", "not computed: the plan already fetches per pass"});
    if (auto op = largest_op(ctx.graph, v)) {
      if (!trials.contains(*op) && ctx.plan.order.empty()) trials[*op] = split_trials(ctx, *op);
      fixes.fixes.push_back(split_fix(ctx, trials[*op], *op, v.device));
    }
    fixes.fixes.push_back(swap_fix(ctx, swap, v.device));
    fixes.fixes.push_back(recompute_estimate(ctx, use, v.device));
    out.push_back(std::move(fixes));
  }
  return out;
}

}  // namespace cleave::report
