#include "runtime/mpi/mpi_session.h"

#include <chrono>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <thread>

namespace cleave::runtime::mpi {

Error mpi_error(char const* call, int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return Error(ErrorCode::execution_failed,
               std::string(call) +
                   " failed: " + std::string(text, static_cast<std::size_t>(length)));
}

Expected<int> mpi_count(std::size_t elements) {
  if (elements > static_cast<std::size_t>(INT_MAX))
    return Error(ErrorCode::unsupported,
                 "a message of " + std::to_string(elements) +
                     " elements passes MPI's int count; split the tensor further");
  return static_cast<int>(elements);
}

Expected<Session> Session::start() {
  int provided = 0;
  if (int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided); rc != MPI_SUCCESS)
    return mpi_error("MPI_Init_thread", rc);
  Session s;
  s.owner_ = true;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  // A surviving rank that writes to a dead peer's socket, or to its output pipe while mpirun
  // tears the job down, must see EPIPE, not die of SIGPIPE: mpirun then names that survivor,
  // not the rank that failed, as the process that ended the job (seen once across two hosts).
  std::signal(SIGPIPE, SIG_IGN);
  if (provided < MPI_THREAD_MULTIPLE)
    return Error(ErrorCode::unsupported,
                 "this MPI library does not support MPI_THREAD_MULTIPLE, which the device "
                 "workers need (each calls MPI from its own thread)");
  MPI_Comm_rank(MPI_COMM_WORLD, &s.rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &s.size_);
  int* bound = nullptr;
  int found = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &bound, &found);
  if (found) s.tag_bound_ = *bound;
  char name[MPI_MAX_PROCESSOR_NAME];
  int length = 0;
  MPI_Get_processor_name(name, &length);
  s.host_.assign(name, static_cast<std::size_t>(length));
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int on_node = 0;
  MPI_Comm_size(node, &on_node);
  MPI_Comm_free(&node);
  s.one_machine_ = on_node == s.size_;
  return s;
}

Session::Session(Session&& other) noexcept
    : owner_(other.owner_), rank_(other.rank_), size_(other.size_), tag_bound_(other.tag_bound_),
      one_machine_(other.one_machine_), host_(std::move(other.host_)) {
  other.owner_ = false;
}

Session::~Session() {
  if (owner_) MPI_Finalize();
}

std::string Session::where() const {
  return "rank " + std::to_string(rank_) + " of " + std::to_string(size_) + " on host " + host_;
}

bool Session::agree(Status const& status, std::function<void(Error const&)> const& print) const {
  int all = status ? 1 : 0, first = all;
  MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Bcast(&first, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (!status && (rank_ == 0 || first == 1)) print(status.error());
  return all == 1;
}

Status Session::broadcast(std::vector<double>& values, int root) const {
  MPI_Request request = MPI_REQUEST_NULL;
  if (int rc = MPI_Ibcast(values.data(), static_cast<int>(values.size()), MPI_DOUBLE, root,
                          MPI_COMM_WORLD, &request);
      rc != MPI_SUCCESS)
    return mpi_error("MPI_Ibcast", rc);
  for (int done = 0; !done;) {
    if (int rc = MPI_Test(&request, &done, MPI_STATUS_IGNORE); rc != MPI_SUCCESS)
      return mpi_error("MPI_Test", rc);
    if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return Status::ok();
}

void Session::abort_job(int code) const {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::abort();  // MPI_Abort does not return; should it, the process still ends
}

}  // namespace cleave::runtime::mpi
