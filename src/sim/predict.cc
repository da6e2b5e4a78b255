#include "sim/predict.h"

#include <algorithm>
#include <map>

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
template <typename Visit>
void for_each_channel(lower::Task const& t, cluster::Cluster const& c, Visit const& visit) {
  if (t.kind == lower::TaskKind::transfer) {
    for (auto const& hop : c.route(device_id(t.source_device), device_id(t.device)).hops)
      visit(hop.channel());
  } else if (t.kind == lower::TaskKind::swap_out || t.kind == lower::TaskKind::swap_in) {
    bool in = t.kind == lower::TaskKind::swap_in;
    for (auto const& hop : c.host_route(device_id(t.device)).hops)
      visit(in ? hop.channel() ^ 1 : hop.channel());
  }
}

cost::CollectiveKind cost_kind(lower::CollectiveKind kind) {
  switch (kind) {
  case lower::CollectiveKind::all_gather:
    return cost::CollectiveKind::all_gather;
  case lower::CollectiveKind::reduce_scatter:
    return cost::CollectiveKind::reduce_scatter;
  case lower::CollectiveKind::all_reduce:
    return cost::CollectiveKind::all_reduce;
  }
  return cost::CollectiveKind::all_gather;
}

bool is_swap(lower::Task const& t) {
  return t.kind == lower::TaskKind::swap_out || t.kind == lower::TaskKind::swap_in;
}

}  // namespace

TaskTiming timing_of(lower::Task const& t, ir::Graph const& graph, cost::CostModel const& cost) {
  if (t.collective != lower::no_collective) return {};
  auto const& c = cost.cluster();
  auto dev = device_id(t.device);
  TaskTiming timing;
  if (t.kind == lower::TaskKind::transfer || is_swap(t)) {
    timing.seconds = t.kind == lower::TaskKind::transfer
                         ? cost.transfer(t.bytes, device_id(t.source_device), dev).value()
                         : cost.host_transfer(t.bytes, dev).value();
    for_each_channel(t, c, [&](std::size_t channel) {
      timing.resources.push_back(static_cast<ResourceId>(c.num_devices() + channel));
    });
    return timing;
  }
  ir::DType dtype = graph.tensor(t.tensor).type.dtype;
  auto const& op = graph.op(t.op);
  cost::ComputeRequest request{op.type, &op.attrs, dtype, t.iteration, t.flops, t.bytes, dev};
  ir::Attrs reduce_attrs;  // a reduce task is keyed by its members and region in profiles
  if (t.kind == lower::TaskKind::reduce) {
    std::int64_t region = tdl::box_volume(t.region) * ir::dtype_bytes(dtype);
    reduce_attrs.set("members", static_cast<std::int64_t>(t.deps.size()));
    request.op_type = "reduce";
    request.attrs = &reduce_attrs;
    request.box = t.region;
    request.bytes = Bytes(region * static_cast<std::int64_t>(t.deps.size() + 1));
  }
  auto priced = cost.compute(request);
  timing.seconds = priced.time.value();
  timing.measured = priced.measured;
  timing.resources.push_back(static_cast<ResourceId>(t.device));
  return timing;
}

cost::CollectiveCost cost_of(lower::Collective const& collective, cost::CostModel const& cost) {
  std::vector<cluster::DeviceId> group;
  for (int d : collective.group)
    group.push_back(device_id(d));
  return cost::collective_cost(cost.cluster(), cost_kind(collective.kind), collective.bytes, group);
}

TaskTiming timing_of(cost::CollectiveCost const& collective, std::size_t num_devices) {
  TaskTiming timing{collective.time.value(), {}};
  for (auto const& [channel, bytes] : collective.channel_bytes)
    timing.resources.push_back(static_cast<ResourceId>(num_devices + channel));
  return timing;
}

std::vector<cost::CollectiveCost> collective_costs(lower::Program const& program,
                                                   cost::CostModel const& cost) {
  std::vector<cost::CollectiveCost> out;
  out.reserve(program.collectives.size());
  for (auto const& c : program.collectives)
    out.push_back(cost_of(c, cost));
  return out;
}

