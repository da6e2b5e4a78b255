#include "plan/plan_json.h"

#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "support/file_io.h"
#include "support/json_read.h"

namespace cleave::plan {

using nlohmann::json;

namespace {

// Options, budget and budget_exhausted came with the search contract (issue 14), course with
// flexflow (issue 15); plans that predate them load with none, unlimited, false and no course.
// `interrupted` is written only when true (an interrupted search is the exception).
json provenance_to_json(Provenance const& prov) {
  json options = json::object();
  for (auto const& [key, value] : prov.options)
    options[key] = value;
  json budget = json::object();
  if (prov.budget_time_s) budget["time_s"] = *prov.budget_time_s;
  if (prov.budget_iterations) budget["iterations"] = *prov.budget_iterations;
  json out = {{"algorithm", prov.algorithm},        {"config", prov.config},
              {"options", std::move(options)},      {"seed", prov.seed},
              {"budget", std::move(budget)},        {"budget_exhausted", prov.budget_exhausted},
              {"search_time_s", prov.search_time_s}};
  if (prov.interrupted) out["interrupted"] = true;
  if (prov.course) {
    json best = json::array();
    for (auto const& [elapsed, step] : prov.course->best)
      best.push_back({elapsed, step});
    out["course"] = {{"iterations", prov.course->iterations},
                     {"accepted", prov.course->accepted},
                     {"best", std::move(best)}};
  }
  return out;
}

// A number that is not an integer of the type a field needs (plan_from_json turns it into an
// Error, as it does json::exception).
struct BadInteger : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Every integer of a plan is read through this: nlohmann's get<int>() of 1e300 is undefined
// behaviour, and of -1 as an unsigned id a huge id; either must stop the reader.
template <class T> T integer(json const& j) {
  bool fits = false;
  if (j.is_number_unsigned())
    fits = std::cmp_less_equal(j.get<std::uint64_t>(), std::numeric_limits<T>::max());
  else if (j.is_number_integer())
    fits = std::in_range<T>(j.get<std::int64_t>());
  if (!fits)
    throw BadInteger("expected an integer in [" + std::to_string(std::numeric_limits<T>::min()) +
                     ", " + std::to_string(std::numeric_limits<T>::max()) + "], found " + j.dump());
  return j.is_number_unsigned() ? static_cast<T>(j.get<std::uint64_t>())
                                : static_cast<T>(j.get<std::int64_t>());
}

template <class T> std::vector<T> integers(json const& j) {
  if (!j.is_array()) throw BadInteger("expected an array of integers, found " + j.dump());
  std::vector<T> out;
  for (auto const& v : j)
    out.push_back(integer<T>(v));
  return out;
}

// Throws json::exception or BadInteger on a malformed object (plan_from_json turns them into an
// Error).
Provenance provenance_from_json(json const& prov) {
  Provenance out;
  out.algorithm = prov.at("algorithm").get<std::string>();
  out.config = prov.at("config").get<std::string>();
  out.seed = integer<std::uint64_t>(prov.at("seed"));
  out.search_time_s = prov.at("search_time_s").get<double>();
  // A JSON object's keys come back sorted (nlohmann), not in the algorithm's declared order.
  if (prov.contains("options"))
    for (auto const& [key, value] : prov.at("options").items())
      out.options.emplace_back(key, value.get<std::string>());
  if (prov.contains("budget")) {
    auto const& budget = prov.at("budget");
    if (budget.contains("time_s")) out.budget_time_s = budget.at("time_s").get<double>();
    if (budget.contains("iterations"))
      out.budget_iterations = integer<std::int64_t>(budget.at("iterations"));
  }
  if (prov.contains("budget_exhausted"))
    out.budget_exhausted = prov.at("budget_exhausted").get<bool>();
  if (prov.contains("interrupted")) out.interrupted = prov.at("interrupted").get<bool>();
  if (prov.contains("course")) {
    auto const& course = prov.at("course");
    SearchCourse c;
    c.iterations = integer<std::int64_t>(course.at("iterations"));
    c.accepted = integer<std::int64_t>(course.at("accepted"));
    for (auto const& point : course.at("best"))
      c.best.emplace_back(point.at(0).get<double>(), point.at(1).get<double>());
    out.course = std::move(c);
  }
  return out;
}

char const* fetch_name(FetchPolicy f) {
  return f == FetchPolicy::per_pass ? "per-pass" : "shared";
}

Expected<FetchPolicy> fetch_from(json const& j, std::string const& where) {
  auto fetch = j.get<std::string>();
  if (fetch != "shared" && fetch != "per-pass")
    return Error(ErrorCode::parse_error, "malformed plan: " + where + " is \"" + fetch +
                                             "\"; it must be \"shared\" or \"per-pass\"");
  return fetch == "per-pass" ? FetchPolicy::per_pass : FetchPolicy::shared;
}

json piece_json(PieceRef r) {
  return json::array({r.op, r.piece});
}

PieceRef piece_from(json const& j) {
  return {integer<std::uint32_t>(j.at(0)), integer<std::uint32_t>(j.at(1))};
}

json box_json(tdl::Box const& b) {
  auto out = json::array();
  for (auto const& i : b)
    out.push_back({i.lo, i.hi});
  return out;
}

tdl::Box box_from(json const& j) {
  tdl::Box b;
  for (auto const& i : j)
    b.push_back({integer<std::int64_t>(i.at(0)), integer<std::int64_t>(i.at(1))});
  return b;
}

}  // namespace

std::string plan_to_json(Plan const& plan) {
  json j;
  j["format"] = plan_format;
  j["graph"] = plan.graph_fingerprint;
  j["cluster"] = plan.cluster;
  j["cluster_fingerprint"] = plan.cluster_fingerprint;
  j["model"] = plan.model;
  j["devices"] = plan.num_devices;
  j["fetch"] = fetch_name(plan.fetch);
  auto tensor_fetch = json::array();
  for (auto const& f : plan.tensor_fetch)
    tensor_fetch.push_back({f.tensor.value(), fetch_name(f.policy)});
  j["tensor_fetch"] = std::move(tensor_fetch);
  j["provenance"] = provenance_to_json(plan.provenance);
  if (!plan.pools.empty()) {
    auto pools = json::array();
    for (auto const& pool : plan.pools) {
      auto classes = json::array();
      for (auto const& c : pool.classes)
        classes.push_back({c.object_bytes, c.objects});
      pools.push_back(std::move(classes));
    }
    j["pools"] = std::move(pools);
  }
  auto ops = json::array();
  for (auto const& c : plan.ops)
    ops.push_back({{"degrees", c.degrees}, {"devices", c.devices}});
  j["ops"] = std::move(ops);
  auto order = json::array();
  for (auto const& dev : plan.order) {
    auto list = json::array();
    for (auto const& r : dev)
      list.push_back(piece_json(r));
    order.push_back(std::move(list));
  }
  j["order"] = std::move(order);
  auto swaps = json::array();
  for (auto const& s : plan.swaps) {
    json swap = {{"tensor", s.tensor.value()},
                 {"region", box_json(s.region)},
                 {"device", s.device},
                 {"out_after", piece_json(s.out_after)},
                 {"in_before", piece_json(s.in_before)}};
    if (s.in_after) swap["in_after"] = piece_json(*s.in_after);
    if (s.out_before) swap["out_before"] = piece_json(*s.out_before);
    swaps.push_back(std::move(swap));
  }
  j["swaps"] = std::move(swaps);
  return j.dump() + "\n";
}

Expected<Plan> plan_from_json(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded())
    return Error(ErrorCode::parse_error, "a plan file is not valid JSON (it may be truncated)");
  if (!j.is_object() || !j.contains("format") ||
      (j["format"] != plan_format && j["format"] != plan_format_v1))
    return Error(ErrorCode::parse_error, std::string("not a plan: expected \"format\": \"") +
                                             std::string(plan_format) + "\" (or \"" +
                                             std::string(plan_format_v1) + "\")");
  // Structure errors come out of nlohmann as exceptions; they end here, at the boundary.
  try {
    Plan p;
    p.graph_fingerprint = j.at("graph").get<std::string>();
    p.cluster = j.at("cluster").get<std::string>();
    if (j.contains("cluster_fingerprint"))
      p.cluster_fingerprint = j.at("cluster_fingerprint").get<std::string>();
    p.model = j.at("model").get<std::string>();
    p.num_devices = integer<int>(j.at("devices"));
    if (j.contains("fetch")) {  // absent in plans that predate it: shared
      CLEAVE_TRY(p.fetch, fetch_from(j.at("fetch"), "\"fetch\""));
    }
    p.provenance = provenance_from_json(j.at("provenance"));
    // Absent in version 1.
    if (j.contains("tensor_fetch"))
      for (auto const& f : j.at("tensor_fetch")) {
        CLEAVE_TRY(auto policy, fetch_from(f.at(1), "a \"tensor_fetch\" policy"));
        p.tensor_fetch.push_back({ir::TensorId(integer<std::uint32_t>(f.at(0))), policy});
      }
    if (j.contains("pools"))
      for (auto const& pool : j.at("pools")) {
        memory::Pool parsed;
        for (auto const& c : pool)
          parsed.classes.push_back(
              {integer<std::int64_t>(c.at(0)), integer<std::int64_t>(c.at(1))});
        p.pools.push_back(std::move(parsed));
      }
    if (j.contains("swaps"))
      for (auto const& s : j.at("swaps")) {
        Swap swap{ir::TensorId(integer<std::uint32_t>(s.at("tensor"))),
                  box_from(s.at("region")),
                  integer<int>(s.at("device")),
                  piece_from(s.at("out_after")),
                  piece_from(s.at("in_before")),
                  std::nullopt,
                  std::nullopt};
        if (s.contains("in_after")) swap.in_after = piece_from(s.at("in_after"));
        if (s.contains("out_before")) swap.out_before = piece_from(s.at("out_before"));
        p.swaps.push_back(std::move(swap));
      }
    for (auto const& c : j.at("ops"))
      p.ops.push_back({integers<std::int64_t>(c.at("degrees")), integers<int>(c.at("devices"))});
    for (auto const& dev : j.at("order")) {
      std::vector<PieceRef> list;
      for (auto const& r : dev)
        list.push_back(piece_from(r));
      p.order.push_back(std::move(list));
    }
    return p;
  } catch (json::exception const& e) {
    return Error(ErrorCode::parse_error, "malformed plan: " + json_read::exception_message(e));
  } catch (BadInteger const& e) {
    return Error(ErrorCode::parse_error, std::string("malformed plan: ") + e.what());
  }
}

Status save_plan(Plan const& plan, std::string const& path) {
  return write_file_atomic(path, plan_to_json(plan));
}

Expected<Plan> load_plan(std::string const& path) {
  CLEAVE_TRY(std::string text, read_file(path));
  auto p = plan_from_json(text);
  if (!p) return std::move(p).error().with_context("in plan file '" + path + "'");
  return p;
}

}  // namespace cleave::plan
