// Tofu's conversion cost (PAPERS.md §1), counted in bytes by region intersection exactly as the
// lowering moves data (src/lower/lowering.cc): a tensor lives where its producer's pieces wrote it
// (partial outputs: where the reduce-scatter left each part; weights and optimizer state: where
// their update writes the next value); every piece of a consumer fetches the intersection of its
// read region with each block held by another device, and identical fetches (same tensor, source,
// destination and region) count once, or once per pass under FetchPolicy::per_pass: backward and
// optimizer ops then fetch again what forward ops fetched of a forward or source tensor (the
// lowering's late parts). Inputs are delivered where they are read and cost nothing.
// Partial outputs add their reduce-scatter bytes. So evaluate() of a plan's configurations is
// the lowered program's total transfer bytes.
//
// The DP's request puts one factor on each tensor, over the nodes of its holder and of all its
// readers, so that shared fetches are deduplicated as the lowering does; a tensor read by so many
// nodes that its table would pass `max_factor_entries` gets one factor per reader instead, which
// can only over-count (fetches two readers share are then paid twice): a documented
// approximation, reported in RequestStats.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ops/op_registry.h"
#include "plan/plan.h"
#include "search/tofu/fetch_count.h"
#include "search/tofu/solver.h"

namespace cleave::search::tofu {

// What an op's configuration means for communication: where its output lives and what its
// partial outputs cost to reduce.
struct OpLayout {
  std::vector<Block> blocks;
  std::int64_t reduce_bytes = 0;
};

// Per op, the configurations one DP node chooses among: candidates[op][strategy]. Ops that share
// a node (tied by coarsening) have the same number of candidates.
struct Candidates {
  std::vector<int> node_of_op;
  std::vector<std::vector<plan::OpConfig>> configs;
};

struct RequestStats {
  int tensor_factors = 0;    // one factor over a tensor's holder and all its readers
  int split_factors = 0;     // tensors whose readers got a factor each (may over-count)
  std::int64_t entries = 0;  // table entries computed
};

class CommModel {
 public:
  // Fetches counted as the lowering emits them under `fetch` (plan.h): with per_pass, backward
  // and optimizer readers of a forward or source tensor do not share the forward pass's fetches.
  static Expected<CommModel> create(ir::Graph const& graph, ops::OpRegistry const& registry,
                                    plan::FetchPolicy fetch);
  plan::FetchPolicy fetch() const { return fetch_; }

  ir::Graph const& graph() const { return *graph_; }
  tdl::BoundOp const& bound(ir::OpId op) const { return *bound_[op.value()]; }
  // The op whose output blocks say where tensor t lives (its producer, or a weight's update);
  // none for inputs, which are delivered where they are read.
  std::optional<ir::OpId> holder(ir::TensorId t) const { return holder_[t.value()]; }

  // The pieces of an op under `config`, in piece order (cached by op signature and degrees).
  std::vector<tdl::PieceInfo> const& pieces(ir::OpId op, plan::OpConfig const& config) const;
  OpLayout layout(ir::OpId op, plan::OpConfig const& config) const;
  // Bytes fetched for tensor t, given its holder's configuration (ignored for inputs) and the
  // configurations of the readers listed (deduplicated as the lowering does).
  std::int64_t
  tensor_bytes(ir::TensorId t, plan::OpConfig const* holder_config,
               std::vector<std::pair<ir::OpId, plan::OpConfig const*>> const& readers) const;
  // The lowered program's total transfer bytes for one configuration per op.
  std::int64_t evaluate(std::vector<plan::OpConfig> const& configs) const;

  // Past this many (read, block) pairs a tensor's table is counted by BlockIndex instead of
  // listing its fetches (comm_model.cc): listing costs the pairs once and then little per entry,
  // counting costs every entry its reads. The tables are the same either way.
  static constexpr std::int64_t kMaxListedPairs = std::int64_t{1} << 18;
  // The DP request over the nodes of `candidates`.
  Request request(Candidates const& candidates, std::int64_t max_factor_entries,
                  RequestStats* stats = nullptr,
                  std::int64_t max_listed_pairs = kMaxListedPairs) const;

 private:
  struct Reader {
    ir::OpId op;
    std::vector<std::size_t> positions;  // inputs of op that are the tensor
    bool late = false;                   // a backward reader of a forward or source tensor
  };
  // request()'s state and parts (comm_model.cc).
  struct Building;
  std::vector<std::vector<Reader const*>> reader_sets(ir::TensorId t, ir::OpId holder,
                                                      Building& b) const;
  // Tensor t's factors: over its holder's and readers' nodes, in the sets of reader_sets().
  void add_tensor_factors(ir::Tensor const& t, Building& b) const;

  ir::Graph const* graph_ = nullptr;
  plan::FetchPolicy fetch_ = plan::FetchPolicy::shared;
  std::vector<std::shared_ptr<tdl::BoundOp const>> bound_;
  std::vector<std::string> signature_;
  std::vector<std::optional<ir::OpId>> holder_;
  std::vector<std::vector<Reader>> readers_;
  mutable std::map<std::string, std::shared_ptr<std::vector<tdl::PieceInfo> const>> pieces_;
};

}  // namespace cleave::search::tofu
