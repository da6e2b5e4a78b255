#include "runtime/mpi/step_sharing.h"

#include <algorithm>
#include <chrono>
#include <limits>

#include "runtime/synthetic_data.h"

namespace cleave::runtime::mpi {
namespace {

template <typename T> Status all_reduce(std::vector<T>& data, MPI_Datatype type, MPI_Op op) {
  if (data.empty()) return Status::ok();
  if (int rc = MPI_Allreduce(MPI_IN_PLACE, data.data(), static_cast<int>(data.size()), type, op,
                             MPI_COMM_WORLD);
      rc != MPI_SUCCESS)
    return mpi_error("MPI_Allreduce", rc);
  return Status::ok();
}

// The step's time line begins when the first rank began it. Ranks on one machine share its
// steady clock; across machines the clocks differ, and the ranks' starts (just after the
// previous step's closing barrier) are taken as one.
Status share_timings(Session const& session, StepResult& step) {
  double offset = 0;
  if (session.one_machine()) {
    double start = std::chrono::duration<double>(step.start.time_since_epoch()).count();
    std::vector<double> first{start};
    CLEAVE_CHECK_OK(all_reduce(first, MPI_DOUBLE, MPI_MIN));
    offset = start - first[0];
  }
  std::vector<double> times{offset + step.step_s};
  CLEAVE_CHECK_OK(all_reduce(times, MPI_DOUBLE, MPI_MAX));
  step.step_s = times[0];
  std::vector<double> spans;  // a task that ran elsewhere has an empty span here: {0, 0}
  for (auto const& s : step.spans) {
    bool here = s.end > 0;
    spans.push_back(here ? s.start + offset : 0);
    spans.push_back(here ? s.end + offset : 0);
  }
  CLEAVE_CHECK_OK(all_reduce(spans, MPI_DOUBLE, MPI_MAX));
  for (std::size_t k = 0; k < step.spans.size(); ++k)
    step.spans[k] = {spans[2 * k], spans[2 * k + 1]};
  // A device's statistics are zero on every rank but its own, its capacity the same on all.
  std::vector<double> busy;
  std::vector<std::int64_t> counts, bytes;
  for (auto const& d : step.devices) {
    busy.insert(busy.end(), {d.compute_s, d.comm_s});
    counts.insert(counts.end(), {d.kernel_tasks, d.interpreted_tasks});
    bytes.insert(bytes.end(), {d.peak.value(), d.capacity.value()});
  }
  CLEAVE_CHECK_OK(all_reduce(busy, MPI_DOUBLE, MPI_SUM));
  CLEAVE_CHECK_OK(all_reduce(counts, MPI_INT64_T, MPI_SUM));
  CLEAVE_CHECK_OK(all_reduce(bytes, MPI_INT64_T, MPI_MAX));
  for (std::size_t k = 0; k < step.devices.size(); ++k) {
    auto& d = step.devices[k];
    d.compute_s = busy[2 * k];
    d.comm_s = busy[2 * k + 1];
    d.kernel_tasks = counts[2 * k];
    d.interpreted_tasks = counts[2 * k + 1];
    d.peak = Bytes(bytes[2 * k]);
    d.capacity = Bytes(bytes[2 * k + 1]);
    d.idle_s = std::max(0.0, step.step_s - d.compute_s - d.comm_s);
  }
  return Status::ok();
}

// The tensor's whole value where the ranks together hold all of it; none otherwise.
Status share_value(ir::Tensor const& t, StepResult& step) {
  auto n = static_cast<std::size_t>(ir::num_elements(t.type.shape));
  std::vector<float> value(n, -std::numeric_limits<float>::infinity()), held(n, 0.0f);
  if (auto v = step.values.find(t.name); v != step.values.end()) {
    auto c = step.coverage.find(t.name);
    for (std::size_t i = 0; i < n; ++i)
      if (c == step.coverage.end() || c->second[i] != 0) {
        value[i] = v->second[i];
        held[i] = 1;
      }
  }
  CLEAVE_CHECK_OK(all_reduce(value, MPI_FLOAT, MPI_MAX));
  CLEAVE_CHECK_OK(all_reduce(held, MPI_FLOAT, MPI_MAX));
  step.coverage.erase(t.name);
  if (std::all_of(held.begin(), held.end(), [](float h) { return h != 0; }))
    step.values[t.name] = std::move(value);
  else
    step.values.erase(t.name);
  return Status::ok();
}

}  // namespace

Status complete_step(StepSharing const& sharing, StepResult& step) {
  CLEAVE_CHECK_OK(sharing.backend.drain());
  CLEAVE_CHECK_OK(share_timings(sharing.session, step));
  for (ir::TensorId id : sharing.tensors)
    CLEAVE_CHECK_OK(share_value(sharing.graph.tensor(id), step));
  // What is held only in part and not shared is nobody's whole value.
  for (auto const& [name, held] : step.coverage)
    step.values.erase(name);
  step.coverage.clear();
  if (int rc = MPI_Barrier(MPI_COMM_WORLD); rc != MPI_SUCCESS) return mpi_error("MPI_Barrier", rc);
  return Status::ok();
}

std::vector<ir::TensorId> shared_tensors(ir::Graph const& graph, std::string const& loss,
                                         std::vector<ir::TensorId> const& captured) {
  std::vector<bool> shared(graph.num_tensors(), false);
  for (auto const& u : state_updates(graph))
    shared[u.next.value()] = true;
  for (auto id : captured)
    shared[id.value()] = true;
  std::vector<ir::TensorId> out;
  for (auto const& t : graph.tensors())
    if (shared[t.id.value()] || t.name == loss) out.push_back(t.id);
  return out;
}

}  // namespace cleave::runtime::mpi
