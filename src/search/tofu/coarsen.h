// Coarsening before the DP (Tofu §5, PAPERS.md §1), as ties between ops: ops that must share a
// configuration share one DP node. Two ties are made, both only between ops whose iteration
// spaces are identical (same dimensions, extents and splittability), so one list of strategies
// fits all members:
//  - runs of element-wise ops (the optimizer's updates among them): an element-wise op that reads
//    an element-wise producer's output whole and in order takes its producer's node (Tofu: such
//    runs always share a partition);
//  - unrolled RNN time steps: ops whose names differ only in a "step<N>" component (the zoo's
//    naming, and the backward ops named after them) share a node, since every step uses the same
//    weights (Tofu: "merge unrolled RNN time steps").
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
};

struct Coarsening {
  std::vector<int> node_of_op;  // nodes numbered by their first op (by id): deterministic
  int num_nodes = 0;
};

// Element-wise in the TDL sense: no reduction, the output written in iteration order, every
// input read in order or broadcast.
bool is_elementwise(tdl::BoundOp const& op);

Coarsening coarsen(CommModel const& model, CoarsenOptions const& options = {});

}  // namespace cleave::search::tofu
