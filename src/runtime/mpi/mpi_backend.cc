#include "runtime/mpi/mpi_backend.h"

#include <algorithm>
#include <thread>

#include "support/assert.h"

namespace cleave::runtime::mpi {
namespace {

using Clock = std::chrono::steady_clock;

MPI_Op op_of(tdl::Reducer r) {
  switch (r) {
  case tdl::Reducer::max:
    return MPI_MAX;
  case tdl::Reducer::min:
    return MPI_MIN;
  case tdl::Reducer::prod:
    return MPI_PROD;
  case tdl::Reducer::sum:
    return MPI_SUM;
  case tdl::Reducer::none:
    break;
  }
  CLEAVE_ASSERT(false, "a collective without a reducer reduces");
  return MPI_SUM;
}

Expected<std::vector<int>> counts_of(std::vector<std::size_t> const& counts) {
  std::vector<int> out;
  for (auto c : counts) {
    CLEAVE_TRY(int n, mpi_count(c));
    out.push_back(n);
  }
  return out;
}

std::vector<int> displacements(std::vector<int> const& counts) {
  std::vector<int> out(counts.size(), 0);
  for (std::size_t k = 1; k < counts.size(); ++k)
    out[k] = out[k - 1] + counts[k - 1];
  return out;
}

Error aborted_error() {
  return Error(ErrorCode::execution_failed, "the MPI backend was aborted");
}

}  // namespace

std::vector<int> devices_of_rank(int rank, int devices_per_rank) {
  std::vector<int> out;
  for (int k = 0; k < devices_per_rank; ++k)
    out.push_back(rank * devices_per_rank + k);
  return out;
}

Status check_job(int plan_devices, int ranks, int devices_per_rank) {
  if (devices_per_rank < 1)
    return Error(ErrorCode::invalid_argument,
                 "--devices-per-rank must be at least 1, not " + std::to_string(devices_per_rank));
  if (ranks * devices_per_rank == plan_devices) return Status::ok();
  std::string how =
      plan_devices % devices_per_rank == 0
          ? "start it with mpirun -np " + std::to_string(plan_devices / devices_per_rank)
          : "choose a --devices-per-rank that divides " + std::to_string(plan_devices);
  return Error(ErrorCode::invalid_argument,
               "the plan has " + std::to_string(plan_devices) + " devices but the job's " +
                   std::to_string(ranks) + " ranks with " + std::to_string(devices_per_rank) +
                   " device(s) each run " + std::to_string(ranks * devices_per_rank) + ": " + how);
}

Backend::Backend(BackendConfig const& config)
    : session_(config.session), devices_per_rank_(config.devices_per_rank),
      timeout_(config.timeout) {}

Backend::~Backend() {
  for (auto& [group, comm] : group_comms_)
    if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  if (messages_ != MPI_COMM_NULL) MPI_Comm_free(&messages_);
  if (exchanges_ != MPI_COMM_NULL) MPI_Comm_free(&exchanges_);
}

Expected<std::unique_ptr<Backend>> Backend::create(BackendConfig const& config) {
  auto const& program = config.program;
  CLEAVE_CHECK_OK(check_job(program.num_devices, config.session.size(), config.devices_per_rank));
  std::unique_ptr<Backend> b(new Backend(config));
  // Tags: each transfer's position among those between its two ranks.
  std::map<std::pair<int, int>, int> next;
  for (lower::TaskId id = 0; id < program.tasks.size(); ++id) {
    auto const& t = program.tasks[id];
    if (t.kind != lower::TaskKind::transfer || t.collective != lower::no_collective) continue;
    int& tag = next[{b->rank_of(t.source_device), b->rank_of(t.device)}];
    if (tag > config.session.tag_bound())
      return Error(ErrorCode::unsupported,
                   "the plan moves more than " + std::to_string(config.session.tag_bound()) +
                       " blocks from rank " + std::to_string(b->rank_of(t.source_device)) +
                       " to rank " + std::to_string(b->rank_of(t.device)) +
                       " in a step, more than MPI's tags (MPI_TAG_UB) can tell apart");
    b->tags_[id] = tag++;
  }
  // Communicators: every rank walks the same groups in the same (sorted) order.
  std::vector<std::vector<int>> groups;
  for (auto const& col : program.collectives) {
    std::vector<int> ranks;
    for (int d : col.group)
      ranks.push_back(b->rank_of(d));
    std::sort(ranks.begin(), ranks.end());
    if (std::adjacent_find(ranks.begin(), ranks.end()) != ranks.end())
      b->exchanged_.insert(col.group);
    else
      groups.push_back(col.group);
  }
  b->num_devices_ = program.num_devices;
  if (!program.collectives.empty() &&
      b->exchange_tag(program.collectives.size() - 1, program.num_devices - 1,
                      program.num_devices - 1, true) > config.session.tag_bound())
    return Error(ErrorCode::unsupported,
                 "the plan has too many collectives for MPI's tags (MPI_TAG_UB) with several "
                 "devices per rank; run it with --devices-per-rank 1");
  if (int rc = MPI_Comm_dup(MPI_COMM_WORLD, &b->exchanges_); rc != MPI_SUCCESS)
    return mpi_error("MPI_Comm_dup", rc);
  std::sort(groups.begin(), groups.end());
  groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
  if (int rc = MPI_Comm_dup(MPI_COMM_WORLD, &b->messages_); rc != MPI_SUCCESS)
    return mpi_error("MPI_Comm_dup", rc);
  int me = config.session.rank();
  for (auto const& group : groups) {
    int color = MPI_UNDEFINED, key = 0;
    for (std::size_t k = 0; k < group.size(); ++k)
      if (b->rank_of(group[k]) == me) {
        color = 0;
        key = static_cast<int>(k);  // its rank in the communicator is its place in the group
      }
    MPI_Comm comm = MPI_COMM_NULL;
    if (int rc = MPI_Comm_split(MPI_COMM_WORLD, color, key, &comm); rc != MPI_SUCCESS)
      return mpi_error("MPI_Comm_split", rc);
    if (comm != MPI_COMM_NULL) b->group_comms_[group] = comm;
  }
  return b;
}

MPI_Comm Backend::comm_of(std::vector<int> const& group) const {
  auto it = group_comms_.find(group);
  CLEAVE_ASSERT(it != group_comms_.end(), "a collective's member outside its group");
  return it->second;
}

int Backend::tag_of(Message const& message) const {
  auto it = tags_.find(message.key);
  CLEAVE_ASSERT(it != tags_.end(), "a message that is no transfer of the program");
  return it->second;
}

Status Backend::wait(MPI_Request& request, std::string const& what) {
  auto start = Clock::now();
  while (true) {
    int done = 0;
    if (int rc = MPI_Test(&request, &done, MPI_STATUS_IGNORE); rc != MPI_SUCCESS)
      return mpi_error("MPI_Test", rc).with_context(what);
    if (done) return Status::ok();
    // A request left pending here is the job's end: the caller's error aborts every rank.
    if (aborted_.load(std::memory_order_relaxed)) return aborted_error();
    auto waited = Clock::now() - start;
    if (waited > timeout_)
      return Error(ErrorCode::execution_failed, "no peer answered in " +
                                                    std::to_string(timeout_.count()) + " ms (" +
                                                    what + "); a rank has stopped");
    // Ranks that share cores leave them to those computing once the wait is not short.
    if (waited < std::chrono::microseconds(500))
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

Status Backend::progress_sends() {
  std::lock_guard lock(mutex_);
  for (std::size_t k = 0; k < sending_.size();) {
    int done = 0;
    if (int rc = MPI_Test(&sending_[k].request, &done, MPI_STATUS_IGNORE); rc != MPI_SUCCESS)
      return mpi_error("MPI_Test", rc);
    if (done) {
      sending_[k] = std::move(sending_.back());
      sending_.pop_back();
    } else {
      ++k;
    }
  }
  return Status::ok();
}

Status Backend::send(Message const& message, Payload payload) {
  if (aborted_) return aborted_error();
  CLEAVE_TRY(int n, mpi_count(payload.data.size()));
  Sending s{MPI_REQUEST_NULL, std::move(payload)};
  // MPI_Isend reads the buffer until the request completes: `keep` holds it until then.
  if (int rc = MPI_Isend(s.payload.data.data(), n, MPI_FLOAT, rank_of(message.destination),
                         tag_of(message), messages_, &s.request);
      rc != MPI_SUCCESS)
    return mpi_error("MPI_Isend", rc);
  std::lock_guard lock(mutex_);
  sending_.push_back(std::move(s));
  return Status::ok();
}

Status Backend::check_deadline(std::map<std::uint64_t, Clock::time_point>& since, std::uint64_t key,
                               std::string const& what) {
  auto now = Clock::now();
  auto [it, fresh] = since.emplace(key, now);
  if (fresh || now - it->second <= timeout_) return Status::ok();
  return Error(ErrorCode::execution_failed, "waited " + std::to_string(timeout_.count()) +
                                                " ms for " + what + "; a rank has stopped");
}

Expected<bool> Backend::arrived(Message const& message) {
  if (aborted_) return aborted_error();
  CLEAVE_CHECK_OK(progress_sends());
  int flag = 0;
  if (int rc =
          MPI_Iprobe(rank_of(message.source), tag_of(message), messages_, &flag, MPI_STATUS_IGNORE);
      rc != MPI_SUCCESS)
    return mpi_error("MPI_Iprobe", rc);
  std::lock_guard lock(mutex_);
  if (flag) {
    polled_since_.erase(message.key);
    return true;
  }
  CLEAVE_CHECK_OK(check_deadline(polled_since_, message.key,
                                 "the message from device " + std::to_string(message.source) +
                                     " on rank " + std::to_string(rank_of(message.source))));
  return false;
}

Status Backend::receive(Message const& message, std::span<float> out) {
  if (aborted_) return aborted_error();
  CLEAVE_TRY(int n, mpi_count(out.size()));
  MPI_Request request = MPI_REQUEST_NULL;
  if (int rc = MPI_Irecv(out.data(), n, MPI_FLOAT, rank_of(message.source), tag_of(message),
                         messages_, &request);
      rc != MPI_SUCCESS)
    return mpi_error("MPI_Irecv", rc);
  return wait(request, "receiving from device " + std::to_string(message.source) + " on rank " +
                           std::to_string(rank_of(message.source)));
}

Expected<bool> Backend::joined(CollectiveCall const& call) {
  if (aborted_) return aborted_error();
  CLEAVE_CHECK_OK(progress_sends());
  if (exchanged(call.group)) return exchanged_joined(call);
  std::lock_guard lock(mutex_);
  auto [it, fresh] = joining_.emplace(call.key, MPI_REQUEST_NULL);
  if (fresh)
    if (int rc = MPI_Ibarrier(comm_of(call.group), &it->second); rc != MPI_SUCCESS)
      return mpi_error("MPI_Ibarrier", rc);
  int done = 0;
  if (int rc = MPI_Test(&it->second, &done, MPI_STATUS_IGNORE); rc != MPI_SUCCESS)
    return mpi_error("MPI_Test", rc);
  if (done) {
    joining_.erase(it);
    joining_since_.erase(call.key);
    return true;
  }
  CLEAVE_CHECK_OK(check_deadline(joining_since_, call.key,
                                 "the other members of collective " + std::to_string(call.key) +
                                     " to join it"));
  return false;
}

Status Backend::all_reduce(CollectiveCall const& call, std::span<float> data) {
  if (aborted_) return aborted_error();
  if (exchanged(call.group)) return exchanged_all_reduce(call, data);
  CLEAVE_TRY(int n, mpi_count(data.size()));
  MPI_Request request = MPI_REQUEST_NULL;
  if (int rc = MPI_Iallreduce(MPI_IN_PLACE, data.data(), n, MPI_FLOAT, op_of(call.reducer),
                              comm_of(call.group), &request);
      rc != MPI_SUCCESS)
    return mpi_error("MPI_Iallreduce", rc);
  return wait(request, "all-reduce of collective " + std::to_string(call.key));
}

Status Backend::all_gather(CollectiveCall const& call, std::span<float const> mine,
                           std::span<float> out) {
  if (aborted_) return aborted_error();
  if (exchanged(call.group)) return exchanged_all_gather(call, mine, out);
  CLEAVE_TRY(int n, mpi_count(mine.size()));
  CLEAVE_TRY(auto counts, counts_of(call.counts));
  auto at = displacements(counts);
  MPI_Request request = MPI_REQUEST_NULL;
  if (int rc = MPI_Iallgatherv(mine.data(), n, MPI_FLOAT, out.data(), counts.data(), at.data(),
                               MPI_FLOAT, comm_of(call.group), &request);
      rc != MPI_SUCCESS)
    return mpi_error("MPI_Iallgatherv", rc);
  return wait(request, "all-gather of collective " + std::to_string(call.key));
}

Status Backend::reduce_scatter(CollectiveCall const& call, std::span<float const> in,
                               std::span<float> out) {
  if (aborted_) return aborted_error();
  if (exchanged(call.group)) return exchanged_reduce_scatter(call, in, out);
  CLEAVE_TRY(auto counts, counts_of(call.counts));
  MPI_Request request = MPI_REQUEST_NULL;
  if (int rc = MPI_Ireduce_scatter(in.data(), out.data(), counts.data(), MPI_FLOAT,
                                   op_of(call.reducer), comm_of(call.group), &request);
      rc != MPI_SUCCESS)
    return mpi_error("MPI_Ireduce_scatter", rc);
  return wait(request, "reduce-scatter of collective " + std::to_string(call.key));
}

void Backend::abort() {
  aborted_ = true;
}

Status Backend::drain() {
  std::vector<Sending> pending;
  {
    std::lock_guard lock(mutex_);
    pending.swap(sending_);
  }
  for (auto& s : pending)
    CLEAVE_CHECK_OK(wait(s.request, "a message this rank sent being taken"));
  return Status::ok();
}

}  // namespace cleave::runtime::mpi
