// One process's MPI: initialised with full thread support (each device's worker thread calls
// MPI), errors returned rather than fatal (so that a failing call becomes an error naming its
// rank), and the job ended at once when a rank fails (docs/runtime.md "Over MPI").
#pragma once

#include <mpi.h>

#include <functional>
#include <string>
#include <vector>

#include "support/status.h"

namespace cleave::runtime::mpi {

class Session {
 public:
  // MPI_Init_thread(MPI_THREAD_MULTIPLE); an error where the library cannot give that.
  static Expected<Session> start();
  Session(Session&& other) noexcept;
  Session& operator=(Session&&) = delete;
  ~Session();  // MPI_Finalize

  int rank() const { return rank_; }
  int size() const { return size_; }
  int tag_bound() const { return tag_bound_; }  // MPI_TAG_UB: the largest tag allowed
  std::string const& host() const { return host_; }
  // Whether every rank runs on this machine (and so shares its steady clock).
  bool one_machine() const { return one_machine_; }

  // "rank 1 of 4 on host h".
  std::string where() const;
  // Collective: whether every rank's status is ok, so that none goes on into a call that a
  // failed rank never makes. Where not, `print` gets this rank's error if it is rank 0's, or if
  // rank 0's status is ok (errors before the steps are mostly the same on every rank: printed
  // once).
  bool agree(Status const& status, std::function<void(Error const&)> const& print) const;
  // The root's values on every rank (MPI_Ibcast), the others waiting without taking a core from
  // the root's measurements. Collective.
  Status broadcast(std::vector<double>& values, int root) const;
  // Ends every rank of the job (MPI_Abort): what a failing rank does after printing its error.
  [[noreturn]] void abort_job(int code) const;

 private:
  Session() = default;
  bool owner_ = false;
  int rank_ = 0;
  int size_ = 1;
  int tag_bound_ = 32767;
  bool one_machine_ = true;
  std::string host_;
};

// "MPI_Iallreduce failed: <MPI's error string>", for a call that returned `code`.
Error mpi_error(char const* call, int code);
// A message's element count as MPI takes it (an int); an error past INT_MAX.
Expected<int> mpi_count(std::size_t elements);

}  // namespace cleave::runtime::mpi
