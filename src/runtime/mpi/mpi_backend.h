// The communication backend over MPI (issue 19, docs/runtime.md "Over MPI"): each rank runs the
// workers of its devices (device d on rank d / devices_per_rank) and every rank lowered the same
// program, so the two ends of a transfer and the members of a collective name it alike without
// any exchange.
//
// A transfer is a non-blocking point-to-point message (MPI_Isend, MPI_Irecv) on a communicator
// of its own, tagged by its position among the transfers between its two ranks in program order:
// the transfer task's id itself can pass MPI_TAG_UB (at least 32767 by the standard), and the
// position stays unique for every message in flight between two ranks within a step (a step's
// messages are all received before the next begins). A collective is an MPI collective
// (MPI_Iallreduce, MPI_Iallgatherv, MPI_Ireduce_scatter) on the communicator of its device
// group, one per distinct group, created once when the backend is; joined() is an
// MPI_Ibarrier on it. Every wait polls its request with a deadline (BackendConfig::timeout) and
// ends early when the backend is aborted, so no rank waits forever on a peer that is gone.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "lower/program.h"
#include "runtime/comm_backend.h"
#include "runtime/mpi/mpi_session.h"

namespace cleave::runtime::mpi {

struct BackendConfig {
  Session const& session;
  lower::Program const& program;
  int devices_per_rank = 1;
  std::chrono::milliseconds timeout{60'000};  // of any one wait for a peer
};

// The devices a rank runs.
std::vector<int> devices_of_rank(int rank, int devices_per_rank);

// Whether the job fits the plan: ranks x devices per rank = the plan's devices; an error that
// says how to start the job otherwise.
Status check_job(int plan_devices, int ranks, int devices_per_rank);

class Backend final : public CommBackend {
 public:
  // check_job(), then the tags and one communicator per device group (collective over all
  // ranks: every rank calls it in the same order).
  static Expected<std::unique_ptr<Backend>> create(BackendConfig const& config);
  ~Backend() override;
  Backend(Backend const&) = delete;
  Backend& operator=(Backend const&) = delete;

  Status send(Message const& message, Payload payload) override;
  Status receive(Message const& message, std::span<float> out) override;
  Status all_reduce(CollectiveCall const& call, std::span<float> data) override;
  Status all_gather(CollectiveCall const& call, std::span<float const> mine,
                    std::span<float> out) override;
  Status reduce_scatter(CollectiveCall const& call, std::span<float const> in,
                        std::span<float> out) override;
  void abort() override;
  Expected<bool> arrived(Message const& message) override;
  Expected<bool> joined(CollectiveCall const& call) override;

  // Waits until every message this rank sent has been taken: the end of a step.
  Status drain();

 private:
  explicit Backend(BackendConfig const& config);
  int rank_of(int device) const { return device / devices_per_rank_; }
  MPI_Comm comm_of(std::vector<int> const& group) const;
  int tag_of(Message const& message) const;
  // Polls the request until it completes (an error past the deadline or once aborted).
  Status wait(MPI_Request& request, std::string const& what);
  // Completes the sends whose receivers have taken them (their payloads are released).
  Status progress_sends();
  // Groups with several members on one rank (--devices-per-rank above 1) have no communicator
  // of distinct ranks: their members exchange their data point to point, each with every other
  // member, on a communicator of their own, and each reduces in group order (the same order on
  // every member, so all get the same result); joining is a message to every other member.
  // mpi_exchange.cc.
  bool exchanged(std::vector<int> const& group) const { return exchanged_.count(group) != 0; }
  int exchange_tag(std::uint64_t key, int from, int to, bool join) const;
  // Sends to_each[k] to the group's k-th member and receives from_each[k] from it (every member
  // but the caller), then waits for all of it.
  Status exchange(CollectiveCall const& call, std::vector<std::span<float const>> const& to_each,
                  std::vector<std::span<float>> const& from_each);
  Status exchanged_all_reduce(CollectiveCall const& call, std::span<float> data);
  Status exchanged_all_gather(CollectiveCall const& call, std::span<float const> mine,
                              std::span<float> out);
  Status exchanged_reduce_scatter(CollectiveCall const& call, std::span<float const> in,
                                  std::span<float> out);
  Expected<bool> exchanged_joined(CollectiveCall const& call);

  // Whether a poll for `key` (in `since`) has lasted past the timeout: the error that says so.
  Status check_deadline(std::map<std::uint64_t, std::chrono::steady_clock::time_point>& since,
                        std::uint64_t key, std::string const& what);

  struct Sending {
    MPI_Request request;
    Payload payload;
  };

  Session const& session_;
  int devices_per_rank_;
  std::chrono::milliseconds timeout_;
  MPI_Comm messages_ = MPI_COMM_NULL;                 // point-to-point transfers
  std::map<std::vector<int>, MPI_Comm> group_comms_;  // per device group: its ranks in order
  std::set<std::vector<int>> exchanged_;              // groups with several members on a rank
  MPI_Comm exchanges_ = MPI_COMM_NULL;                // their messages
  int num_devices_ = 0;
  std::map<std::uint64_t, int> tags_;  // per transfer task
  std::mutex mutex_;                   // guards what follows
  std::vector<Sending> sending_;
  std::map<std::uint64_t, MPI_Request> joining_;  // per collective: its barrier
  std::map<std::uint64_t, std::chrono::steady_clock::time_point> polled_since_;
  std::map<std::uint64_t, std::chrono::steady_clock::time_point> joining_since_;
  struct Joins {                    // a member of an exchanged group joining a collective
    std::vector<MPI_Request> sent;  // to every other member
    std::vector<bool> heard;        // per member: its join received
    std::chrono::steady_clock::time_point since;  // the first poll
  };
  std::map<std::pair<std::uint64_t, int>, Joins> joins_;  // per collective and member
  std::atomic<bool> aborted_{false};
};

}  // namespace cleave::runtime::mpi