Timings timings_of(lower::Program const& program, ir::Graph const& graph,
                   cost::CostModel const& cost,
                   std::vector<cost::CollectiveCost> const& collective_costs) {
  Timings out;
  out.tasks.reserve(program.tasks.size());
  for (auto const& t : program.tasks)
    out.tasks.push_back(timing_of(t, graph, cost));
  for (auto const& c : collective_costs)
    out.collectives.push_back(timing_of(c, cost.cluster().num_devices()));
  return out;
}

namespace {

using Interval = std::pair<double, double>;

// Total length of the union of intervals.
double covered(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
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

std::int64_t bytes_of(ir::Graph const& g, ir::TensorId t, tdl::Box const& region) {
  return tdl::box_volume(region) * ir::dtype_bytes(g.tensor(t).type.dtype);
}

void add_breakdown(Prediction& p, lower::Program const& program) {
  auto devices = static_cast<std::size_t>(program.num_devices);
  // Per device: computing, data it receives in flight, its host copies in flight.
  std::vector<std::vector<Interval>> busy(devices), incoming(devices), swaps(devices);
  for (std::size_t i = 0; i < program.tasks.size(); ++i) {
    auto const& t = program.tasks[i];
    if (t.collective != lower::no_collective) continue;
    Interval span{p.sim.spans[i].start, p.sim.spans[i].end};
    auto d = static_cast<std::size_t>(t.device);
    if (t.kind == lower::TaskKind::transfer)
      incoming[d].push_back(span);
    else if (is_swap(t))
      swaps[d].push_back(span);
    else
      busy[d].push_back(span);
  }
  for (auto const& c : program.collectives) {
    if (c.members.empty()) continue;
    auto span = p.sim.spans[c.members.front()];
    for (int d : c.group)
      incoming[static_cast<std::size_t>(d)].push_back({span.start, span.end});
  }
  if (devices == 0) return;
  std::size_t critical = 0;
  for (std::size_t d = 1; d < devices; ++d)
    if (p.device_compute_s[d] > p.device_compute_s[critical]) critical = d;
  auto& b = p.breakdown;
  b.compute_s = covered(busy[critical]);
  auto waits = busy[critical];
  waits.insert(waits.end(), incoming[critical].begin(), incoming[critical].end());
  double with_comm = covered(waits);
  b.exposed_comm_s = with_comm - b.compute_s;
  waits.insert(waits.end(), swaps[critical].begin(), swaps[critical].end());
  b.exposed_swap_s = covered(waits) - with_comm;
  b.idle_s = std::max(0.0, p.step_time_s - b.compute_s - b.exposed_comm_s - b.exposed_swap_s);
}

// Memory over the simulated order, by the rule lower::output_lifetimes states (the runtime's
// arenas free blocks by the same rule): blocks held before the step persist; a task's output lives
// from its start until the last task reading it ends (or to the end of the step if none does); a
// swap-out frees its region when it ends, in place of the block it copies.
void add_memory(Prediction& p, ir::Graph const& graph, lower::Program const& program,
                cluster::Cluster const& c) {
  auto devices = static_cast<std::size_t>(program.num_devices);
  auto const& tasks = program.tasks;
  // Per device, allocations and frees apart: at equal times frees go first, and the order among
  // allocations (or among frees) at one time does not change the peak.
  using Event = std::pair<double, std::int64_t>;
  std::vector<std::vector<Event>> allocs(devices), frees(devices);
  for (auto const& b : program.initial)
    allocs[static_cast<std::size_t>(b.device)].push_back(
        {0.0, bytes_of(graph, b.tensor, b.region)});
  auto lifetimes = lower::output_lifetimes(program);
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    auto const& t = tasks[i];
    std::int64_t size = bytes_of(graph, t.tensor, t.region);
    auto d = static_cast<std::size_t>(t.device);
    if (!lifetimes[i].allocates) {
      frees[d].push_back({p.sim.spans[i].end, size});
      continue;
    }
    allocs[d].push_back({p.sim.spans[i].start, size});
    double last_use = -1;
    for (lower::TaskId r : lifetimes[i].readers)
      last_use = std::max(last_use, p.sim.spans[r].end);
    if (last_use >= 0 && !lifetimes[i].swapped) frees[d].push_back({last_use, size});
  }
  auto by_time = [](Event const& x, Event const& y) { return x.first < y.first; };
  for (std::size_t d = 0; d < devices; ++d) {
    std::sort(allocs[d].begin(), allocs[d].end(), by_time);
    std::sort(frees[d].begin(), frees[d].end(), by_time);
    std::int64_t now = 0, peak = 0;
    std::size_t f = 0;
    for (auto [time, size] : allocs[d]) {
      for (; f < frees[d].size() && frees[d][f].first <= time; ++f)
        now -= frees[d][f].second;
      peak = std::max(peak, now += size);
    }
    p.peak_memory_bytes.push_back(peak);
    std::int64_t capacity = c.devices()[d].memory.value();
    p.memory_capacity_bytes.push_back(capacity);
    p.fits = p.fits && peak <= capacity;
  }
}

}  // namespace

