// One device's part in a collective (runtime/jobs.h): the data its member tasks would have moved
// goes through one call of the communication backend, and the blocks they would have written on
// this device are written, each under its member task's id (so that readers and lifetimes find
// them as they would the members' own). Partial results bound for another device are not written
// anywhere: the reduction happens inside the call.
//
//   all-gather:     this device's block in, every member's block out;
//   reduce-scatter: this device's partial result, cut into the group's parts, in; its own part
//                   of the reduction out;
//   all-reduce:     the same in; the whole reduction out (its part and the parts the members'
//                   all-gather transfers would have brought).
#pragma once

#include "ir/graph.h"
#include "lower/program.h"
#include "runtime/block_store.h"
#include "runtime/comm_backend.h"

namespace cleave::runtime {

struct CollectivePart {
  ir::Graph const& graph;
  lower::Program const& program;
  lower::CollectiveId collective;
  int device;
  BlockStore& store;  // this device's
  CommBackend& backend;
};

Status run_collective_part(CollectivePart const& part);

}  // namespace cleave::runtime
