// Coarsening before the DP (Tofu §5, PAPERS.md §1), as ties between ops: ops that must share a
// configuration share one DP node. Two ties are made between ops whose iteration spaces are
// identical (same dimensions, extents and splittability), so one list of strategies fits all
// members:
//  - runs of element-wise ops (the optimizer's updates among them): an element-wise op that reads
//    an element-wise producer's output whole and in order takes its producer's node (Tofu: such
//    runs always share a partition);
//  - unrolled RNN time steps: ops whose names differ only in a "step<N>" component (the zoo's
//    naming, and the backward ops named after them) share a node, since every step uses the same
//    weights (Tofu: "merge unrolled RNN time steps").
// A third tie joins ops of different spaces: under AMP (docs/precision.md) a weight's half-copy
// cast follows its first reader (issue 21). Cut on its own, the cast was split along other
// dimensions than the ones its readers read it along, and every reader piece fetched its part
// from about half the devices (n^2/2 point-to-point transfers per weight). A follower shares its
// reader's node, and its candidate configurations are its reader's projected on the half copy
// (follow_config), so the DP prices the cast where it will be (its fetch of the fp32 weight and
// its readers' fetches of its blocks). The ops that hold the weight (its update and the ops tied
// to it, all of the cast's space) join the node as copies of the cast's configuration, so that
// the cast reads the fp32 weight where it is.
// The paper's other groupings need no tie here: a forward op with its backward ops, and a forward
// tensor with its gradient (and gradient sum), are kept as separate nodes that meet in one cost
// factor per tensor, so the DP still tries all member configurations of such a group jointly
// (exactly, by elimination) and forward and backward ops may be split differently, as in the
// paper.
#pragma once

#include <vector>

#include "search/tofu/comm_model.h"

namespace cleave::search::tofu {

struct CoarsenOptions {
  bool tie_elementwise = true;
  bool tie_time_steps = true;
  bool tie_weight_casts = true;
};

struct Coarsening {
  std::vector<int> node_of_op;  // nodes numbered by their first op (by id): deterministic
  int num_nodes = 0;
  // Per op, the op whose candidates its own are made from, or -1: a cast's reader (projected by
  // follow_config), or the cast whose candidates a weight's holder copies.
  std::vector<int> leader_of_op;
};

// Element-wise in the TDL sense: no reduction, the output written in iteration order, every
// input read in order or broadcast.
bool is_elementwise(tdl::BoundOp const& op);

Coarsening coarsen(CommModel const& model, CoarsenOptions const& options = {});

// Piece p's index along each dimension of a grid of `degrees` (pieces numbered row-major, as in
// plan.h).
std::vector<std::int64_t> coordinates(std::int64_t p, std::vector<std::int64_t> const& degrees);

// The configuration of `follower` (a weight's half-copy cast, elementwise over the copy) given
// its leader's, a reader of the copy: every leader dimension that indexes a dimension of the copy
// as is cuts that dimension alike, on the same devices; the leader's other cuts (pieces that read
// the same region, such as a batch cut) split the region further, one block per reading piece,
// along a dimension the leader indexes where one allows it (the largest such; else the largest).
// Each leader piece then holds a block of what it reads and fetches the rest from the pieces
// that read the same region.
plan::OpConfig follow_config(CommModel const& model, ir::OpId follower, ir::OpId leader,
                             plan::OpConfig const& leader_config);
// Fills every follower's candidates from its leader's (which must be filled), one per strategy.
void project_followers(CommModel const& model, Coarsening const& coarsening, Candidates& c);

}  // namespace cleave::search::tofu
