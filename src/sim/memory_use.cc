#include "sim/memory_use.h"

#include <algorithm>
#include <array>

#include "lower/lifetime.h"  // output_bytes

namespace cleave::sim {

std::string_view memory_role_name(MemoryRole role) {
  static constexpr std::array<std::string_view, memory_role_count> names = {
      "weights",        "optimizer state", "gradients",       "saved activations",
      "fetched copies", "swapped-in data", "partial results", "other"};
  return names[static_cast<std::size_t>(role)];
}

namespace {

// By ir::TensorRole: input, activation, weight, gradient, optimizer_state.
MemoryRole role_of(ir::TensorRole role) {
  static constexpr std::array<MemoryRole, 5> roles = {
      MemoryRole::other, MemoryRole::saved_activations, MemoryRole::weights, MemoryRole::gradients,
      MemoryRole::optimizer_state};
  return roles[static_cast<std::size_t>(role)];
}

// What a task's output is: a copy (fetched, swapped in), a partial result, or the tensor's role.
MemoryRole role_of(lower::Task const& t, ir::Graph const& graph) {
  if (t.partial) return MemoryRole::partial;
  if (t.kind == lower::TaskKind::transfer) return MemoryRole::fetched;
  if (t.kind == lower::TaskKind::swap_in) return MemoryRole::swapped_in;
  return role_of(graph.tensor(t.tensor).role);
}

// The block a swap-out frees: the output of the task it copies (same tensor, same device), else
// the block of that tensor held there before the step; none (-1) if neither exists.
std::int64_t freed_by_swap_out(lower::Program const& program, lower::TaskId i,
                               std::vector<std::uint32_t> const& block_of_task) {
  auto const& t = program.tasks[i];
  for (auto dep : t.deps)
    if (program.tasks[dep].device == t.device && program.tasks[dep].tensor == t.tensor)
      return block_of_task[dep];
  for (std::size_t b = 0; b < program.initial.size(); ++b) {
    auto const& held = program.initial[b];
    if (held.device == t.device && held.tensor == t.tensor &&
        tdl::box_volume(tdl::intersect(held.region, t.region)) > 0)
      return static_cast<std::int64_t>(b);
  }
  return -1;
}

}  // namespace

MemoryUse memory_use(ir::Graph const& graph, lower::Program const& program,
                     std::vector<TaskSpan> const& spans) {
  auto bytes_of = [&](ir::TensorId t, tdl::Box const& region) {
    return tdl::box_volume(region) * ir::dtype_bytes(graph.tensor(t).type.dtype);
  };
  MemoryUse use;
  use.events.resize(static_cast<std::size_t>(program.num_devices));
  auto add_block = [&](MemoryBlock block) {
    use.blocks.push_back(std::move(block));
    return static_cast<std::uint32_t>(use.blocks.size() - 1);
  };
  // lower::output_lifetimes' rule, from what it needs of each output (when its last reader ends,
  // whether a swap-out copies it) rather than its reader lists: those were a third of the
  // explanation's memory (issue 21).
  auto const& tasks = program.tasks;
  std::vector<double> last_read(tasks.size(), -1);  // -1: no reader
  std::vector<bool> swapped(tasks.size(), false);
  for (lower::TaskId i = 0; i < tasks.size(); ++i)
    for (auto dep : tasks[i].deps) {
      last_read[dep] = std::max(last_read[dep], spans[i].end);
      if (tasks[i].kind == lower::TaskKind::swap_out && tasks[dep].device == tasks[i].device &&
          tasks[dep].tensor == tasks[i].tensor)
        swapped[dep] = true;
    }
  auto frees = [&](lower::TaskId i) {
    return tasks[i].kind == lower::TaskKind::swap_out || (last_read[i] >= 0 && !swapped[i]);
  };
  {  // each device's events in one block of their number
    std::vector<std::size_t> count(use.events.size(), 0);
    for (auto const& b : program.initial)
      count[static_cast<std::size_t>(b.device)] += b.on_host ? 0 : 1;
    for (lower::TaskId i = 0; i < tasks.size(); ++i)
      count[static_cast<std::size_t>(tasks[i].device)] += tasks[i].kind == lower::TaskKind::swap_out
                                                              ? 1
                                                          : frees(i) ? 2
                                                                     : 1;
    for (std::size_t d = 0; d < count.size(); ++d)
      use.events[d].reserve(count[d]);
  }
  use.blocks.reserve(program.initial.size() + tasks.size());
  for (auto const& b : program.initial) {
    auto id = add_block({&b.region, bytes_of(b.tensor, b.region), b.tensor, b.device,
                         held_before_step, role_of(graph.tensor(b.tensor).role)});
    // One that starts on the host takes no device memory: its swap-ins are the step's blocks.
    if (!b.on_host)
      use.events[static_cast<std::size_t>(b.device)].push_back({0.0, use.blocks[id].bytes, id});
  }
  // Only a swap-out reads a task's block (the one it frees): the list is kept only where there
  // are swap-outs (issue 21: 4 bytes a task under the explanation's peak otherwise).
  bool swaps = std::any_of(tasks.begin(), tasks.end(), [](lower::Task const& t) {
    return t.kind == lower::TaskKind::swap_out;
  });
  std::vector<std::uint32_t> block_of_task(swaps ? tasks.size() : 0, 0);
  for (lower::TaskId i = 0; i < tasks.size(); ++i) {
    auto const& t = tasks[i];
    auto& on = use.events[static_cast<std::size_t>(t.device)];
    std::int64_t size = lower::output_bytes(graph, t);
    if (t.kind == lower::TaskKind::swap_out) {
      std::int64_t freed = freed_by_swap_out(program, i, block_of_task);
      auto block = freed >= 0 ? static_cast<std::uint32_t>(freed)
                              : add_block({&t.region, size, t.tensor, t.device, i,
                                           role_of(graph.tensor(t.tensor).role)});
      block_of_task[i] = block;
      on.push_back({spans[i].end, -size, block});
      continue;
    }
    auto block = add_block({&t.region, size, t.tensor, t.device, i, role_of(t, graph)});
    if (swaps) block_of_task[i] = block;
    on.push_back({spans[i].start, size, block});
    if (frees(i)) on.push_back({last_read[i], -size, block});
  }
  for (auto& on : use.events)
    std::stable_sort(on.begin(), on.end(), [](BlockEvent const& a, BlockEvent const& b) {
      return a.time_s != b.time_s ? a.time_s < b.time_s : a.bytes < 0 && b.bytes > 0;
    });
  return use;
}

namespace {

// The device's timeline and peak, from its events in order.
void walk(std::vector<BlockEvent> const& events, DeviceMemory& out, std::size_t& peak_event) {
  std::int64_t now = 0;
  peak_event = 0;
  for (std::size_t e = 0; e < events.size(); ++e) {
    now += events[e].bytes;
    if (now > out.peak_bytes) {
      out.peak_bytes = now;
      out.peak_s = events[e].time_s;
      peak_event = e;
    }
    bool last_at_time = e + 1 == events.size() || events[e + 1].time_s != events[e].time_s;
    if (last_at_time) out.timeline.push_back({events[e].time_s, now});
  }
}

// What is live after the events up to `peak_event`, by role and its largest blocks: those events
// by block, summed. (A per-block array for every device was 8 bytes a task under the explanation's
// peak, issue 21; a device's own events are far fewer.)
void live_at_peak(ir::Graph const& graph, MemoryUse const& use,
                  std::vector<BlockEvent> const& events, std::size_t peak_event,
                  std::size_t largest, DeviceMemory& out) {
  std::vector<std::pair<std::uint32_t, std::int64_t>> live;  // (block, bytes)
  for (std::size_t e = 0; e <= peak_event && e < events.size(); ++e) {
    live.emplace_back(events[e].block, events[e].bytes);
    out.peak_by_role[static_cast<std::size_t>(use.blocks[events[e].block].role)] += events[e].bytes;
  }
  std::sort(live.begin(), live.end(),
            [](auto const& a, auto const& b) { return a.first < b.first; });
  std::size_t kept = 0;
  for (std::size_t i = 0; i < live.size();) {
    auto [block, bytes] = live[i];
    for (++i; i < live.size() && live[i].first == block; ++i)
      bytes += live[i].second;
    if (bytes > 0) live[kept++] = {block, bytes};
  }
  live.resize(kept);
  auto by_size = [](auto const& a, auto const& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  };
  std::size_t n = std::min(largest, live.size());
  std::partial_sort(live.begin(), live.begin() + static_cast<std::ptrdiff_t>(n), live.end(),
                    by_size);
  for (std::size_t i = 0; i < n; ++i) {
    auto const& b = use.blocks[live[i].first];
    out.largest_at_peak.push_back({graph.tensor(b.tensor).name, *b.region, live[i].second, b.role});
  }
}

}  // namespace

std::vector<DeviceMemory> device_memory(ir::Graph const& graph, MemoryUse const& use,
                                        cluster::Cluster const& cluster, std::size_t largest) {
  std::vector<DeviceMemory> out(use.events.size());
  for (std::size_t d = 0; d < use.events.size(); ++d) {
    out[d].capacity_bytes = cluster.devices()[d].memory.value();
    std::size_t peak_event = 0;
    walk(use.events[d], out[d], peak_event);
    if (out[d].peak_bytes > 0) live_at_peak(graph, use, use.events[d], peak_event, largest, out[d]);
  }
  return out;
}

}  // namespace cleave::sim
