// FlexFlow's configurations of one op (PAPERS.md §2, issue 15): a degree per splittable parallel
// dimension of its TDL iteration space (Sample: the batch; Parameter: dimensions that index a
// weight or optimizer state, e.g. output channels or heads; Attribute: the others, e.g. spatial or
// sequence), optionally per reduction dimension too (what FlexFlow lacks: the partial results are
// then reduced), and a device per piece, the pieces on distinct devices.
//
// The piece count respects the hierarchy: it is `within` x `across`, with `within` a divisor of
// the devices per node and `across` a divisor of the nodes; the pieces sit on an aligned block of
// `across` nodes and, in each, on an aligned block of `within` devices (the same in every node),
// consecutive pieces in one node. Ops on disjoint blocks run at once (Operation parallelism).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "search/common/search_context.h"

namespace cleave::search::flexflow {

enum class DimRole : std::uint8_t { sample, attribute, parameter, reduction };
char const* role_name(DimRole role);  // "sample", "attribute", "parameter", "reduction"

// A splittable dimension of an op's iteration space that configurations may split.
struct SplitDim {
  std::size_t dim = 0;  // in BoundOp::dims()
  std::string name;     // the TDL name, e.g. "co"
  std::int64_t extent = 0;
  DimRole role = DimRole::attribute;
};

// How many pieces a configuration has, and where they sit.
struct Block {
  int within = 1;  // devices per node used (divides the devices per node)
  int across = 1;  // nodes used (divides the nodes)
};

class ConfigSpace {
 public:
  // The space of every op of ctx.graph on ctx.cluster(); with `reductions`, reduction dimensions
  // may be split too. Nodes with more devices than the smallest node use only that many.
  static Expected<ConfigSpace> create(SearchContext const& ctx, bool reductions);

  std::size_t num_ops() const { return ops_.size(); }
  std::vector<SplitDim> const& dims(ir::OpId op) const { return ops_[op.value()].dims; }
  // The dimensions of the op (BoundOp::dims()), split or not.
  std::size_t rank(ir::OpId op) const { return ops_[op.value()].rank; }
  std::vector<Block> const& blocks() const { return blocks_; }

  // A configuration drawn uniformly at random: a block, then a split of its piece count over the
  // op's dimensions (each degree at most its extent), then the block's position.
  plan::OpConfig random(ir::OpId op, Rng& rng) const;
  // Every configuration of the op (for exhaustive searches over small graphs).
  std::vector<plan::OpConfig> all(ir::OpId op) const;

  // The devices of `pieces` pieces of a block at node block `node_at` and device block `device_at`.
  std::vector<int> devices(Block block, int node_at, int device_at) const;
  // The role of the dimension of `op` at `dim`, if configurations may split it.
  std::optional<DimRole> role(ir::OpId op, std::size_t dim) const;

 private:
  struct OpSpace {
    std::size_t rank = 0;
    std::vector<SplitDim> dims;
  };
  // Every split of `pieces` over the op's dimensions (degree vectors of rank()).
  void splits(OpSpace const& op, std::int64_t pieces,
              std::vector<std::vector<std::int64_t>>& out) const;

  std::vector<OpSpace> ops_;
  std::vector<Block> blocks_;                   // every (within, across) pair
  std::vector<std::vector<int>> node_devices_;  // per node, its first `per_node_` devices
  int per_node_ = 1;
};

}  // namespace cleave::search::flexflow
