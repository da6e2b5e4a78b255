#include "search/common/memory_repair.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <tuple>

#include "lower/program.h"
#include "sim/predict.h"
#include "support/assert.h"

namespace cleave::search {
namespace {

// Whether unit `u` may go to device `d`: no unit of its exclusive group is there.
bool may_take(std::vector<PlacementUnit> const& units, std::vector<int> const& device,
              std::size_t u, int d) {
  if (units[u].exclusive < 0) return true;
  for (std::size_t o = 0; o < units.size(); ++o)
    if (units[o].exclusive == units[u].exclusive && device[o] == d) return false;
  return true;
}

// The units to move off `from` to cover `excess` bytes, each with its target, given the room left
// on every device; empty when none of its units fits anywhere else. Without a move cost: the most
// bytes per second of compute first, each to the device with the most room.
std::vector<std::pair<std::size_t, int>> by_density(std::vector<PlacementUnit> const& units,
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
      if (may_take(units, device, u, d) &&
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

// ParDNN's greedy 0-1 min-knapsack: the units not moved before, the least added transfer time
// per byte freed first, each to the device with room where it adds the least.
std::vector<std::pair<std::size_t, int>>
by_cost(std::vector<PlacementUnit> const& units, std::vector<int> const& device, int from,
        std::int64_t excess, std::vector<std::int64_t> room, MoveCost const& move_cost,
        std::vector<bool> const& moved_before) {
  int const num_devices = static_cast<int>(room.size());
  auto best_target = [&](std::size_t u) {
    std::pair<double, int> best{0.0, -1};
    for (int d = 0; d < num_devices; ++d) {
      if (d == from || room[static_cast<std::size_t>(d)] < units[u].bytes ||
          !may_take(units, device, u, d))
        continue;
      double cost = move_cost(u, d, device);
      if (best.second < 0 || cost < best.first) best = {cost, d};
    }
    return best;
  };
  struct Candidate {
    double per_byte;
    std::size_t unit;
  };
  std::vector<Candidate> candidates;
  for (std::size_t u = 0; u < units.size(); ++u) {
    if (device[u] != from || units[u].bytes <= 0 || moved_before[u]) continue;
    auto [cost, to] = best_target(u);
    if (to >= 0) candidates.push_back({cost / static_cast<double>(units[u].bytes), u});
  }
  std::sort(candidates.begin(), candidates.end(), [](Candidate const& a, Candidate const& b) {
    return a.per_byte != b.per_byte ? a.per_byte < b.per_byte : a.unit < b.unit;
  });
  std::vector<std::pair<std::size_t, int>> moves;
  std::int64_t moved = 0;
  for (auto const& c : candidates) {
    if (moved >= excess) break;
    int to = best_target(c.unit).second;  // the room may have gone to an earlier move
    if (to < 0) continue;
    room[static_cast<std::size_t>(to)] -= units[c.unit].bytes;
    moved += units[c.unit].bytes;
    moves.emplace_back(c.unit, to);
  }
  return moves;
}

// Every device's peak beside its capacity: how much each is short, or how much room it has.
std::string per_device(cluster::Cluster const& cluster, sim::Prediction const& prediction) {
  std::string out;
  for (std::size_t d = 0; d < cluster.num_devices(); ++d) {
    std::int64_t peak = prediction.peak_memory_bytes[d], cap = prediction.memory_capacity_bytes[d];
    out += (d ? "; " : "") + cluster.devices()[d].name +
           (peak > cap ? " short by " + std::to_string(peak - cap)
                       : " with room for " + std::to_string(cap - peak)) +
           " (peak " + std::to_string(peak) + " of " + std::to_string(cap) + ")";
  }
  return out;
}

struct Simulated {
  plan::Plan plan;
  sim::Prediction prediction;
};

// The plan of a placement, simulated, with the capacities the repair aims at (`usable` of each
// device's) in its prediction.
Expected<Simulated> simulate(SearchContext const& ctx, PlanOfPlacement const& plan_of,
                             std::vector<int> const& device, double usable) {
  CLEAVE_TRY(plan::Plan p, plan_of(device));
  CLEAVE_TRY(auto program, lower::lower(ctx.graph, p, ctx.registry));
  auto prediction = sim::predict(ctx.graph, program, ctx.cost, ctx.batch);
  prediction.fits = true;
  for (std::size_t d = 0; d < prediction.peak_memory_bytes.size(); ++d) {
    auto& cap = prediction.memory_capacity_bytes[d];
    cap = static_cast<std::int64_t>(usable * static_cast<double>(cap));
    prediction.fits = prediction.fits && prediction.peak_memory_bytes[d] <= cap;
  }
  return Simulated{std::move(p), std::move(prediction)};
}

// How far a placement is from fitting: the bytes by which the devices' peaks pass their
// capacities, summed, then the peaks summed (less memory in all leaves more room to move into).
std::pair<std::int64_t, std::int64_t> overflow(sim::Prediction const& prediction) {
  std::pair<std::int64_t, std::int64_t> out{0, 0};
  for (std::size_t d = 0; d < prediction.peak_memory_bytes.size(); ++d) {
    out.first += std::max<std::int64_t>(0, prediction.peak_memory_bytes[d] -
                                               prediction.memory_capacity_bytes[d]);
    out.second += prediction.peak_memory_bytes[d];
  }
  return out;
}

// The room a peak leaves is a bound: what a unit holds need not be live at another device's peak.
// When no unit fits that room, single moves are simulated, those off `from` first, the cheapest
// first (least added transfer per byte, or most bytes per second of compute), then swaps of a
// unit off `from` with a lighter one elsewhere, at most `max_trials` of each (fewer on large
// graphs): the first that brings the placement nearer to fitting (overflow()) is taken; none if
// none does. Each taken trial lowers overflow() strictly, so the repair cannot cycle.
Expected<std::optional<std::vector<int>>>
trial_move(SearchContext const& ctx, std::vector<PlacementUnit> const& units,
           std::vector<int> const& device, PlanOfPlacement const& plan_of,
           MoveCost const& move_cost, double usable, int from,
           std::pair<std::int64_t, std::int64_t> over) {
  // Each trial is a lowering and a simulation: about 130K ops' worth in all, so that a large
  // graph tries a few moves and a small one up to 256.
  int const max_trials = static_cast<int>(std::clamp<std::size_t>(
      (std::size_t{1} << 17) / std::max<std::size_t>(ctx.graph.num_ops(), 1), 4, 256));
  int const num_devices = static_cast<int>(ctx.cluster().num_devices());
  std::vector<std::tuple<bool, double, std::size_t>> candidates;  // (elsewhere, rank, unit)
  for (std::size_t u = 0; u < units.size(); ++u) {
    if (units[u].bytes <= 0) continue;
    double rank = -static_cast<double>(units[u].bytes) / std::max(units[u].seconds, 1e-12);
    if (move_cost) {
      rank = std::numeric_limits<double>::infinity();
      for (int d = 0; d < num_devices; ++d)
        if (d != device[u]) rank = std::min(rank, move_cost(u, d, device));
      rank /= static_cast<double>(units[u].bytes);
    }
    candidates.emplace_back(device[u] != from, rank, u);
  }
  std::sort(candidates.begin(), candidates.end());
  int trials = 0;
  auto nearer = [&](std::vector<int> const& trial) -> Expected<bool> {
    ++trials;
    CLEAVE_TRY(auto simulated, simulate(ctx, plan_of, trial, usable));
    return overflow(simulated.prediction) < over;
  };
  for (auto [elsewhere, rank, u] : candidates)
    for (int d = 0; d < num_devices && trials < max_trials; ++d) {
      if (d == device[u] || !may_take(units, device, u, d)) continue;
      auto trial = device;
      trial[u] = d;
      CLEAVE_TRY(bool better, nearer(trial));
      if (better) return std::optional(std::move(trial));
    }
  trials = 0;
  for (auto [elsewhere, rank, u] : candidates)
    for (std::size_t v = 0; v < units.size() && trials < max_trials && !elsewhere; ++v) {
      if (device[v] == from || units[v].bytes >= units[u].bytes || units[u].exclusive >= 0 ||
          units[v].exclusive >= 0)
        continue;
      auto trial = device;
      std::swap(trial[u], trial[v]);
      CLEAVE_TRY(bool better, nearer(trial));
      if (better) return std::optional(std::move(trial));
    }
  return std::optional<std::vector<int>>();
}

// Small instances are solved exactly: every placement of at most `max_placements` is simulated,
// and the one that fits with the fewest units away from `device` is taken (the first in
// enumeration order among those); none if none fits, or if there are more placements.
Expected<std::optional<std::vector<int>>>
every_placement(SearchContext const& ctx, std::vector<PlacementUnit> const& units,
                std::vector<int> const& device, PlanOfPlacement const& plan_of, double usable) {
  constexpr double max_placements = 4096;
  auto const k = static_cast<int>(ctx.cluster().num_devices());
  if (std::pow(static_cast<double>(k), static_cast<double>(units.size())) > max_placements)
    return std::optional<std::vector<int>>();
  std::optional<std::vector<int>> best;
  std::size_t best_changes = SIZE_MAX;
  std::vector<int> trial(units.size(), 0);
  for (;;) {
    std::size_t changes = 0;
    for (std::size_t u = 0; u < units.size(); ++u)
      changes += trial[u] != device[u];
    bool apart = true;  // units of one exclusive group on distinct devices
    for (std::size_t u = 0; u < units.size() && apart; ++u)
      for (std::size_t v = u + 1; v < units.size() && apart; ++v)
        apart = units[u].exclusive < 0 || units[u].exclusive != units[v].exclusive ||
                trial[u] != trial[v];
    if (apart && changes < best_changes) {
      CLEAVE_TRY(auto simulated, simulate(ctx, plan_of, trial, usable));
      if (simulated.prediction.fits) best = trial, best_changes = changes;
    }
    std::size_t u = 0;
    while (u < units.size() && ++trial[u] == k)
      trial[u++] = 0;
    if (u == units.size()) return best;
  }
}

// Whether every device's bound is within `usable` of its capacity.
bool within(std::vector<std::int64_t> const& bound, cluster::Cluster const& cluster,
            double usable) {
  for (std::size_t d = 0; d < bound.size(); ++d)
    if (static_cast<double>(bound[d]) >
        usable * static_cast<double>(cluster.devices()[d].memory.value()))
      return false;
  return true;
}

}  // namespace

Expected<Repaired> repair_memory(SearchContext const& ctx, std::vector<PlacementUnit> const& units,
                                 std::vector<int> device, PlanOfPlacement const& plan_of,
                                 RepairOptions const& options) {
  CLEAVE_ASSERT(units.size() == device.size(), "one device per unit");
  auto const& cluster = ctx.cluster();
  int const num_devices = static_cast<int>(cluster.num_devices());
  Repaired out;
  std::vector<bool> moved_before(units.size(), false);
  // Each round moves at least one unit; a unit moved back and forth would loop, so the rounds are
  // bounded by what a placement can need.
  std::size_t const max_rounds = 4 * units.size() + 1;
  constexpr int max_stalled = 8;
  int stalled = 0;
  std::pair<std::int64_t, std::int64_t> best_over{INT64_MAX, INT64_MAX};
  for (std::size_t round = 0; round < max_rounds; ++round) {
    if (options.bound && within(options.bound(device), cluster, options.usable)) {
      CLEAVE_TRY(out.plan, plan_of(device));
      out.device = std::move(device);
      return out;
    }
    CLEAVE_TRY(Simulated now, simulate(ctx, plan_of, device, options.usable));
    auto const& prediction = now.prediction;
    if (prediction.fits) {
      out.plan = std::move(now.plan);
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
    std::int64_t excess = -room[static_cast<std::size_t>(worst)];
    auto const& move_cost = options.move_cost;
    // Moves by room that have not brought the placement nearer to fitting for a while stop, so
    // that a placement that cannot fit fails in a few rounds rather than one per unit.
    auto now_over = overflow(prediction);
    stalled = now_over < best_over ? 0 : stalled + 1;
    best_over = std::min(best_over, now_over);
    std::vector<std::pair<std::size_t, int>> moves;
    if (stalled < max_stalled)
      moves = move_cost ? by_cost(units, device, worst, excess, room, move_cost, moved_before)
                        : by_density(units, device, worst, excess, room);
    if (moves.empty()) {
      CLEAVE_TRY(auto trial, trial_move(ctx, units, device, plan_of, move_cost, options.usable,
                                        worst, overflow(prediction)));
      if (trial) {
        device = std::move(*trial);
        ++out.moves;
        continue;
      }
      CLEAVE_TRY(auto exact, every_placement(ctx, units, device, plan_of, options.usable));
      if (exact) {
        for (std::size_t u = 0; u < units.size(); ++u)
          out.moves += (*exact)[u] != device[u];
        device = std::move(*exact);
        continue;
      }
      auto w = static_cast<std::size_t>(worst);
      return Error(ErrorCode::out_of_memory,
                   "the placement does not fit: device " + cluster.devices()[w].name + " needs " +
                       std::to_string(prediction.peak_memory_bytes[w]) + " bytes at its peak, " +
                       "over its " + std::to_string(prediction.memory_capacity_bytes[w]) +
                       ", and no other device has room for what it holds; per device: " +
                       per_device(cluster, prediction));
    }
    for (auto [u, to] : moves) {
      device[u] = to;
      moved_before[u] = true;
    }
    out.moves += static_cast<int>(moves.size());
  }
  return Error(ErrorCode::out_of_memory,
               "the placement does not fit: moving ops off over-capacity devices did not settle "
               "after " +
                   std::to_string(max_rounds) + " rounds");
}

}  // namespace cleave::search
