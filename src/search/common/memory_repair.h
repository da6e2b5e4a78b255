// Repairing a placement that does not fit: the memory step shared by the placement searches
// (mincut, ParDNN). A placement puts units (pieces of ops that move together) on devices; the
// plan made of it is lowered and simulated, and while some device's peak passes its capacity,
// units leave the most over-capacity device, the most memory per second of compute first (they
// cost the least time where they land), each to the device with the most room left, until what
// they hold covers the excess; then the plan is simulated again.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "search/common/search_context.h"

namespace cleave::search {

struct PlacementUnit {
  std::vector<plan::PieceRef> pieces;  // for error messages: its first piece's op is named
  std::int64_t bytes = 0;              // what it holds: its outputs, the weights and state it keeps
  double seconds = 0;                  // its compute time
  int exclusive = -1;  // units of one group (>= 0) never share a device (pieces of a split op)
};

// The plan of a placement (a device per unit), with its per-device orders; num_devices set.
using PlanOfPlacement = std::function<Expected<plan::Plan>(std::vector<int> const& device)>;

struct Repaired {
  plan::Plan plan;
  std::vector<int> device;  // per unit
  int moves = 0;            // units moved
};

// Moves units until the simulated plan fits every device, or an error naming the device that
// cannot be brought under its capacity and what it needs.
Expected<Repaired> repair_memory(SearchContext const& ctx, std::vector<PlacementUnit> const& units,
                                 std::vector<int> device, PlanOfPlacement const& plan_of);

}  // namespace cleave::search
