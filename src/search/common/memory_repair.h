// Repairing a placement that does not fit: the memory step shared by the placement searches
// (mincut, ParDNN). A placement puts units (pieces of ops that move together) on devices; the
// plan made of it is lowered and simulated, and while some device's peak passes its capacity,
// units leave the most over-capacity device, the most memory per second of compute first (they
// cost the least time where they land), each to the device with the most room left, until what
// they hold covers the excess; then the plan is simulated again. A search that prices moves by
// the communication they add (ParDNN's memory step, docs/search_pardnn.md) passes a MoveCost:
// then the units that free the most memory per second of added transfers leave first, each to the
// device where it adds the least, and each unit moves at most once. The room a device's peak
// leaves is a bound (what a unit holds need not be live at that peak): when no unit fits it, or
// after 8 rounds of such moves that brought the placement no nearer to fitting, single
// moves (off the most over-capacity device first, cheapest first), then swaps with lighter units
// elsewhere, are simulated, and the first that lowers the total overflow (or, as much over, the
// summed peaks) is taken. Where that fails on a small instance (at most 4096 placements), every
// placement is simulated and the fitting one nearest the search's is taken, so on small graphs a
// plan fits wherever some placement (with its list schedule) fits.
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

// The seconds of transfers that moving unit `unit` to device `to` adds, every other unit staying
// where `device` says.
using MoveCost = std::function<double(std::size_t unit, int to, std::vector<int> const& device)>;

struct RepairOptions {
  MoveCost move_cost;  // none: the most bytes per second of compute first (see above)
  // The fraction of each device's capacity the plan may use: ParDNN holds some back, since the
  // runtime's interleaving can keep a block longer than the simulated order does.
  double usable = 1.0;
  // Per device, a bound on its peak under a placement (op_graph.h's memory_bound): where every
  // device's is within what it may use, the plan fits without being simulated.
  std::function<std::vector<std::int64_t>(std::vector<int> const& device)> bound;
};

// Moves units until the simulated plan fits every device, or an error naming the device that
// cannot be brought under its capacity, with every device's peak beside its capacity.
Expected<Repaired> repair_memory(SearchContext const& ctx, std::vector<PlacementUnit> const& units,
                                 std::vector<int> device, PlanOfPlacement const& plan_of,
                                 RepairOptions const& options = {});

}  // namespace cleave::search
