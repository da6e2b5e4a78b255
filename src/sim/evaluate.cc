#include "sim/evaluate.h"

#include <algorithm>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "lower/lowering.h"
#include "memory/pool.h"

namespace cleave::sim {

namespace {

// Hands freed heap pages back to the system where the program is large enough for it to matter:
// glibc keeps freed small blocks resident, and at 1,024 devices the lowering's freed parts and
// the simulation's freed lists would lie under what comes next (issue 21). A search evaluating
// many small plans (swapadvisor's chromosomes) skips the heap walk.
void trim_heap([[maybe_unused]] lower::Program const& program) {
#if defined(__GLIBC__)
  constexpr std::size_t large_program_tasks = std::size_t{1} << 20;
  if (program.tasks.size() >= large_program_tasks) malloc_trim(0);
#endif
}

std::vector<Violation> violations_of(std::vector<DeviceEvaluation> const& devices) {
  std::vector<Violation> out;
  for (std::size_t d = 0; d < devices.size(); ++d) {
    auto const& m = devices[d].memory;
    if (m.peak_bytes <= m.capacity_bytes) continue;
    Violation v{static_cast<int>(d), m.peak_bytes - m.capacity_bytes, m.peak_s, m.peak_s,
                m.largest_at_peak};
    for (auto const& point : m.timeline)
      if (point.bytes > m.capacity_bytes) {
        v.first_over_s = point.time_s;
        break;
      }
    out.push_back(std::move(v));
  }
  return out;
}

// Replays each device's blocks through the plan's pool (plan.h), if it has one: its
// fragmentation, and a violation of the size of the first block that finds no free object (on
// devices not already over capacity).
void replay_pools(plan::Plan const& plan, MemoryUse const& use, Evaluation& e) {
  auto& out = e.violations;
  for (std::size_t d = 0; d < plan.pools.size(); ++d) {
    if (plan.pools[d].classes.empty()) continue;
    bool over = std::any_of(out.begin(), out.end(),
                            [&](Violation const& v) { return v.device == static_cast<int>(d); });
    memory::PoolAllocator pool(plan.pools[d]);
    std::vector<std::optional<memory::Slot>> slots(use.blocks.size());
    // Blocks freed at the time they are allocated, before it (MemoryUse's order: frees first):
    // each still takes an object when it is allocated, given back at once.
    std::vector<bool> freed_first(use.blocks.size(), false);
    for (auto const& event : use.events[d]) {
      auto& slot = slots[event.block];
      if (event.bytes < 0) {
        if (slot)
          pool.release(*slot);
        else
          freed_first[event.block] = true;
        slot.reset();
        continue;
      }
      slot = pool.allocate(event.bytes);
      if (slot && freed_first[event.block]) {
        pool.release(*slot);
        slot.reset();
        continue;
      }
      if (slot) continue;
      if (!over) out.push_back({static_cast<int>(d), event.bytes, event.time_s, event.time_s, {}});
      break;
    }
    e.devices[d].pool = pool.fragmentation();
  }
  std::sort(out.begin(), out.end(),
            [](Violation const& a, Violation const& b) { return a.device < b.device; });
}

}  // namespace

Expected<Evaluation> evaluate(EvaluationContext const& ctx) {
  auto const& cluster = ctx.cost.cluster();
  if (static_cast<std::size_t>(ctx.plan.num_devices) != cluster.num_devices())
    return Error(ErrorCode::invalid_argument,
                 "the plan uses " + std::to_string(ctx.plan.num_devices) +
                     " devices but the cluster " +
                     (ctx.plan.cluster.empty() ? "" : "'" + ctx.plan.cluster + "' ") + "has " +
                     std::to_string(cluster.num_devices()));
  Evaluation e;
  CLEAVE_TRY(e.program, lower::lower(ctx.graph, ctx.plan, ctx.registry, ctx.collectives));
  trim_heap(e.program);  // the lowering's freed parts, before the simulation's arrays
  std::vector<DeviceTime> times;
  {  // the per-task timings and index, freed before the memory explanation's per-task blocks
    auto costs = collective_costs(e.program, ctx.graph, ctx.cost);
    auto timings = timings_of(e.program, ctx.graph, ctx.cost, costs);
    // Only what summarize reads of the timings outlives the event loop's copy of them (issue 21).
    auto compute = compute_times(e.program, timings);
    auto sim = simulate(e.program, std::move(timings), resources_of(cluster));
    // Built once the event loop's arrays are freed, not beside them (issue 21).
    auto index = index_of(ctx.graph, e.program);
    e.prediction = summarize(ctx.graph, e.program, ctx.cost, costs, std::move(compute),
                             std::move(sim), ctx.samples_per_step, &index);
    times = device_times(e.program, index, e.prediction.sim);
  }
  trim_heap(e.program);  // the simulation's freed lists, before the memory explanation's
  auto use = memory_use(ctx.graph, e.program, e.prediction.sim.spans);
  auto memory = device_memory(ctx.graph, use, cluster, ctx.largest_blocks);
  for (std::size_t d = 0; d < cluster.num_devices(); ++d)
    e.devices.push_back({cluster.devices()[d].name, times[d], std::move(memory[d]), std::nullopt});
  e.violations = violations_of(e.devices);
  replay_pools(ctx.plan, use, e);
  return e;
}

}  // namespace cleave::sim
