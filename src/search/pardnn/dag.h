// The directed graph ParDNN's steps walk (docs/search_pardnn.md): the placement units of the op
// graph (search/common/op_graph.h: an op, or a weight's update with its optimizer state's) with
// precedence edges from the unit that writes a tensor to each unit that reads it, weighted by the
// bytes read, in compressed rows; each link's alpha-beta cost from the cost model; and the levels
// of every unit (the longest path of compute and transfers before it and from it to the end).
#pragma once

#include <cstdint>
#include <vector>

#include "search/common/op_graph.h"

namespace cleave::search::pardnn {

// The time of a transfer between two devices, by the cost model's alpha-beta over the route
// between them (cost::CostModel::transfer, read once per ordered pair), and the mean over all
// pairs, which prices an edge before its ends are placed.
class Links {
 public:
  explicit Links(cost::CostModel const& cost);
  double seconds(std::int64_t bytes, int from, int to) const {
    if (from == to) return 0;
    auto i = static_cast<std::size_t>(from * devices_ + to);
    return latency_[i] + static_cast<double>(bytes) * per_byte_[i];
  }
  // The time of `messages` transfers of `bytes` in all between two devices.
  double seconds(std::int64_t bytes, std::int64_t messages, int from, int to) const {
    if (from == to) return 0;
    auto i = static_cast<std::size_t>(from * devices_ + to);
    return static_cast<double>(messages) * latency_[i] + static_cast<double>(bytes) * per_byte_[i];
  }
  double mean_seconds(std::int64_t bytes) const {
    return mean_latency_ + static_cast<double>(bytes) * mean_per_byte_;
  }
  int devices() const { return devices_; }

 private:
  int devices_ = 0;
  std::vector<double> latency_, per_byte_;  // [from * devices + to]
  double mean_latency_ = 0, mean_per_byte_ = 0;
};

struct Arc {
  std::uint32_t to = 0;
  std::int64_t bytes = 0;
};

struct UnitDag {
  std::vector<double> seconds;  // per unit, its compute on device 0
  // Per unit, the most it can hold at once: what it writes, the weights and state it keeps, the
  // sources it reads (op_graph.h).
  std::vector<std::int64_t> holds;
  std::vector<std::size_t> succ_begin;  // [unit, unit + 1) of succs
  std::vector<Arc> succs;               // precedence: the reader and the bytes it reads
  std::vector<std::size_t> pred_begin;  // [unit, unit + 1) of preds
  std::vector<Arc> preds;               // the writer and the bytes read
  std::vector<std::uint32_t> topo;      // units in a topological order
  std::size_t size() const { return seconds.size(); }
};

UnitDag build_unit_dag(SearchContext const& ctx, OpGraph const& graph);

// Top level (the longest path of compute and transfers that ends where the unit starts) and bottom
// level (its compute and the longest path after it), transfers priced by the mean link, none
// between units of one cluster (`cluster`: a cluster id per unit, -1 for none). With `unclustered`
// (the units in no cluster, in a topological order), the levels of those units in the graph that
// is left once the clustered units are removed (linear clustering's); the others' stay 0.
struct Levels {
  std::vector<double> top, bottom;
  double weight(std::size_t u) const { return top[u] + bottom[u]; }
};
Levels levels(UnitDag const& dag, Links const& links, std::vector<int> const& cluster,
              std::vector<std::uint32_t> const* unclustered = nullptr);

}  // namespace cleave::search::pardnn
