#include "search/common/memory_repair.h"

#include <algorithm>
#include <string>

#include "lower/program.h"
#include "sim/predict.h"
#include "support/assert.h"

namespace cleave::search {
namespace {

// The units to move off `from` to cover `excess` bytes, each with its target, given the room left
// on every device; empty when none of its units fits anywhere else.
std::vector<std::pair<std::size_t, int>> moves_off(std::vector<PlacementUnit> const& units,
                                                   std::vector<int> const& device, int from,
                                                   std::int64_t excess,
                                                   std::vector<std::int64_t> room) {
  std::vector<std::size_t> on;
  for (std::size_t u = 0; u < units.size(); ++u)
    if (device[u] == from && units[u].bytes > 0) on.push_back(u);
  auto density = [&](std::size_t u) {
    return static_cast<double>(units[u].bytes) / std::max(units[u].seconds, 1e-12);
  };
  std::stable_sort(on.begin(), on.end(),
                   [&](std::size_t a, std::size_t b) { return density(a) > density(b); });
  std::vector<std::pair<std::size_t, int>> moves;
  std::int64_t moved = 0;
  for (std::size_t u : on) {
    if (moved >= excess) break;
    int best = -1;
    for (int d = 0; d < static_cast<int>(room.size()); ++d) {
      if (d == from || room[static_cast<std::size_t>(d)] < units[u].bytes) continue;
      bool taken = false;
      for (std::size_t o = 0; o < units.size() && units[u].exclusive >= 0; ++o)
        taken = taken || (units[o].exclusive == units[u].exclusive && device[o] == d);
      if (!taken &&
          (best < 0 || room[static_cast<std::size_t>(d)] > room[static_cast<std::size_t>(best)]))
        best = d;
    }
    if (best < 0) continue;
    room[static_cast<std::size_t>(best)] -= units[u].bytes;
    moved += units[u].bytes;
    moves.emplace_back(u, best);
  }
  return moves;
}

}  // namespace

Expected<Repaired> repair_memory(SearchContext const& ctx, std::vector<PlacementUnit> const& units,
                                 std::vector<int> device, PlanOfPlacement const& plan_of) {
  CLEAVE_ASSERT(units.size() == device.size(), "one device per unit");
  auto const& cluster = ctx.cluster();
  int const num_devices = static_cast<int>(cluster.num_devices());
  Repaired out;
  // Each round moves at least one unit; a unit moved back and forth would loop, so the rounds are
  // bounded by what a placement can need.
  std::size_t const max_rounds = 4 * units.size() + 1;
  for (std::size_t round = 0; round < max_rounds; ++round) {
    CLEAVE_TRY(plan::Plan p, plan_of(device));
    CLEAVE_TRY(auto program, lower::lower(ctx.graph, p, ctx.registry));
    auto prediction = sim::predict(ctx.graph, program, ctx.cost, ctx.batch);
    if (prediction.fits) {
      out.plan = std::move(p);
      out.device = std::move(device);
      return out;
    }
    std::vector<std::int64_t> room(static_cast<std::size_t>(num_devices));
    int worst = 0;
    for (int d = 0; d < num_devices; ++d) {
      auto i = static_cast<std::size_t>(d);
      room[i] = prediction.memory_capacity_bytes[i] - prediction.peak_memory_bytes[i];
      if (room[i] < room[static_cast<std::size_t>(worst)]) worst = d;
    }
    auto moves = moves_off(units, device, worst, -room[static_cast<std::size_t>(worst)], room);
    if (moves.empty()) {
      auto w = static_cast<std::size_t>(worst);
      return Error(ErrorCode::out_of_memory,
                   "the placement does not fit: device " + cluster.devices()[w].name + " needs " +
                       std::to_string(prediction.peak_memory_bytes[w]) + " bytes at its peak, " +
                       "over its " + std::to_string(prediction.memory_capacity_bytes[w]) +
                       ", and no other device has room for what it holds");
    }
    for (auto [u, to] : moves)
      device[u] = to;
    out.moves += static_cast<int>(moves.size());
  }
  return Error(ErrorCode::out_of_memory,
               "the placement does not fit: moving ops off over-capacity devices did not settle "
               "after " +
                   std::to_string(max_rounds) + " rounds");
}

}  // namespace cleave::search
