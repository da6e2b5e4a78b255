#include "report/html_report.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "report/memory_report.h"
#include "report/plan_report.h"
#include "support/json_read.h"

namespace cleave::report {

namespace {

using json = nlohmann::json;

constexpr std::size_t max_memory_points = 600;  // per device: enough for a chart, and small
constexpr int lanes = 4;  // chrome_trace's threads: compute, transfers in, collectives, host copies

// Of n samples, at most max_memory_points: the fullest (by `bytes(i)`) of each stretch, so that
// the peak survives.
template <typename BytesOf> std::vector<std::size_t> thinned(std::size_t n, BytesOf const& bytes) {
  std::vector<std::size_t> kept;
  std::size_t bins = std::min(n, max_memory_points);
  for (std::size_t b = 0; b < bins; ++b) {
    std::size_t best = b * n / bins;
    for (std::size_t i = best; i < (b + 1) * n / bins; ++i)
      if (bytes(i) > bytes(best)) best = i;
    kept.push_back(best);
  }
  return kept;
}

// Per device, the bytes each role holds over the step: one sample per time at which blocks are
// allocated or freed (after all of them), thinned.
json memory_series(ir::Graph const& graph, sim::Evaluation const& e) {
  auto use = sim::memory_use(graph, e.program, e.prediction.sim.spans);
  auto out = json::array();
  for (auto const& events : use.events) {
    std::vector<double> times;
    std::vector<std::array<std::int64_t, sim::memory_role_count>> samples;
    std::array<std::int64_t, sim::memory_role_count> held{};
    for (std::size_t i = 0; i < events.size(); ++i) {
      auto const& ev = events[i];
      held[static_cast<std::size_t>(use.blocks[ev.block].role)] += ev.bytes;
      if (i + 1 < events.size() && events[i + 1].time_s == ev.time_s) continue;
      times.push_back(ev.time_s);
      samples.push_back(held);
    }
    auto total = [&](std::size_t i) {
      std::int64_t sum = 0;
      for (auto b : samples[i])
        sum += b;
      return sum;
    };
    auto kept = thinned(samples.size(), total);
    json t = json::array();
    json roles = json::array();
    for (std::size_t r = 0; r < sim::memory_role_count; ++r) {
      json series = json::array();
      for (auto i : kept)
        series.push_back(samples[i][r]);
      roles.push_back(std::move(series));
    }
    for (auto i : kept)
      t.push_back(times[i]);
    out.push_back({{"t", std::move(t)}, {"roles", std::move(roles)}});
  }
  return out;
}

// A measured trace's "memory" counters (chrome_trace's, from a run's arenas) per device, in time
// order, thinned: {t (s), bytes, peak_bytes, peak_s}; null when the trace has none.
Expected<json> memory_counters(json const& trace, std::string const& where, int num_devices) {
  std::vector<std::vector<std::pair<double, std::int64_t>>> samples(
      static_cast<std::size_t>(num_devices));
  bool any = false;
  for (auto const& ev : trace["traceEvents"]) {
    if (!ev.is_object() || ev.value("ph", "") != "C" || ev.value("name", "") != "memory") continue;
    bool ok = ev.contains("pid") && ev["pid"].is_number_integer() && ev.contains("ts") &&
              ev["ts"].is_number() && ev.contains("args") && ev["args"].is_object() &&
              ev["args"].contains("bytes") && ev["args"]["bytes"].is_number_integer();
    if (!ok)
      return json_read::content_error(where, "a memory counter without an integer pid, a number "
                                             "ts and integer args.bytes");
    CLEAVE_TRY(std::int64_t device, json_read::get_integer(ev["pid"], where, "an integer pid"));
    CLEAVE_TRY(std::int64_t bytes,
               json_read::get_integer(ev["args"]["bytes"], where, "an integer args.bytes"));
    if (device < 0 || device >= num_devices)
      return json_read::content_error(where, "a memory counter of device " +
                                                 std::to_string(device) + ": the plan has " +
                                                 std::to_string(num_devices) + " devices");
    samples[static_cast<std::size_t>(device)].push_back(
        {ev["ts"].get<double>() * 1e-6, bytes});
    any = true;
  }
  if (!any) return json(nullptr);
  json out = json::array();
  for (auto& points : samples) {
    std::stable_sort(points.begin(), points.end(),
                     [](auto const& a, auto const& b) { return a.first < b.first; });
    json t = json::array(), bytes = json::array();
    std::pair<double, std::int64_t> peak{0, 0};
    for (auto i : thinned(points.size(), [&](std::size_t i) { return points[i].second; })) {
      t.push_back(points[i].first);
      bytes.push_back(points[i].second);
      if (points[i].second > peak.second) peak = points[i];
    }
    out.push_back({{"t", std::move(t)},
                   {"bytes", std::move(bytes)},
                   {"peak_bytes", peak.second},
                   {"peak_s", peak.first}});
  }
  return out;
}

// A Chrome trace's complete events ("ph": "X") as [device, lane, start us, duration us, name]
// with the names in a table, and its memory counters: the one shape the script draws for
// simulated and measured timelines.
Expected<json> timeline_of(json const& trace, std::string const& label, int num_devices) {
  std::string const where = "the " + label + " trace";
  if (!trace.is_object() || !trace.contains("traceEvents") || !trace["traceEvents"].is_array())
    return json_read::content_error(where, "expected a Chrome trace (an object with a "
                                           "traceEvents array), as `cleave run --trace` writes");
  json names = json::array();
  std::unordered_map<std::string, std::size_t> index;
  json events = json::array();
  double end_us = 0;
  for (auto const& ev : trace["traceEvents"]) {
    if (!ev.is_object() || ev.value("ph", "") != "X") continue;
    bool ok = ev.contains("pid") && ev["pid"].is_number_integer() && ev.contains("tid") &&
              ev["tid"].is_number_integer() && ev.contains("ts") && ev["ts"].is_number() &&
              ev.contains("dur") && ev["dur"].is_number() && ev.contains("name") &&
              ev["name"].is_string();
    if (!ok)
      return json_read::content_error(where, "an event without an integer pid and tid, numbers "
                                             "ts and dur and a string name");
    int device = ev["pid"];
    int lane = ev["tid"];
    if (device < 0 || device >= num_devices || lane < 0 || lane >= lanes)
      return json_read::content_error(where, "an event on device " + std::to_string(device) +
                                                 ", thread " + std::to_string(lane) +
                                                 ": the plan has " + std::to_string(num_devices) +
                                                 " devices (is the trace of another plan?)");
    std::string const& name = ev["name"].get_ref<std::string const&>();
    auto [it, fresh] = index.try_emplace(name, names.size());
    if (fresh) names.push_back(name);
    double start = ev["ts"], dur = ev["dur"];
    end_us = std::max(end_us, start + dur);
    // Tenths of a microsecond are finer than any span the trace can resolve.
    events.push_back(
        {device, lane, std::round(start * 10) / 10, std::round(dur * 10) / 10, it->second});
  }
  CLEAVE_TRY(json memory, memory_counters(trace, where, num_devices));
  return json{{"label", label},
              {"end_s", end_us * 1e-6},
              {"names", names},
              {"events", events},
              {"memory", std::move(memory)}};
}

// "0-7", "0,2,4", "3".
std::string devices_text(std::vector<int> const& devices) {
  std::vector<int> sorted = devices;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  bool contiguous = sorted.size() > 2 && sorted.back() - sorted.front() + 1 == int(sorted.size());
  if (contiguous) return std::to_string(sorted.front()) + "-" + std::to_string(sorted.back());
  std::string out;
  for (int d : sorted)
    out += (out.empty() ? "" : ",") + std::to_string(d);
  return out;
}

// Per op: name, type, its split ("n=2,co=4"; empty: whole), its devices.
json ops_table(HtmlContext const& ctx, plan::Plan const& p) {
  json out = json::array();
  for (auto const& op : ctx.graph.ops()) {
    auto const& config = p.ops[op.id.value()];
    std::string split;
    if (auto bound = ctx.registry.bind(ctx.graph, op.id))
      for (std::size_t d = 0; d < config.degrees.size(); ++d)
        if (config.degrees[d] > 1)
          split += (split.empty() ? "" : ",") + (*bound)->dims()[d].name + "=" +
                   std::to_string(config.degrees[d]);
    out.push_back({op.name, op.type, split, devices_text(config.devices)});
  }
  return out;
}

json fixes_json(std::vector<DeviceFixes> const& fixes) {
  json out = json::array();
  for (auto const& d : fixes) {
    json list = json::array();
    for (auto const& f : d.fixes) {
      json j{{"name", f.name},
             {"change", f.change},
             {"computed", f.computed},
             {"estimate", f.estimate}};
      if (f.computed) {
        j["saved_bytes"] = f.saved_bytes;
        j["peak_bytes"] = f.peak_bytes;
        j["device_fits"] = f.device_fits;
        j["step_time_s"] = f.step_time_s;
      }
      list.push_back(std::move(j));
    }
    out.push_back({{"device", d.device}, {"fixes", std::move(list)}});
  }
  return out;
}

Expected<json> plan_data(HtmlContext const& ctx, HtmlPlan const& hp) {
  auto const& e = hp.evaluation;
  auto const& p = e.prediction;
  json timelines = json::array();
  CLEAVE_TRY(json simulated, timeline_of(json::parse(chrome_trace(ctx.graph, e.program, p)),
                                         "simulated", hp.plan.num_devices));
  timelines.push_back(std::move(simulated));
  if (hp.measured) {
    CLEAVE_TRY(json measured, timeline_of(*hp.measured, "measured", hp.plan.num_devices));
    timelines.push_back(std::move(measured));
  }
  json links = json::array();
  for (auto const& [name, bytes] : p.link_bytes)
    links.push_back({name, bytes});
  return json{{"title", hp.title},
              {"algorithm", hp.plan.provenance.algorithm},
              {"config", hp.plan.provenance.config},
              {"step_time_s", p.step_time_s},
              {"samples_per_s", p.samples_per_s},
              {"fits", p.fits},
              {"comm_bytes", p.comm_bytes},
              {"swap_bytes", p.swap_bytes},
              {"breakdown",
               {{"compute_s", p.breakdown.compute_s},
                {"exposed_comm_s", p.breakdown.exposed_comm_s},
                {"exposed_swap_s", p.breakdown.exposed_swap_s},
                {"idle_s", p.breakdown.idle_s}}},
              {"devices", devices_to_json(e)},
              {"memory", memory_series(ctx.graph, e)},
              {"violations", violations_to_json(e)},
              {"fixes", fixes_json(hp.fixes)},
              {"timelines", std::move(timelines)},
              {"links", std::move(links)},
              {"ops", ops_table(ctx, hp.plan)}};
}

std::string escape_html(std::string const& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '&':
      out += "&amp;";
      break;
    case '"':
      out += "&quot;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

// JSON inside <script type="application/json">: "</" would end the element.
std::string script_safe(std::string text) {
  for (std::size_t at = text.find("</"); at != std::string::npos; at = text.find("</", at + 3))
    text.replace(at, 2, "<\\/");
  return text;
}

}  // namespace

Expected<std::string> html_report(HtmlContext const& ctx, std::vector<HtmlPlan> const& plans) {
  json roles = json::array();
  for (std::size_t r = 0; r < sim::memory_role_count; ++r)
    roles.push_back(sim::memory_role_name(static_cast<sim::MemoryRole>(r)));
  json list = json::array();
  for (auto const& hp : plans) {
    CLEAVE_TRY(json data, plan_data(ctx, hp));
    list.push_back(std::move(data));
  }
  json data{{"model", ctx.model}, {"cluster", ctx.cluster}, {"roles", roles}, {"plans", list}};
  std::string title = "cleave report: " + ctx.model + " on " + ctx.cluster;
  std::string html = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  html += "<title>" + escape_html(title) + "</title>\n<style>\n";
  html += report_style();
  html += "</style>\n</head>\n<body>\n<main id=\"report\"></main>\n";
  html += "<script type=\"application/json\" id=\"cleave-data\">";
  html += script_safe(data.dump(-1, ' ', false, json::error_handler_t::replace));
  html += "</script>\n<script>\n";
  html += report_script();
  html += "</script>\n</body>\n</html>\n";
  return html;
}

}  // namespace cleave::report
