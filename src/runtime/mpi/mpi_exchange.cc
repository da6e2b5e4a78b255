// Collectives of groups with several members on one rank (mpi_backend.h): point-to-point
// exchanges among the members, each reducing in group order.
#include <algorithm>
#include <numeric>

#include "runtime/mpi/mpi_backend.h"
#include "support/assert.h"

namespace cleave::runtime::mpi {
namespace {

std::size_t place_of(std::vector<int> const& group, int device) {
  auto it = std::find(group.begin(), group.end(), device);
  CLEAVE_ASSERT(it != group.end(), "a collective's member outside its group");
  return static_cast<std::size_t>(it - group.begin());
}

std::vector<std::size_t> offsets_of(std::vector<std::size_t> const& counts) {
  std::vector<std::size_t> out(counts.size(), 0);
  for (std::size_t k = 1; k < counts.size(); ++k)
    out[k] = out[k - 1] + counts[k - 1];
  return out;
}

// out = the members' parts combined in group order (parts[k]: the k-th member's).
void reduce_in_order(std::vector<std::span<float const>> const& parts, std::span<float> out,
                     tdl::Reducer r) {
  std::copy(parts[0].begin(), parts[0].end(), out.begin());
  for (std::size_t k = 1; k < parts.size(); ++k)
    combine_into(out.data(), parts[k].data(), out.size(), r);
}

}  // namespace

// Unique among the messages in flight between two ranks: the collective, both ends and whether
// it is a join (the collective ids are below the program's count, checked against MPI_TAG_UB).
int Backend::exchange_tag(std::uint64_t key, int from, int to, bool join) const {
  auto d = static_cast<std::uint64_t>(num_devices_);
  auto tag =
      ((key * d + static_cast<std::uint64_t>(from)) * d + static_cast<std::uint64_t>(to)) * 2 +
      (join ? 1 : 0);
  return tag > static_cast<std::uint64_t>(INT32_MAX) ? INT32_MAX : static_cast<int>(tag);
}

Status Backend::exchange(CollectiveCall const& call,
                         std::vector<std::span<float const>> const& to_each,
                         std::vector<std::span<float>> const& from_each) {
  std::vector<MPI_Request> requests;
  for (std::size_t k = 0; k < call.group.size(); ++k) {
    int peer = call.group[k];
    if (peer == call.device) continue;
    CLEAVE_TRY(int in, mpi_count(from_each[k].size()));
    CLEAVE_TRY(int out, mpi_count(to_each[k].size()));
    requests.push_back(MPI_REQUEST_NULL);
    if (int rc = MPI_Irecv(from_each[k].data(), in, MPI_FLOAT, rank_of(peer),
                           exchange_tag(call.key, peer, call.device, false), exchanges_,
                           &requests.back());
        rc != MPI_SUCCESS)
      return mpi_error("MPI_Irecv", rc);
    requests.push_back(MPI_REQUEST_NULL);
    // MPI_Isend's buffer is const-correct in MPI 3; the data is only read.
    if (int rc = MPI_Isend(to_each[k].data(), out, MPI_FLOAT, rank_of(peer),
                           exchange_tag(call.key, call.device, peer, false), exchanges_,
                           &requests.back());
        rc != MPI_SUCCESS)
      return mpi_error("MPI_Isend", rc);
  }
  for (auto& r : requests)
    CLEAVE_CHECK_OK(wait(r, "exchange of collective " + std::to_string(call.key)));
  return Status::ok();
}

Status Backend::exchanged_all_reduce(CollectiveCall const& call, std::span<float> data) {
  std::size_t g = call.group.size(), me = place_of(call.group, call.device);
  std::vector<std::vector<float>> theirs(g, std::vector<float>(data.size()));
  std::vector<std::span<float const>> to_each(g, data), parts(g);
  std::vector<std::span<float>> from_each(theirs.begin(), theirs.end());
  CLEAVE_CHECK_OK(exchange(call, to_each, from_each));
  for (std::size_t k = 0; k < g; ++k)
    parts[k] = k == me ? std::span<float const>(data) : std::span<float const>(theirs[k]);
  std::vector<float> result(data.size());
  reduce_in_order(parts, result, call.reducer);
  std::copy(result.begin(), result.end(), data.begin());
  return Status::ok();
}

Status Backend::exchanged_all_gather(CollectiveCall const& call, std::span<float const> mine,
                                     std::span<float> out) {
  std::size_t g = call.group.size(), me = place_of(call.group, call.device);
  auto offsets = offsets_of(call.counts);
  std::vector<std::span<float const>> to_each(g, mine);
  std::vector<std::span<float>> from_each;
  for (std::size_t k = 0; k < g; ++k)
    from_each.push_back(out.subspan(offsets[k], call.counts[k]));
  std::copy(mine.begin(), mine.end(), from_each[me].begin());
  return exchange(call, to_each, from_each);
}

Status Backend::exchanged_reduce_scatter(CollectiveCall const& call, std::span<float const> in,
                                         std::span<float> out) {
  std::size_t g = call.group.size(), me = place_of(call.group, call.device);
  auto offsets = offsets_of(call.counts);
  std::vector<std::vector<float>> theirs(g, std::vector<float>(out.size()));
  std::vector<std::span<float const>> to_each, parts(g);
  for (std::size_t k = 0; k < g; ++k)
    to_each.push_back(in.subspan(offsets[k], call.counts[k]));
  std::vector<std::span<float>> from_each(theirs.begin(), theirs.end());
  CLEAVE_CHECK_OK(exchange(call, to_each, from_each));
  for (std::size_t k = 0; k < g; ++k)
    parts[k] = k == me ? to_each[me] : std::span<float const>(theirs[k]);
  reduce_in_order(parts, out, call.reducer);
  return Status::ok();
}

Expected<bool> Backend::exchanged_joined(CollectiveCall const& call) {
  std::lock_guard lock(mutex_);
  auto [it, fresh] = joins_.try_emplace({call.key, call.device});
  Joins& j = it->second;
  if (fresh) {
    j.since = std::chrono::steady_clock::now();
    j.heard.assign(call.group.size(), false);
    for (std::size_t k = 0; k < call.group.size(); ++k) {
      int peer = call.group[k];
      if (peer == call.device) {
        j.heard[k] = true;
        continue;
      }
      j.sent.push_back(MPI_REQUEST_NULL);
      if (int rc = MPI_Isend(nullptr, 0, MPI_FLOAT, rank_of(peer),
                             exchange_tag(call.key, call.device, peer, true), exchanges_,
                             &j.sent.back());
          rc != MPI_SUCCESS)
        return mpi_error("MPI_Isend", rc);
    }
  }
  for (std::size_t k = 0; k < call.group.size(); ++k) {
    if (j.heard[k]) continue;
    int peer = call.group[k], flag = 0;
    int tag = exchange_tag(call.key, peer, call.device, true);
    if (int rc = MPI_Iprobe(rank_of(peer), tag, exchanges_, &flag, MPI_STATUS_IGNORE);
        rc != MPI_SUCCESS)
      return mpi_error("MPI_Iprobe", rc);
    if (!flag) continue;
    if (int rc = MPI_Recv(nullptr, 0, MPI_FLOAT, rank_of(peer), tag, exchanges_, MPI_STATUS_IGNORE);
        rc != MPI_SUCCESS)
      return mpi_error("MPI_Recv", rc);
    j.heard[k] = true;
  }
  if (!std::all_of(j.heard.begin(), j.heard.end(), [](bool h) { return h; })) {
    if (std::chrono::steady_clock::now() - j.since <= timeout_) return false;
    return Error(ErrorCode::execution_failed, "waited " + std::to_string(timeout_.count()) +
                                                  " ms for the other members of collective " +
                                                  std::to_string(call.key) +
                                                  " to join it; a rank has stopped");
  }
  for (auto& r : j.sent)  // zero-byte messages: complete once matched
    CLEAVE_CHECK_OK(wait(r, "joining collective " + std::to_string(call.key)));
  joins_.erase(it);
  return true;
}

}  // namespace cleave::runtime::mpi
