#include "report/plan_report.h"

#include <algorithm>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "report/memory_report.h"
#include "support/format_bytes.h"

namespace cleave::report {

namespace {

std::int64_t max_of(std::vector<std::int64_t> const& v) {
  return v.empty() ? 0 : *std::max_element(v.begin(), v.end());
}

}  // namespace

std::string rows_to_text(std::string const& model, std::string const& cluster,
                         std::vector<PlanRow> const& rows) {
  std::string out = fmt::format("model    {}\ncluster  {}\n\n", model, cluster);
  out += fmt::format("{:<15} {:>12} {:>12} {:>10} {:>14} {:>14} {:>5} {:>12} {:>10}\n", "algorithm",
                     "step (s)", "samples/s", "efficiency", "peak mem/dev", "capacity/dev", "fits",
                     "comm", "search (s)");
  for (auto const& r : rows) {
    auto const& p = r.prediction();
    out +=
        fmt::format("{:<15} {:>12.6f} {:>12.1f} {:>9.1f}% {:>14} {:>14} {:>5} {:>12} {:>10.3f}\n",
                    r.algorithm, p.step_time_s, p.samples_per_s, 100 * r.efficiency(),
                    format_bytes(Bytes(max_of(p.peak_memory_bytes))),
                    format_bytes(Bytes(max_of(p.memory_capacity_bytes))), p.fits ? "yes" : "NO",
                    format_bytes(Bytes(p.comm_bytes)), r.search_time_s);
  }
  out += "\nbreakdown of the busiest device (s): compute / exposed communication / idle; "
         "busiest link busy\n";
  for (auto const& r : rows) {
    auto const& b = r.prediction().breakdown;
    out += fmt::format("{:<15} {:.6f} / {:.6f} / {:.6f}; {:.6f}\n", r.algorithm, b.compute_s,
                       b.exposed_comm_s, b.idle_s, b.comm_s);
  }
  std::string over;
  for (auto const& r : rows)
    over += over_capacity_summary(r.algorithm, r.evaluation);
  return over.empty() ? out : out + "\n" + over;
}

std::string rows_to_json(std::string const& model, std::string const& cluster,
                         std::vector<PlanRow> const& rows) {
  auto list = nlohmann::json::array();
  for (auto const& r : rows) {
    auto const& p = r.prediction();
    nlohmann::json links = nlohmann::json::object();
    for (auto const& [name, bytes] : p.link_bytes)
      links[name] = bytes;
    list.push_back({{"algorithm", r.algorithm},
                    {"step_time_s", p.step_time_s},
                    {"samples_per_s", p.samples_per_s},
                    {"ideal_step_time_s", r.ideal_step_time_s},
                    {"efficiency", r.efficiency()},
                    {"peak_memory_bytes", p.peak_memory_bytes},
                    {"memory_capacity_bytes", p.memory_capacity_bytes},
                    {"fits", p.fits},
                    {"comm_bytes", p.comm_bytes},
                    {"link_bytes", std::move(links)},
                    {"priced_tasks", p.priced_tasks},
                    {"measured_tasks", p.measured_tasks},
                    {"search_time_s", r.search_time_s},
                    {"breakdown",
                     {{"compute_s", p.breakdown.compute_s},
                      {"exposed_comm_s", p.breakdown.exposed_comm_s},
                      {"exposed_swap_s", p.breakdown.exposed_swap_s},
                      {"idle_s", p.breakdown.idle_s},
                      {"comm_s", p.breakdown.comm_s}}},
                    {"devices", devices_to_json(r.evaluation)},
                    {"violations", violations_to_json(r.evaluation)}});
  }
  nlohmann::json j{
      {"format", "cleave.compare/1"}, {"model", model}, {"cluster", cluster}, {"plans", list}};
  return j.dump(2) + "\n";
}

std::string chrome_trace(ir::Graph const& graph, lower::Program const& program,
                         Timeline const& timeline) {
  auto events = nlohmann::json::array();
  char const* threads[] = {"compute", "transfers in", "collectives", "host copies"};
  bool by_rank = !timeline.rank_of_device.empty();
  // A device's threads: in its own process, or among its rank's devices' (4 per device).
  auto pid = [&](int d) {
    return by_rank ? timeline.rank_of_device[static_cast<std::size_t>(d)] : d;
  };
  auto tid = [&](int d, int thread) { return by_rank ? 4 * d + thread : thread; };
  for (int d = 0; d < program.num_devices; ++d) {
    if (!by_rank || d == 0 || pid(d) != pid(d - 1))
      events.push_back(
          {{"name", "process_name"},
           {"ph", "M"},
           {"pid", pid(d)},
           {"args", {{"name", (by_rank ? "rank " : "device ") + std::to_string(pid(d))}}}});
    for (int thread = 0; thread < 4; ++thread)
      events.push_back({{"name", "thread_name"},
                        {"ph", "M"},
                        {"pid", pid(d)},
                        {"tid", tid(d, thread)},
                        {"args",
                         {{"name", (by_rank ? "device " + std::to_string(d) + " " : std::string()) +
                                       threads[thread]}}}});
  }
  for (std::size_t i = 0; i < program.tasks.size(); ++i) {
    auto const& t = program.tasks[i];
    if (t.collective != lower::no_collective) continue;  // shown as its collective
    std::string const& tensor = graph.tensor(t.tensor).name;
    std::string name;
    int thread = 0;
    switch (t.kind) {
    case lower::TaskKind::compute:
      name = graph.op(t.op).name;
      break;
    case lower::TaskKind::reduce:
      name = "reduce " + tensor;
      break;
    case lower::TaskKind::transfer:
      name = "recv " + tensor + " from " + std::to_string(t.source_device);
      thread = 1;
      break;
    case lower::TaskKind::swap_out:
      name = "swap out " + tensor;
      thread = 3;
      break;
    case lower::TaskKind::swap_in:
      name = "swap in " + tensor;
      thread = 3;
      break;
    }
    events.push_back({{"name", name},
                      {"ph", "X"},
                      {"pid", pid(t.device)},
                      {"tid", tid(t.device, thread)},
                      {"ts", timeline.tasks[i].start * 1e6},
                      {"dur", (timeline.tasks[i].end - timeline.tasks[i].start) * 1e6},
                      {"args",
                       {{"bytes", t.bytes.value()},
                        {"flops", t.flops.value()},
                        {"op", t.kind == lower::TaskKind::compute ? graph.op(t.op).type : ""}}}});
  }
  // A collective is one event on every device of its group.
  for (std::size_t c = 0; c < program.collectives.size(); ++c) {
    auto const& col = program.collectives[c];
    auto const& s = timeline.collectives[c];
    for (int d : col.group)
      events.push_back({{"name", s.name},
                        {"ph", "X"},
                        {"pid", pid(d)},
                        {"tid", tid(d, 2)},
                        {"ts", s.start_s * 1e6},
                        {"dur", (s.end_s - s.start_s) * 1e6},
                        {"args",
                         {{"bytes", s.bytes},
                          {"algorithm", s.algorithm},
                          {"devices", col.group.size()},
                          {"tasks", col.members.size()}}}});
  }
  for (std::size_t d = 0; d < timeline.memory.size(); ++d)
    for (auto const& point : timeline.memory[d])
      events.push_back({{"name", by_rank ? "device " + std::to_string(d) + " memory" : "memory"},
                        {"ph", "C"},
                        {"pid", pid(static_cast<int>(d))},
                        {"ts", point.time_s * 1e6},
                        {"args", {{"bytes", point.bytes}}}});
  return nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump() + "\n";
}

Timeline simulated_timeline(lower::Program const& program, sim::Prediction const& prediction) {
  Timeline t;
  t.tasks = prediction.sim.spans;
  for (std::size_t c = 0; c < program.collectives.size(); ++c) {
    auto const& s = prediction.collectives[c];
    t.collectives.push_back(
        {s.kind + " " + s.tensor, s.algorithm, s.bytes, s.start_s, s.start_s + s.seconds});
  }
  return t;
}

Timeline measured_timeline(ir::Graph const& graph, lower::Program const& program,
                           std::vector<sim::TaskSpan> tasks, std::string const& algorithm) {
  Timeline t;
  t.tasks = std::move(tasks);
  for (auto const& col : program.collectives) {
    Timeline::CollectiveSpan span{std::string(cost::collective_kind_name(col.kind)) + " " +
                                      graph.tensor(col.tensor).name,
                                  algorithm, col.bytes.value(), 0, 0};
    bool first = true;
    for (auto m : col.members) {
      auto const& ts = t.tasks[m];
      span.start_s = first ? ts.start : std::min(span.start_s, ts.start);
      span.end_s = first ? ts.end : std::max(span.end_s, ts.end);
      first = false;
    }
    t.collectives.push_back(std::move(span));
  }
  return t;
}

std::string chrome_trace(ir::Graph const& graph, lower::Program const& program,
                         sim::Prediction const& prediction) {
  return chrome_trace(graph, program, simulated_timeline(program, prediction));
}

}  // namespace cleave::report
