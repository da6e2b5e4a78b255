#include "sim/predict.h"

#include <algorithm>
#include <map>

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

std::vector<TaskTiming> timings_of(lower::Program const& program, ir::Graph const& graph,
                                   cost::CostModel const& cost) {
  auto const& c = cost.cluster();
  std::vector<TaskTiming> out;
  out.reserve(program.tasks.size());
  for (auto const& t : program.tasks) {
    cluster::DeviceId dev(static_cast<cluster::DeviceId::value_type>(t.device));
    ir::DType dtype = graph.tensor(t.tensor).type.dtype;
    TaskTiming timing;
    if (t.kind == lower::TaskKind::transfer) {
      cluster::DeviceId from(static_cast<cluster::DeviceId::value_type>(t.source_device));
      timing.seconds = cost.transfer(t.bytes, from, dev).value();
      for (auto const& hop : c.route(from, dev).hops)
        timing.resources.push_back(static_cast<ResourceId>(c.num_devices() + hop.channel()));
    } else {
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
    }
    out.push_back(std::move(timing));
  }
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

}  // namespace

Prediction predict(ir::Graph const& graph, lower::Program const& program,
                   cost::CostModel const& cost, std::int64_t samples_per_step) {
  auto const& c = cost.cluster();
  auto resources = resources_of(c);
  auto timings = timings_of(program, graph, cost);
  Prediction p;
  p.sim = simulate(program, timings, resources);
  p.step_time_s = p.sim.step_seconds;
  p.samples_per_s = p.step_time_s > 0 ? static_cast<double>(samples_per_step) / p.step_time_s : 0;
  p.device_compute_s = p.sim.compute_seconds;

  std::size_t devices = static_cast<std::size_t>(program.num_devices);
  std::vector<std::vector<Interval>> busy(devices), incoming(devices);
  for (std::size_t i = 0; i < program.tasks.size(); ++i) {
    auto const& t = program.tasks[i];
    auto span = p.sim.spans[i];
    auto d = static_cast<std::size_t>(t.device);
    if (t.kind == lower::TaskKind::transfer) {
      incoming[d].push_back({span.start, span.end});
      p.comm_bytes += t.bytes.value();
    } else {
      busy[d].push_back({span.start, span.end});
      ++p.priced_tasks;
      p.measured_tasks += timings[i].measured ? 1 : 0;
    }
  }
  std::size_t critical = 0;
  for (std::size_t d = 1; d < devices; ++d)
    if (p.device_compute_s[d] > p.device_compute_s[critical]) critical = d;
  if (devices > 0) {
    auto& b = p.breakdown;
    b.compute_s = covered(busy[critical]);
    auto both = busy[critical];
    both.insert(both.end(), incoming[critical].begin(), incoming[critical].end());
    b.exposed_comm_s = covered(both) - b.compute_s;
    b.idle_s = std::max(0.0, p.step_time_s - b.compute_s - b.exposed_comm_s);
  }
  for (std::size_t r = devices; r < resources.size(); ++r) {
    p.breakdown.comm_s = std::max(p.breakdown.comm_s, p.sim.busy_seconds[r]);
  }
  std::map<std::size_t, std::int64_t> per_channel;
  for (auto const& t : program.tasks) {
    if (t.kind != lower::TaskKind::transfer) continue;
    cluster::DeviceId from(static_cast<cluster::DeviceId::value_type>(t.source_device));
    cluster::DeviceId to(static_cast<cluster::DeviceId::value_type>(t.device));
    for (auto const& hop : c.route(from, to).hops)
      per_channel[hop.channel()] += t.bytes.value();
  }
  for (auto const& [ch, bytes] : per_channel)
    p.link_bytes.push_back({resources[devices + ch].name, bytes});

  // Memory over the simulated order: blocks held before the step persist; a task's output lives
  // from its start until the last task reading it ends (or to the end of the step if none does).
  std::vector<std::vector<std::pair<double, std::int64_t>>> events(devices);
  for (auto const& b : program.initial)
    events[static_cast<std::size_t>(b.device)].push_back(
        {0.0, bytes_of(graph, b.tensor, b.region)});
  std::vector<double> last_use(program.tasks.size(), -1);
  for (std::size_t i = 0; i < program.tasks.size(); ++i)
    for (auto dep : program.tasks[i].deps)
      last_use[dep] = std::max(last_use[dep], p.sim.spans[i].end);
  for (std::size_t i = 0; i < program.tasks.size(); ++i) {
    auto const& t = program.tasks[i];
    std::int64_t size = bytes_of(graph, t.tensor, t.region);
    auto d = static_cast<std::size_t>(t.device);
    events[d].push_back({p.sim.spans[i].start, size});
    if (last_use[i] >= 0) events[d].push_back({last_use[i], -size});
  }
  for (std::size_t d = 0; d < devices; ++d) {
    auto& e = events[d];
    // At equal times, frees before allocations.
    std::sort(e.begin(), e.end(), [](auto const& x, auto const& y) {
      return x.first != y.first ? x.first < y.first : x.second < y.second;
    });
    std::int64_t now = 0, peak = 0;
    for (auto [time, delta] : e)
      peak = std::max(peak, now += delta);
    p.peak_memory_bytes.push_back(peak);
    std::int64_t capacity = c.devices()[d].memory.value();
    p.memory_capacity_bytes.push_back(capacity);
    p.fits = p.fits && peak <= capacity;
  }
  return p;
}

}  // namespace cleave::sim
