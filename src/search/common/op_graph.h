// The op graph the placement searches work on (mincut partitions it, docs/search_mincut.md;
// ParDNN slices and maps it, docs/search_pardnn.md): a vertex per placement unit
// (search/common/memory_repair.h), weighted by its compute time and by the memory it holds (the
// outputs it writes, the weights and optimizer state it keeps), and an edge per pair of units that
// exchange tensors, weighted by the bytes they exchange. An op is one unit, except that a weight's
// update op and the updates of its optimizer state are one unit (they must share a device: the
// weight and its state live where their updates run, lower/lowering.h), and that an op split
// along its batch (mincut-split) is one unit per piece, its pieces never on one device.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "search/common/memory_repair.h"
#include "search/common/search_context.h"

namespace cleave::search {

// An op cut along its batch dimension before placing (mincut-split).
struct Split {
  ir::OpId op;
  std::size_t dim = 0;  // the iteration dimension
  int ways = 1;
};

// What one piece costs and reads.
struct PieceFacts {
  std::vector<double> seconds;            // per device, from the cost model
  std::vector<std::int64_t> input_bytes;  // per input of the op: the region it reads
  std::int64_t output_bytes = 0;          // the region it writes
};

struct OpGraph {
  std::vector<plan::OpConfig> configs;          // per op: its degrees (devices filled by placement)
  std::vector<std::vector<PieceFacts>> pieces;  // [op][piece]
  std::vector<std::vector<std::size_t>> unit_of;           // [op][piece]: its unit
  std::vector<PlacementUnit> units;                        // seconds on device 0
  std::vector<std::map<std::size_t, std::int64_t>> edges;  // per unit: neighbour -> bytes
  // The op that owns a source tensor (a weight or optimizer state): its update; invalid if none.
  std::vector<ir::OpId> update_of;
  // Per unit, the bytes it reads of tensors that no op writes or keeps (data, labels, weights
  // without an update): each device holds a copy of those its units read.
  std::vector<std::int64_t> source_reads;
  std::string fingerprint;  // the graph's, for the plans made of it
};

Expected<OpGraph> build_op_graph(SearchContext const& ctx, std::vector<Split> const& splits);

// A unit that holds more than the largest device's memory cannot be placed anywhere: an error
// naming its op.
Status units_fit_some_device(SearchContext const& ctx, OpGraph const& graph);

// The bytes that cross devices in a placement (a device per unit; each edge once).
std::int64_t cut_bytes(OpGraph const& graph, std::vector<int> const& device);

// Per device, more than its peak can be under any order (lower/lifetime.h's rule): everything its
// units write, keep and read from sources, and every byte they exchange with units elsewhere, as if
// all were live at once. Where it is under a device's capacity, no simulation is needed to know
// that the placement fits there.
std::vector<std::int64_t> memory_bound(OpGraph const& graph, std::vector<int> const& device,
                                       std::size_t num_devices);

// Per device, its speed relative to device 0: every piece's time on device 0 over that on it.
std::vector<double> device_speeds(SearchContext const& ctx, OpGraph const& graph);

// mincut-split's cuts: every op slower (on device 0) than a balanced part of the whole, with a
// batch dimension (of the context's batch extent: its output's first dimension, or else a
// reduction over the batch), cut into as many pieces as make each lighter than a part, at most
// one per device.
Expected<std::vector<Split>> heavy_splits(SearchContext const& ctx, OpGraph const& whole,
                                          std::vector<double> const& speeds);

}  // namespace cleave::search
