#include "runtime/piece_timer.h"

#include <omp.h>

#include <algorithm>
#include <thread>

#include "runtime/calibrate.h"
#include "runtime/whole_op.h"
#include "support/assert.h"

namespace cleave::runtime {

std::optional<cost::Measurement> PieceTimer::measure(cost::ComputeRequest const& request,
                                                     cost::ProfileKeyView const& key) {
  if (!request.graph || key.device_kind != options_.device_kind) return std::nullopt;
  std::lock_guard lock(mutex_);
  if (auto const* m = measured_.find(key)) return *m;
  auto bound = registry_->bind(*request.graph, request.op);
  CLEAVE_ASSERT(bound.has_value(), "a priced piece's op binds");
  tdl::Box box(request.box.begin(), request.box.end());
  auto piece = piece_run(*request.graph, request.op, **bound, box, *kernels_);
  CLEAVE_ASSERT(piece.has_value(), "a priced piece is a valid piece of its op");
  // On a thread of its own, as an executor worker runs it, with the worker's thread count.
  Expected<double> seconds = 0.0;
  std::thread worker([&] {
    omp_set_num_threads(options_.threads);
    seconds = seconds_per_call(**piece, options_.repeats);
  });
  worker.join();
  if (!seconds) return std::nullopt;  // the piece failed to run: the roofline prices it
  cost::Measurement m{Seconds(std::max(*seconds, 1e-9)), options_.repeats};
  cost::ProfileKey owned{std::string(key.op),
                         std::string(key.attrs),
                         {key.extents.begin(), key.extents.end()},
                         key.dtype,
                         std::string(key.device_kind)};
  bool added = measured_.add({std::move(owned), m}).is_ok();
  CLEAVE_ASSERT(added, "a measured time is positive and its key new");
  return m;
}

cost::ProfileTable PieceTimer::measured() const {
  std::lock_guard lock(mutex_);
  return measured_;
}

}  // namespace cleave::runtime
