// After a step each rank holds only what its devices computed; the next step, the check and the
// report need more. complete_step() (TrainingConfig::complete_step) shares, collectively over
// every rank, what they need: the step time (the slowest rank's), every task's span and every
// device's statistics (from the rank that ran it), and the whole values of the given tensors
// (the updated states the next step starts from, the loss, what the check compares). Ranks hold
// replicas of a block alike (the same computation on the same data), so each element is taken
// as the largest value any rank that holds it has (MPI_MAX over values with -inf where not held).
// Spans are set on one time line from the first rank's start (ranks on one machine share its
// steady clock; across machines the starts are taken as one). It ends with a barrier, so that
// every rank starts the next step together.
#pragma once

#include <vector>

#include "ir/graph.h"
#include "runtime/executor.h"
#include "runtime/mpi/mpi_backend.h"
#include "runtime/mpi/mpi_session.h"

namespace cleave::runtime::mpi {

struct StepSharing {
  Session const& session;
  Backend& backend;
  ir::Graph const& graph;
  std::vector<ir::TensorId> tensors;  // whose whole values every rank gets
};

Status complete_step(StepSharing const& sharing, StepResult& step);

// The tensors a training run over MPI shares after each step: the states' next values, the loss
// and the captured ones.
std::vector<ir::TensorId> shared_tensors(ir::Graph const& graph, std::string const& loss,
                                         std::vector<ir::TensorId> const& captured);

}  // namespace cleave::runtime::mpi
