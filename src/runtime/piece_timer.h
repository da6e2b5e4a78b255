// Pieces measured on demand with the runtime's kernels (issue 15 item 3; FlexFlow measures each
// distinct configuration of an op once): the cost model's PieceMeasurer for `cpu` devices of this
// machine. A piece is keyed as profile tables are (op type, attributes, the piece's extents,
// dtype, device kind), measured once on a thread with the device's OpenMP thread count (as an
// executor worker runs it: its kernel, or the TDL interpreter where no kernel handles it), and
// kept; measured() gives the entries for a cleave.profile/1 file that later runs load.
#pragma once

#include <mutex>
#include <string>

#include "cost/cost_model.h"
#include "ops/op_registry.h"
#include "runtime/kernels/kernel.h"

namespace cleave::runtime {

struct PieceTimerOptions {
  std::string device_kind;  // the devices it measures for (cluster::Device::kind); others: none
  int threads = 1;          // OpenMP threads per device, as the executor gives each worker
  int repeats = 5;          // timed runs per piece, after two warm-up runs
};

class PieceTimer : public cost::PieceMeasurer {
 public:
  PieceTimer(ops::OpRegistry const& registry, KernelRegistry const& kernels,
             PieceTimerOptions options)
      : registry_(&registry), kernels_(&kernels), options_(std::move(options)) {}

  std::optional<cost::Measurement> measure(cost::ComputeRequest const& request,
                                           cost::ProfileKeyView const& key) override;

  // Every piece measured so far, as profile entries.
  cost::ProfileTable measured() const;

 private:
  ops::OpRegistry const* registry_;
  KernelRegistry const* kernels_;
  PieceTimerOptions options_;
  mutable std::mutex mutex_;
  cost::ProfileTable measured_;
};

}  // namespace cleave::runtime