Prediction summarize(ir::Graph const& graph, lower::Program const& program,
                     cost::CostModel const& cost,
                     std::vector<cost::CollectiveCost> const& collective_costs,
                     Timings const& timings, SimResult sim, std::int64_t samples_per_step) {
  auto const& c = cost.cluster();
  auto resources = resources_of(c);
  Prediction p;
  p.sim = std::move(sim);
  p.step_time_s = p.sim.step_seconds;
  p.samples_per_s = p.step_time_s > 0 ? static_cast<double>(samples_per_step) / p.step_time_s : 0;
  p.device_compute_s = p.sim.compute_seconds;
  add_breakdown(p, program);
  std::size_t links_from = c.num_devices();  // resources: compute streams, then link directions
  for (std::size_t r = links_from; r < resources.size(); ++r)
    p.breakdown.comm_s = std::max(p.breakdown.comm_s, p.sim.busy_seconds[r]);

  // Traffic: point-to-point transfers and host copies over their routes, collectives over the
  // link directions their algorithm uses.
  std::map<std::size_t, std::int64_t> per_channel;
  for (std::size_t i = 0; i < program.tasks.size(); ++i) {
    auto const& t = program.tasks[i];
    if (t.kind == lower::TaskKind::compute ||
        (t.kind == lower::TaskKind::reduce && t.collective == lower::no_collective)) {
      ++p.priced_tasks;
      p.measured_tasks += timings.tasks[i].measured ? 1 : 0;
    }
    if (t.kind == lower::TaskKind::transfer) p.comm_bytes += t.bytes.value();
    if (is_swap(t)) p.swap_bytes += t.bytes.value();
    if (t.collective != lower::no_collective) continue;
    for_each_channel(t, c, [&](std::size_t channel) { per_channel[channel] += t.bytes.value(); });
  }
  for (std::size_t i = 0; i < program.collectives.size(); ++i) {
    auto const& col = program.collectives[i];
    auto const& price = collective_costs[i];
    for (auto const& [channel, bytes] : price.channel_bytes)
      per_channel[channel] += bytes.value();
    auto span = col.members.empty() ? TaskSpan{} : p.sim.spans[col.members.front()];
    p.collectives.push_back({std::string(cost::collective_kind_name(cost_kind(col.kind))),
                             std::string(cost::collective_algorithm_name(price.algorithm)),
                             graph.tensor(col.tensor).name, col.group.size(), col.bytes.value(),
                             span.start, price.time.value()});
  }
  for (auto const& [ch, bytes] : per_channel)
    p.link_bytes.push_back({resources[links_from + ch].name, bytes});
  add_memory(p, graph, program, c);
  return p;
}

Prediction predict(ir::Graph const& graph, lower::Program const& program,
                   cost::CostModel const& cost, std::int64_t samples_per_step) {
  auto costs = collective_costs(program, cost);
  auto timings = timings_of(program, graph, cost, costs);
  auto sim = simulate(program, timings, resources_of(cost.cluster()));
  return summarize(graph, program, cost, costs, timings, std::move(sim), samples_per_step);
}

}  // namespace cleave::sim
