#include "sim/predict.h"

#include <algorithm>
#include <array>
#include <bit>
#include <map>
#include <span>
#include <tuple>
#include <utility>

#include "lower/lifetime.h"

namespace cleave::sim {

std::vector<Resource> resources_of(cluster::Cluster const& c) {
  std::vector<Resource> r;
  for (std::size_t d = 0; d < c.num_devices(); ++d)
    r.push_back({"device " + c.devices()[d].name + " compute", static_cast<int>(d)});
  for (std::size_t l = 0; l < c.links().size(); ++l) {
    auto const& link = c.links()[l];
    std::string a = c.vertex_name(link.a), b = c.vertex_name(link.b);
    r.push_back({"link " + a + "->" + b, -1});
    r.push_back({"link " + b + "->" + a, -1});
  }
  return r;
}

namespace {

cluster::DeviceId device_id(int d) {
  return cluster::DeviceId(static_cast<cluster::DeviceId::value_type>(d));
}

// The link directions a task moves its bytes over: a transfer's route; a host copy's host route,
// device to host for a swap-out and back for a swap-in.
template <typename TaskLike, typename Visit>
void for_each_channel(TaskLike const& t, cluster::Cluster const& c, Visit const& visit) {
  if (t.kind == lower::TaskKind::transfer) {
    for (auto const& hop : c.route(device_id(t.source_device), device_id(t.device)).hops)
      visit(hop.channel());
  } else if (t.kind == lower::TaskKind::swap_out || t.kind == lower::TaskKind::swap_in) {
    bool in = t.kind == lower::TaskKind::swap_in;
    for (auto const& hop : c.host_route(device_id(t.device)).hops)
      visit(in ? hop.channel() ^ 1 : hop.channel());
  }
}

bool is_swap(lower::TaskKind kind) {
  return kind == lower::TaskKind::swap_out || kind == lower::TaskKind::swap_in;
}

// A compute or reduce task's time on its device's compute stream.
cost::ComputeCost price_compute(lower::Task const& t, ir::Graph const& graph,
                                cost::CostModel const& cost) {
  ir::DType dtype = graph.tensor(t.tensor).type.dtype;
  auto const& op = graph.op(t.op);
  cost::ComputeRequest request{
      op.type, &op.attrs,           dtype,  t.iteration, t.flops,
      t.bytes, device_id(t.device), &graph, t.op,        tdl::box_volume(t.region)};
  ir::Attrs reduce_attrs;  // a reduce task is keyed by its members and region in profiles
  if (t.kind == lower::TaskKind::reduce) {
    std::int64_t volume = tdl::box_volume(t.region);
    std::int64_t region = volume * ir::dtype_bytes(dtype);
    // It combines one partial result per member (its flops: one operation per element for each
    // but the first); an explicit program's reduce waits for each, a per-device one for fewer
    // (lower::CollectiveForm).
    auto members =
        volume > 0 ? t.flops.value() / volume + 1 : static_cast<std::int64_t>(t.deps.size());
    reduce_attrs.set("members", members);
    request.op_type = "reduce";
    request.attrs = &reduce_attrs;
    request.box = t.region;
    request.graph = nullptr;  // not one op's piece
    request.bytes = Bytes(region * (members + 1));
  }
  return cost.compute(request);
}

}  // namespace

TaskTiming timing_of(lower::Task const& t, ir::Graph const& graph, cost::CostModel const& cost) {
  if (t.collective != lower::no_collective) return {};
  auto const& c = cost.cluster();
  auto dev = device_id(t.device);
  TaskTiming timing;
  if (t.kind == lower::TaskKind::transfer || is_swap(t.kind)) {
    timing.seconds = t.kind == lower::TaskKind::transfer
                         ? cost.transfer(t.bytes, device_id(t.source_device), dev).value()
                         : cost.host_transfer(t.bytes, dev).value();
    for_each_channel(t, c, [&](std::size_t channel) {
      timing.resources.push_back(static_cast<ResourceId>(c.num_devices() + channel));
    });
    // A device that copies on its compute stream runs its transfers and host copies there, one
    // at a time with its computation (the runtime's worker runs them inline); a GPU's copy
    // engines run them beside it.
    if (copies_on_compute(c.devices()[dev.value()]))
      timing.resources.push_back(static_cast<ResourceId>(t.device));
    return timing;
  }
  auto priced = price_compute(t, graph, cost);
  timing.seconds = priced.time.value();
  timing.measured = priced.measured;
  timing.resources.push_back(static_cast<ResourceId>(t.device));
  return timing;
}

namespace {

// The collective's algorithm over the group's routes (cost::collective_cost).
cost::CollectiveCost network_cost(lower::Collective const& collective, cluster::Cluster const& c) {
  std::vector<cluster::DeviceId> group;
  for (int d : collective.group)
    group.push_back(device_id(d));
  return cost::collective_cost(c, collective.kind, collective.bytes, group);
}

// A device that copies on its compute stream also combines the partial results there: on CPU
// cores the runtime's backend call copies and then reduces the device's share of the buffer,
// the region of its reduce members; a GPU's reductions run inside the collective's kernels at
// line rate. The slowest device's reductions lengthen the collective.
cost::CollectiveCost with_reductions(cost::CollectiveCost price,
                                     lower::Collective const& collective,
                                     lower::Program const& program, ir::Graph const& graph,
                                     cost::CostModel const& cost) {
  auto const& c = cost.cluster();
  if (std::none_of(collective.group.begin(), collective.group.end(), [&](int d) {
        return copies_on_compute(c.devices()[static_cast<std::size_t>(d)]);
      }))
    return price;
  std::vector<double> reducing(c.num_devices(), 0.0);
  for (auto m : collective.members) {
    auto const& t = program.tasks[m];
    if (t.kind == lower::TaskKind::reduce &&
        copies_on_compute(c.devices()[static_cast<std::size_t>(t.device)]))
      reducing[static_cast<std::size_t>(t.device)] += price_compute(t, graph, cost).time.value();
  }
  price.time = Seconds(price.time.value() + *std::max_element(reducing.begin(), reducing.end()));
  return price;
}

// What network_cost depends on: the kind, the buffer's bytes and the group.
struct NetworkKeyLess {
  bool operator()(lower::Collective const* a, lower::Collective const* b) const {
    return std::tie(a->kind, a->bytes, a->group) < std::tie(b->kind, b->bytes, b->group);
  }
};

}  // namespace

cost::CollectiveCost cost_of(lower::Collective const& collective, lower::Program const& program,
                             ir::Graph const& graph, cost::CostModel const& cost) {
  return with_reductions(network_cost(collective, cost.cluster()), collective, program, graph,
                         cost);
}

TaskTiming timing_of(cost::CollectiveCost const& price, lower::Collective const& collective,
                     cluster::Cluster const& c) {
  TaskTiming timing{price.time.value(), {}};
  for (auto const& [channel, bytes] : price.channel_bytes)
    timing.resources.push_back(static_cast<ResourceId>(c.num_devices() + channel));
  for (int d : collective.group)
    if (copies_on_compute(c.devices()[static_cast<std::size_t>(d)]))
      timing.resources.push_back(static_cast<ResourceId>(d));
  return timing;
}

std::vector<cost::CollectiveCost> collective_costs(lower::Program const& program,
                                                   ir::Graph const& graph,
                                                   cost::CostModel const& cost) {
  std::vector<cost::CollectiveCost> out;
  out.reserve(program.collectives.size());
  // The layers repeat their collectives: each kind, size and group is priced over its routes
  // once (issue 21: every ring's edges routed and counted per collective were a quarter of
  // lower + simulate for GPT-3 on 256 devices).
  // Each triple's first collective in `out` and its network time: the reductions add to the
  // time only, so the first's algorithm and link bytes serve the others without a copy here.
  std::map<lower::Collective const*, std::pair<std::size_t, Seconds>, NetworkKeyLess> priced;
  for (auto const& c : program.collectives) {
    auto it = priced.find(&c);
    cost::CollectiveCost network;
    if (it == priced.end()) {
      network = network_cost(c, cost.cluster());
      priced.emplace(&c, std::pair{out.size(), network.time});
    } else {
      network = out[it->second.first];
      network.time = it->second.second;
    }
    out.push_back(with_reductions(std::move(network), c, program, graph, cost));
  }
  return out;
}

Timings timings_of(lower::Program const& program, ir::Graph const& graph,
                   cost::CostModel const& cost,
                   std::vector<cost::CollectiveCost> const& collective_costs) {
  Timings out;
  out.tasks.reserve(program.tasks.size());
  for (auto const& t : program.tasks)
    out.tasks.push_back(timing_of(t, graph, cost));
  for (std::size_t i = 0; i < collective_costs.size(); ++i)
    out.collectives.push_back(
        timing_of(collective_costs[i], program.collectives[i], cost.cluster()));
  return out;
}

TaskFacts facts_of(ir::Graph const& graph, lower::Task const& t) {
  return {t.kind,          t.collective != lower::no_collective, t.device, t.source_device,
          t.bytes.value(), lower::output_bytes(graph, t)};
}

TaskIndex index_of(ir::Graph const& graph, lower::Program const& program) {
  TaskIndex index;
  index.facts.reserve(program.tasks.size());
  index.deps.first.reserve(program.tasks.size() + 1);
  index.deps.first.push_back(0);
  for (auto const& t : program.tasks) {
    index.facts.push_back(facts_of(graph, t));
    index.deps.deps.insert(index.deps.deps.end(), t.deps.begin(), t.deps.end());
    index.deps.first.push_back(static_cast<std::uint32_t>(index.deps.deps.size()));
  }
  return index;
}

namespace {

using Interval = std::pair<double, double>;

// Total length of the union of intervals sorted by start.
double covered(std::vector<Interval> const& v) {
  double total = 0, lo = 0, hi = -1;
  for (auto [a, b] : v) {
    if (a > hi) {
      if (hi > lo) total += hi - lo;
      lo = a;
      hi = b;
    } else {
      hi = std::max(hi, b);
    }
  }
  if (hi > lo) total += hi - lo;
  return total;
}

// Sorted `a` and `b` into one sorted list (each list is sorted once, not the growing union).
std::vector<Interval> merged(std::vector<Interval> const& a, std::vector<Interval> const& b) {
  std::vector<Interval> out(a.size() + b.size());
  std::merge(a.begin(), a.end(), b.begin(), b.end(), out.begin());
  return out;
}

std::int64_t bytes_of(ir::Graph const& g, ir::TensorId t, tdl::Box const& region) {
  return tdl::box_volume(region) * ir::dtype_bytes(g.tensor(t).type.dtype);
}

}  // namespace

namespace {

// What a device's spans amount to: its computing, the data it receives in flight, its host copies
// in flight.
struct DeviceSpans {
  std::vector<Interval> busy, incoming, swaps;
};

void add_span(DeviceSpans& on, TaskFacts const& t, TaskSpan span) {
  Interval at{span.start, span.end};
  if (t.kind == lower::TaskKind::transfer)
    on.incoming.push_back(at);
  else if (is_swap(t.kind))
    on.swaps.push_back(at);
  else
    on.busy.push_back(at);
}

DeviceTime time_of(DeviceSpans& on, double step_seconds) {
  for (auto* v : {&on.busy, &on.incoming, &on.swaps})
    std::sort(v->begin(), v->end());
  DeviceTime out;
  out.compute_s = covered(on.busy);
  auto waits = merged(on.busy, on.incoming);
  double with_comm = covered(waits);
  out.exposed_comm_s = with_comm - out.compute_s;
  out.exposed_swap_s = covered(merged(waits, on.swaps)) - with_comm;
  out.idle_s =
      std::max(0.0, step_seconds - out.compute_s - out.exposed_comm_s - out.exposed_swap_s);
  return out;
}

}  // namespace

DeviceTime device_time(lower::Program const& program, TaskIndex const& index, SimResult const& sim,
                       int device) {
  DeviceSpans on;
  for (std::size_t i = 0; i < index.facts.size(); ++i)
    if (index.facts[i].device == device && !index.facts[i].member)
      add_span(on, index.facts[i], sim.spans[i]);
  for (auto const& c : program.collectives) {
    if (c.members.empty() || std::find(c.group.begin(), c.group.end(), device) == c.group.end())
      continue;
    auto span = sim.spans[c.members.front()];
    on.incoming.push_back({span.start, span.end});
  }
  return time_of(on, sim.step_seconds);
}

std::vector<DeviceTime> device_times(lower::Program const& program, TaskIndex const& index,
                                     SimResult const& sim) {
  std::vector<DeviceSpans> on(static_cast<std::size_t>(program.num_devices));
  for (std::size_t i = 0; i < index.facts.size(); ++i)
    if (!index.facts[i].member)
      add_span(on[static_cast<std::size_t>(index.facts[i].device)], index.facts[i], sim.spans[i]);
  for (auto const& c : program.collectives) {
    if (c.members.empty()) continue;
    auto span = sim.spans[c.members.front()];
    for (int d : c.group)
      on[static_cast<std::size_t>(d)].incoming.push_back({span.start, span.end});
  }
  std::vector<DeviceTime> out;
  out.reserve(on.size());
  for (auto& spans : on)
    out.push_back(time_of(spans, sim.step_seconds));
  return out;
}

namespace {

// Only the critical device (the one computing longest) is broken down.
void add_breakdown(Prediction& p, lower::Program const& program, TaskIndex const& index) {
  auto devices = static_cast<std::size_t>(program.num_devices);
  if (devices == 0) return;
  int critical = 0;
  for (std::size_t d = 1; d < devices; ++d)
    if (p.device_compute_s[d] > p.device_compute_s[static_cast<std::size_t>(critical)])
      critical = static_cast<int>(d);
  auto time = device_time(program, index, p.sim, critical);
  auto& b = p.breakdown;
  b.compute_s = time.compute_s;
  b.exposed_comm_s = time.exposed_comm_s;
  b.exposed_swap_s = time.exposed_swap_s;
  b.idle_s = time.idle_s;
}

// A memory event: the time's bits (times are never negative, so their bits order as the times
// do) shifted left once, with the low bit 0 for a free and 1 for an allocation, so that at equal
// times frees go first; and the bytes, negative for a free. The order among allocations (or among
// frees) at one time does not change the peak.
struct MemoryEvent {
  std::uint64_t key = 0;
  std::int64_t bytes = 0;
};

MemoryEvent memory_event(double time, std::int64_t bytes, bool alloc) {
  std::uint64_t bits = std::bit_cast<std::uint64_t>(std::max(time, 0.0));
  return {(bits << 1) | (alloc ? 1U : 0U), alloc ? bytes : -bytes};
}

// A device's memory events, and per time bucket (buckets of equal length over the step, in key
// order) their sum and their allocations, accumulated as events are added. The running sum at
// every bucket's end follows from the sums; within a bucket the sum never rises above its value
// before the bucket plus the bucket's allocations, so only the few buckets where that bound
// exceeds the best sum at a bucket's end are sorted and walked. (A radix sort of every event took
// most of summarize(), which runs after every delta.)
class MemoryEvents {
 public:
  MemoryEvents(std::size_t buckets, double step_seconds)
      : sum_(buckets, 0), allocs_(buckets, 0),
        scale_(step_seconds > 0 ? static_cast<double>(buckets - 1) / step_seconds : 0) {}

