#include "report/memory_report.h"

#include <algorithm>
#include <fmt/format.h>

#include "support/format_bytes.h"

namespace cleave::report {

namespace {

// The roles live at the peak, largest first: "saved activations 20.10 GiB, weights 2.00 GiB".
std::string roles_text(sim::DeviceMemory const& m) {
  std::vector<std::pair<std::int64_t, std::size_t>> roles;
  for (std::size_t r = 0; r < sim::memory_role_count; ++r)
    if (m.peak_by_role[r] != 0) roles.push_back({m.peak_by_role[r], r});
  std::sort(roles.begin(), roles.end(), [](auto const& a, auto const& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::string out;
  for (auto const& [bytes, r] : roles)
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ",
                       sim::memory_role_name(static_cast<sim::MemoryRole>(r)),
                       format_bytes(Bytes(bytes)));
  return out;
}

// A role as a JSON key: "saved_activations", "swapped_in_data".
std::string role_key(sim::MemoryRole role) {
  std::string key(sim::memory_role_name(role));
  std::replace_if(
      key.begin(), key.end(), [](char c) { return c == ' ' || c == '-'; }, '_');
  return key;
}

nlohmann::json blocks_json(std::vector<sim::LiveBlock> const& blocks) {
  auto out = nlohmann::json::array();
  for (auto const& b : blocks)
    out.push_back({{"tensor", b.tensor},
                   {"region", tdl::box_to_string(b.region)},
                   {"bytes", b.bytes},
                   {"role", role_key(b.role)}});
  return out;
}

}  // namespace

std::string over_capacity_summary(std::string const& label, sim::Evaluation const& evaluation) {
  auto const& v = evaluation.violations;
  if (v.empty()) return "";
  auto worst = std::max_element(
      v.begin(), v.end(), [](auto const& a, auto const& b) { return a.over_bytes < b.over_bytes; });
  return fmt::format("memory: {} overflows {} of {} devices, {} the most ({} over)\n", label,
                     v.size(), evaluation.devices.size(),
                     evaluation.devices[static_cast<std::size_t>(worst->device)].name,
                     format_bytes(Bytes(worst->over_bytes)));
}

std::string violations_to_text(sim::Evaluation const& evaluation) {
  std::string out;
  for (auto const& v : evaluation.violations) {
    auto const& d = evaluation.devices[static_cast<std::size_t>(v.device)];
    auto const& m = d.memory;
    out += fmt::format("\ndevice {} over capacity: peak {} of {}, {} short ({} bytes)\n", d.name,
                       format_bytes(Bytes(m.peak_bytes)), format_bytes(Bytes(m.capacity_bytes)),
                       format_bytes(Bytes(v.over_bytes)), v.over_bytes);
    out += fmt::format("  over from t = {:.6f} s, peak at t = {:.6f} s of a {:.6f} s step\n",
                       v.first_over_s, v.peak_s, evaluation.prediction.step_time_s);
    out += fmt::format("  live at the peak: {}\n", roles_text(m));
    out += "  largest blocks at the peak:\n";
    for (auto const& b : v.largest)
      out += fmt::format("    {:>10}  {} {} ({})\n", format_bytes(Bytes(b.bytes)), b.tensor,
                         tdl::box_to_string(b.region), sim::memory_role_name(b.role));
  }
  return out;
}

std::string pools_to_text(sim::Evaluation const& evaluation) {
  std::string out;
  for (auto const& d : evaluation.devices) {
    if (!d.pool) continue;
    auto const& f = *d.pool;
    out += fmt::format("\npool on {}: {}; at its fullest {} of objects held {} of blocks, {:.1f}% "
                       "internal fragmentation\n",
                       d.name, format_bytes(Bytes(f.pool_bytes)),
                       format_bytes(Bytes(f.peak_object_bytes)),
                       format_bytes(Bytes(f.peak_block_bytes)), 100 * f.wasted());
  }
  return out;
}

nlohmann::json devices_to_json(sim::Evaluation const& evaluation) {
  auto out = nlohmann::json::array();
  for (auto const& d : evaluation.devices) {
    nlohmann::json roles = nlohmann::json::object();
    for (std::size_t r = 0; r < sim::memory_role_count; ++r)
      roles[role_key(static_cast<sim::MemoryRole>(r))] = d.memory.peak_by_role[r];
    out.push_back({{"name", d.name},
                   {"compute_s", d.time.compute_s},
                   {"exposed_comm_s", d.time.exposed_comm_s},
                   {"exposed_swap_s", d.time.exposed_swap_s},
                   {"idle_s", d.time.idle_s},
                   {"peak_memory_bytes", d.memory.peak_bytes},
                   {"memory_capacity_bytes", d.memory.capacity_bytes},
                   {"peak_s", d.memory.peak_s},
                   {"at_peak", std::move(roles)},
                   {"largest_at_peak", blocks_json(d.memory.largest_at_peak)}});
  }
  return out;
}

nlohmann::json violations_to_json(sim::Evaluation const& evaluation) {
  auto out = nlohmann::json::array();
  for (auto const& v : evaluation.violations)
    out.push_back({{"device", v.device},
                   {"device_name", evaluation.devices[static_cast<std::size_t>(v.device)].name},
                   {"over_bytes", v.over_bytes},
                   {"first_over_s", v.first_over_s},
                   {"peak_s", v.peak_s},
                   {"largest", blocks_json(v.largest)}});
  return out;
}

}  // namespace cleave::report
