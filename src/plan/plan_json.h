// The versioned JSON form of a plan, "cleave.plan/2" (docs/formats.md). Plans are written in
// version 2; version 1 files (no swaps, no per-tensor fetch policies) still load.
#pragma once

#include <string>
#include <string_view>

#include "plan/plan.h"

namespace cleave::plan {

inline constexpr std::string_view plan_format = "cleave.plan/2";
inline constexpr std::string_view plan_format_v1 = "cleave.plan/1";

std::string plan_to_json(Plan const& plan);
// Syntax and structure only; validate() checks the plan against a graph.
Expected<Plan> plan_from_json(std::string_view text);

Status save_plan(Plan const& plan, std::string const& path);  // atomic
Expected<Plan> load_plan(std::string const& path);

}  // namespace cleave::plan