  void reserve(std::size_t events) { events_.reserve(events); }

  void add(double time, std::int64_t bytes, bool alloc) {
    auto e = memory_event(time, bytes, alloc);
    events_.push_back(e);
    sum_[bucket(e)] += e.bytes;
    if (alloc) allocs_[bucket(e)] += bytes;
  }

  std::int64_t peak(std::vector<MemoryEvent>& scratch) const {
    std::size_t buckets = sum_.size();
    std::vector<std::int64_t> before(buckets);
    std::int64_t now = 0, peak = 0;
    for (std::size_t k = 0; k < buckets; ++k) {
      before[k] = now;
      peak = std::max(peak, now += sum_[k]);
    }
    auto may_rise = [&](std::size_t k) { return before[k] + allocs_[k] > peak; };
    scratch.clear();
    for (auto const& e : events_)
      if (may_rise(bucket(e))) scratch.push_back(e);
    std::sort(scratch.begin(), scratch.end(),
              [](MemoryEvent const& x, MemoryEvent const& y) { return x.key < y.key; });
    for (std::size_t i = 0; i < scratch.size(); ++i) {
      std::size_t k = bucket(scratch[i]);
      if (i == 0 || k != bucket(scratch[i - 1])) now = before[k];
      peak = std::max(peak, now += scratch[i].bytes);
    }
    return peak;
  }

