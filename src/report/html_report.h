// `cleave report` and `cleave compare --html` (docs/report.md): one self-contained HTML file
// (data, script and style inline; nothing fetched) that shows per plan a timeline per device
// (simulated, and measured beside it when a run's trace is given), memory over time per device
// stacked by role with its peak marked, for each device over capacity by how much, what is live
// at its peak and what would fix it (memory_fixes.h), the communication per link and the plan
// per op. Several plans are set side by side.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "report/memory_fixes.h"

namespace cleave::report {

struct HtmlPlan {
  std::string title;  // the algorithm, or the plan file
  plan::Plan const& plan;
  sim::Evaluation const& evaluation;
  std::vector<DeviceFixes> fixes;          // memory_fixes of the evaluation
  std::optional<nlohmann::json> measured;  // a Chrome trace of a run of the plan (cleave run)
};

struct HtmlContext {
  std::string model;
  std::string cluster;
  ir::Graph const& graph;  // the training graph every plan is for
  ops::OpRegistry const& registry;
};

// The page; each plan's section holds its charts' data as JSON that the inline script draws.
// Errors: a measured trace that is not a Chrome trace of the plan's devices.
Expected<std::string> html_report(HtmlContext const& ctx, std::vector<HtmlPlan> const& plans);

// The inline script and style (html_assets.cc).
std::string_view report_script();
std::string_view report_style();

}  // namespace cleave::report
