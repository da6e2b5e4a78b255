// Each device's pieces in the order a list schedule runs them (plan.h's per-device orders, which
// the simulator and the runtime follow): pieces are taken, whenever their inputs are done, by
// bottom level, the longest path (compute on the pieces' devices, transfers between devices)
// from the piece to the end of the step: the critical path first.
//
// Memory-aware, given a cap per device: the schedule also emulates each device's memory by
// cleave's rule (lower/lifetime.h: what the device holds before the step, each piece's output
// from its start until its last reader ends, one fetched copy per device of what it reads from
// elsewhere until its last reader there ends). Where that order takes a device past its cap, the
// schedule runs again with that device memory-aware, as memory-aware list schedulers are: of its
// ready pieces it runs one that frees memory first (the one that frees the most), and at its cap
// the one that leaves it holding the least; otherwise by bottom level. The second order is kept
// if it overflows less. A device with room keeps the plain order, the critical path first. The
// plain order defers what only feeds a weight's update (its bottom level is the update's alone):
// the sums of a shared weight's per-step gradients wait for the whole backward pass, holding every
// step's gradient (ParDNN's E3D on one device: 48 GiB, against 14.6 GiB memory-aware and 16.4
// GiB for the graph's own order, `single`). O((V + E) log V) either way.
#pragma once

#include <cstdint>
#include <vector>

#include "search/common/op_graph.h"

namespace cleave::search {

// Per device, `usable` of its memory: the caps of a memory-aware schedule.
std::vector<std::int64_t> usable_memory(cluster::Cluster const& cluster, double usable);

// `caps`: per device, the memory the order should keep it under; empty: the plain order.
std::vector<std::vector<plan::PieceRef>> list_schedule(SearchContext const& ctx,
                                                       OpGraph const& graph,
                                                       std::vector<int> const& device_of_unit,
                                                       std::vector<std::int64_t> const& caps = {});

// The plan of a placement of the graph's units: every piece on its unit's device (fetched copies
// shared), the per-device orders by list_schedule (memory-aware under `caps`), num_devices set.
plan::Plan placement_plan(SearchContext const& ctx, OpGraph const& graph,
                          std::vector<int> const& device_of_unit,
                          std::vector<std::int64_t> const& caps = {});

}  // namespace cleave::search