 private:
  // Rounding keeps the bucket of a later time no lower; times beyond the step (none) go last.
  std::size_t bucket(MemoryEvent const& e) const {
    double time = std::bit_cast<double>(e.key >> 1);
    return std::min(sum_.size() - 1, static_cast<std::size_t>(time * scale_));
  }

  std::vector<MemoryEvent> events_;
  std::vector<std::int64_t> sum_, allocs_;  // per bucket
  double scale_;
};

// Items 0..n-1 grouped by device(i), ascending within each: device d's are
// order[first[d]] .. order[first[d + 1]] (a counting sort).
struct ByDevice {
  std::vector<std::uint32_t> first, order;
  std::span<std::uint32_t const> operator[](std::size_t d) const {
    return {order.data() + first[d], order.data() + first[d + 1]};
  }
};

template <typename DeviceOf>
ByDevice by_device(std::size_t devices, std::size_t n, DeviceOf const& device) {
  ByDevice out;
  out.first.assign(devices + 1, 0);
  for (std::size_t i = 0; i < n; ++i)
    ++out.first[static_cast<std::size_t>(device(i)) + 1];
  for (std::size_t d = 0; d < devices; ++d)
    out.first[d + 1] += out.first[d];
  out.order.resize(n);
  std::vector<std::uint32_t> fill(out.first.begin(), out.first.end() - 1);
  for (std::size_t i = 0; i < n; ++i)
    out.order[fill[static_cast<std::size_t>(device(i))]++] = static_cast<std::uint32_t>(i);
  return out;
}

// Memory over the simulated order, by the rule lower::output_lifetimes states (the runtime's
// arenas free blocks by the same rule): blocks held before the step persist; a task's output lives
// from its start until the last task reading it ends (or to the end of the step if none does); a
// swap-out frees its region when it ends, in place of the block it copies. Computed inline rather
// than through output_lifetimes' per-task reader lists: summarize runs after every delta.
void add_memory(Prediction& p, ir::Graph const& graph, lower::Program const& program,
                cluster::Cluster const& c, TaskIndex const& index) {
  auto devices = static_cast<std::size_t>(program.num_devices);
  auto const& tasks = program.tasks;
  // One pass from the last task back: a task's readers come after it, so its last use and
  // whether a swap-out copies it are known when it is reached.
  std::vector<double> last_use(tasks.size(), -1);
  std::vector<bool> swapped(tasks.size(), false);
  for (std::size_t i = tasks.size(); i-- > 0;) {
    auto const& t = index.facts[i];
    for (auto k = index.deps.first[i]; k < index.deps.first[i + 1]; ++k) {
      auto dep = index.deps.deps[k];
      last_use[dep] = std::max(last_use[dep], p.sim.spans[i].end);
      bool copied = t.kind == lower::TaskKind::swap_out && tasks[dep].device == t.device &&
                    tasks[dep].tensor == tasks[i].tensor;
      if (copied) swapped[dep] = true;
    }
  }
  // Then one device's events at a time: every device's at once were two events (32 bytes) a task,
  // the largest list under summarize's peak at 1,024 devices (issue 21). The events' order before
  // sorting does not matter.
  auto task_on =
      by_device(devices, tasks.size(), [&](std::size_t i) { return index.facts[i].device; });
  auto block_on = by_device(devices, program.initial.size(),
                            [&](std::size_t b) { return program.initial[b].device; });
  // About four events to a bucket.
  std::size_t buckets =
      (2 * tasks.size() + program.initial.size()) / (4 * std::max<std::size_t>(devices, 1)) + 1;
  std::vector<MemoryEvent> scratch;
  for (std::size_t d = 0; d < devices; ++d) {
    MemoryEvents events(buckets, p.sim.step_seconds);
    // At most two events per task and one per block held before the step: reserved, as growing
    // the list moved every event several times.
    events.reserve(2 * task_on[d].size() + block_on[d].size());
    for (auto b : block_on[d]) {
      auto const& block = program.initial[b];
      if (!block.on_host) events.add(0.0, bytes_of(graph, block.tensor, block.region), true);
    }
    for (auto i : task_on[d]) {
      auto const& t = index.facts[i];
      if (t.kind == lower::TaskKind::swap_out) {
        events.add(p.sim.spans[i].end, t.output_bytes, false);
        continue;
      }
      events.add(p.sim.spans[i].start, t.output_bytes, true);
      if (last_use[i] >= 0 && !swapped[i]) events.add(last_use[i], t.output_bytes, false);
    }
    std::int64_t peak = events.peak(scratch);
    p.peak_memory_bytes.push_back(peak);
    std::int64_t capacity = c.devices()[d].memory.value();
    p.memory_capacity_bytes.push_back(capacity);
    p.fits = p.fits && peak <= capacity;
  }
}

// summarize() with each compute or reduce task's (seconds, measured) from time_of(i); release()
// frees what time_of reads before the memory explanation's per-task events.
template <typename TimeOf, typename Release>
Prediction summarize_with(ir::Graph const& graph, lower::Program const& program,
                          cost::CostModel const& cost,
                          std::vector<cost::CollectiveCost> const& collective_costs,
                          TimeOf const& time_of, Release const& release, SimResult sim,
                          std::int64_t samples_per_step, TaskIndex const* index) {
  TaskIndex own;
  if (!index) {
    own = index_of(graph, program);
    index = &own;
  }
  auto const& c = cost.cluster();
  auto resources = resources_of(c);
  Prediction p;
  p.sim = std::move(sim);
  p.step_time_s = p.sim.step_seconds;
  p.samples_per_s = p.step_time_s > 0 ? static_cast<double>(samples_per_step) / p.step_time_s : 0;
  // Compute and reduce time per device, summed below: the compute streams' busy time less the
  // copies that a device without a copy engine runs on its stream.
  p.device_compute_s.assign(static_cast<std::size_t>(program.num_devices), 0.0);
  std::size_t links_from = c.num_devices();  // resources: compute streams, then link directions
  for (std::size_t r = links_from; r < resources.size(); ++r)
    p.breakdown.comm_s = std::max(p.breakdown.comm_s, p.sim.busy_seconds[r]);

  // Traffic: point-to-point transfers and host copies over their routes, collectives over the
  // link directions their algorithm uses.
  std::vector<std::int64_t> per_channel(resources.size() - links_from, 0);
  std::vector<bool> used(per_channel.size(), false);
  auto add_traffic = [&](std::size_t channel, std::int64_t bytes) {
    per_channel[channel] += bytes;
    used[channel] = true;
  };
  for (std::size_t i = 0; i < index->facts.size(); ++i) {
    auto const& t = index->facts[i];
    if (t.kind == lower::TaskKind::compute || (t.kind == lower::TaskKind::reduce && !t.member)) {
      auto [seconds, measured] = time_of(i);
      ++p.priced_tasks;
      p.measured_tasks += measured ? 1 : 0;
      p.device_compute_s[static_cast<std::size_t>(t.device)] += seconds;
    }
    if (t.kind == lower::TaskKind::transfer) p.comm_bytes += t.bytes;
    if (is_swap(t.kind)) p.swap_bytes += t.bytes;
    if (t.member) continue;
    for_each_channel(t, c, [&](std::size_t channel) { add_traffic(channel, t.bytes); });
  }
  add_breakdown(p, program, *index);
  for (std::size_t i = 0; i < program.collectives.size(); ++i) {
    auto const& col = program.collectives[i];
    auto const& price = collective_costs[i];
    for (auto const& [channel, bytes] : price.channel_bytes)
      add_traffic(channel, bytes.value());
    auto span = col.members.empty() ? TaskSpan{} : p.sim.spans[col.members.front()];
    p.collectives.push_back({std::string(cost::collective_kind_name(col.kind)),
                             std::string(cost::collective_algorithm_name(price.algorithm)),
                             graph.tensor(col.tensor).name, col.group.size(), col.bytes.value(),
                             span.start, price.time.value()});
  }
  for (std::size_t ch = 0; ch < per_channel.size(); ++ch)
    if (used[ch]) p.link_bytes.push_back({resources[links_from + ch].name, per_channel[ch]});
  release();
  add_memory(p, graph, program, c, *index);
  return p;
}

}  // namespace

ComputeTimes compute_times(lower::Program const& program, Timings const& timings) {
  ComputeTimes out;
  out.seconds.assign(program.tasks.size(), 0.0);
  out.measured.assign(program.tasks.size(), false);
  for (std::size_t i = 0; i < program.tasks.size(); ++i) {
    auto kind = program.tasks[i].kind;
    if (kind != lower::TaskKind::compute && kind != lower::TaskKind::reduce) continue;
    out.seconds[i] = timings.tasks[i].seconds;
    out.measured[i] = timings.tasks[i].measured;
  }
  return out;
}

Prediction summarize(ir::Graph const& graph, lower::Program const& program,
                     cost::CostModel const& cost,
                     std::vector<cost::CollectiveCost> const& collective_costs,
                     Timings const& timings, SimResult sim, std::int64_t samples_per_step,
                     TaskIndex const* index) {
  auto time_of = [&](std::size_t i) {
    return std::pair{timings.tasks[i].seconds, timings.tasks[i].measured};
  };
  return summarize_with(
      graph, program, cost, collective_costs, time_of, [] {}, std::move(sim), samples_per_step,
      index);
}

Prediction summarize(ir::Graph const& graph, lower::Program const& program,
                     cost::CostModel const& cost,
                     std::vector<cost::CollectiveCost> const& collective_costs,
                     ComputeTimes compute, SimResult sim, std::int64_t samples_per_step,
                     TaskIndex const* index) {
  auto time_of = [&](std::size_t i) {
    return std::pair{compute.seconds[i], static_cast<bool>(compute.measured[i])};
  };
  return summarize_with(
      graph, program, cost, collective_costs, time_of, [&] { compute = {}; }, std::move(sim),
      samples_per_step, index);
}

Prediction predict(ir::Graph const& graph, lower::Program const& program,
                   cost::CostModel const& cost, std::int64_t samples_per_step) {
  auto costs = collective_costs(program, graph, cost);
  auto timings = timings_of(program, graph, cost, costs);
  auto sim = simulate(program, timings, resources_of(cost.cluster()));
  return summarize(graph, program, cost, costs, timings, std::move(sim), samples_per_step);
}

}  // namespace cleave::sim
