#include "report/memory_fixes.h"

#include <map>
#include <optional>

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

}  // namespace

std::vector<DeviceFixes> memory_fixes(FixContext const& ctx) {
  std::vector<DeviceFixes> out;
  if (ctx.evaluation.violations.empty()) return out;
  std::optional<sim::Evaluation> per_pass;
  if (!fetches_per_pass(ctx.plan)) {
    plan::Plan changed = ctx.plan;
    changed.fetch = plan::FetchPolicy::per_pass;
    changed.tensor_fetch.clear();
    per_pass = try_evaluate(ctx, changed);
  }
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
    fixes.fixes.push_back({"swap", "not computed: choosing what to swap and when is a schedule "
                                   "search of its own (plan::Swap); this report does not run one"});
    fixes.fixes.push_back({"recomputation",
                           "not computed: a plan cannot recompute activations yet (DESIGN.md, "
                           "strategy space: later)"});
    out.push_back(std::move(fixes));
  }
  return out;
}

}  // namespace cleave::report
