// The MpiSession of a libtutti built with MPI: one of the few files that include <mpi.h>.
#include "bootstrap/mpi_session.hpp"

// The C API only: Open MPI's deprecated C++ bindings would need libmpi_cxx.
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>
#include <sched.h>

#include <array>
#include <cstdint>
#include <mutex>

#include "core/error.hpp"
#include "core/log.hpp"

namespace tutti::bootstrap {
namespace {

std::string mpi_error_text(int rc) {
  std::array<char, MPI_MAX_ERROR_STRING> text{};
  int len = 0;
  if (MPI_Error_string(rc, text.data(), &len) != MPI_SUCCESS)
    return fmt::format("MPI error {}", rc);
  return std::string(text.data(), static_cast<size_t>(len));
}

void check(int rc, std::string_view what, int rank) {
  if (rc == MPI_SUCCESS) return;
  throw make_error(ErrorCode::kSystem, "rank {}: {} failed: {}", rank, what, mpi_error_text(rc));
}

bool mpi_initialized() {
  int flag = 0;
  MPI_Initialized(&flag);
  return flag != 0;
}

bool mpi_finalized() {
  int flag = 0;
  MPI_Finalized(&flag);
  return flag != 0;
}

std::string library_version() {
  std::array<char, MPI_MAX_LIBRARY_VERSION_STRING> text{};
  int len = 0;
  if (MPI_Get_library_version(text.data(), &len) != MPI_SUCCESS) return "MPI";
  std::string v(text.data(), static_cast<size_t>(len));
  return v.substr(0, v.find_first_of(",\n"));
}

class Session final : public MpiSession {
 public:
  // `parent`: the communicator to duplicate; `owns_mpi`: this session called MPI_Init.
  Session(MPI_Comm parent, bool owns_mpi) : owns_mpi_(owns_mpi) {
    int rank = -1;
    MPI_Comm_rank(parent, &rank);
    check(MPI_Comm_dup(parent, &comm_), "MPI_Comm_dup", rank);
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    MPI_Comm local = MPI_COMM_NULL;
    check(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local),
          "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)", rank_);
    MPI_Comm_rank(local, &local_rank_);
    MPI_Comm_size(local, &local_size_);
    MPI_Comm_free(&local);
    MPI_Query_thread(&thread_level_);
    library_ = library_version();
    log::debug("rank {} of {} (local {}/{}) through {}, thread level {}{}", rank_, size_,
               local_rank_, local_size_, library_, thread_level_,
               owns_mpi_ ? "; tutti initialized MPI" : "; the application initialized MPI");
  }

  ~Session() override {
    if (mpi_finalized()) {
      if (owns_mpi_)
        log::warn("MPI was finalized by someone else before tutti, which initialized it, was done");
      return;
    }
    MPI_Comm_free(&comm_);
    if (owns_mpi_) MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  int local_size() const override { return local_size_; }
  int thread_level() const override { return thread_level_; }
  std::string library() const override { return library_; }
  const void* communicator() const override { return &comm_; }

  std::string broadcast(const std::string& value, Deadline deadline,
                        std::string_view what) override {
    uint64_t bytes = rank_ == 0 ? value.size() : 0;
    ibcast(&bytes, 1, MPI_UINT64_T, deadline, what);
    std::string out = rank_ == 0 ? value : std::string(bytes, '\0');
    ibcast(out.data(), static_cast<int>(bytes), MPI_CHAR, deadline, what);
    return out;
  }

 private:
  // MPI_Ibcast from rank 0, tested until done or the deadline (then Error(kTimeout)).
  void ibcast(void* data, int count, MPI_Datatype type, Deadline deadline, std::string_view what) {
    MPI_Request request = MPI_REQUEST_NULL;
    check(MPI_Ibcast(data, count, type, 0, comm_, &request), "MPI_Ibcast", rank_);
    for (int done = 0;;) {
      check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test of an MPI_Ibcast", rank_);
      if (done) return;
      if (deadline.expired())
        throw make_error(ErrorCode::kTimeout,
                         "rank {} of {}: timed out (TUTTI_TIMEOUT) waiting for {} from rank 0 by "
                         "MPI_Ibcast; did every rank call tutti_init?",
                         rank_, size_, what);
      sched_yield();
    }
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  bool owns_mpi_;
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  int thread_level_ = MPI_THREAD_SINGLE;
  std::string library_;
};

std::mutex g_world_mutex;
std::weak_ptr<MpiSession> g_world;

}  // namespace

bool MpiSession::available() {
  return true;
}

bool MpiSession::serves_pmi_launcher() {
#if defined(MPICH) || defined(MPICH_VERSION) || defined(I_MPI_VERSION)
  return true;
#else
  return false;
#endif
}

std::shared_ptr<MpiSession> MpiSession::world() {
  std::lock_guard lock(g_world_mutex);
  if (auto live = g_world.lock()) return live;
  if (mpi_finalized())
    throw make_error(ErrorCode::kConfig,
                     "MPI was already finalized in this process, and MPI cannot be initialized "
                     "again: call tutti_init before MPI_Finalize (tutti finalizes MPI itself only "
                     "when it initialized it)");
  bool owns = false;
  if (!mpi_initialized()) {
    // The MPI transport may be driven from any thread that drives a communicator.
    int provided = MPI_THREAD_SINGLE;
    int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    if (rc != MPI_SUCCESS)
      throw make_error(ErrorCode::kSystem,
                       "MPI_Init_thread failed: {}; was the program started by mpirun?",
                       mpi_error_text(rc));
    owns = true;
  }
  auto session = std::make_shared<Session>(MPI_COMM_WORLD, owns);
  g_world = session;
  return session;
}

std::shared_ptr<MpiSession> MpiSession::of_communicator(const void* comm) {
  if (!mpi_initialized() || mpi_finalized())
    throw make_error(ErrorCode::kNotInitialized,
                     "a tutti communicator from an MPI communicator needs MPI to be initialized "
                     "(call MPI_Init first, and MPI_Finalize only after tutti is done)");
  if (comm == nullptr || *static_cast<const MPI_Comm*>(comm) == MPI_COMM_NULL)
    throw make_error(ErrorCode::kInvalidArgument, "the MPI communicator is MPI_COMM_NULL");
  return std::make_shared<Session>(*static_cast<const MPI_Comm*>(comm), false);
}

void MpiSession::require_transport_thread_level(int rank) const {
  if (thread_level() >= MPI_THREAD_SERIALIZED) return;
  throw make_error(ErrorCode::kConfig,
                   "rank {}: MPI ({}) was initialized with thread level {}, but the MPI transport "
                   "calls MPI from whichever thread drives a communicator and needs "
                   "MPI_THREAD_SERIALIZED ({}) or MPI_THREAD_MULTIPLE ({}): initialize MPI with "
                   "MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...), or let tutti_init do it",
                   rank, library(), thread_level(), MPI_THREAD_SERIALIZED, MPI_THREAD_MULTIPLE);
}

}  // namespace tutti::bootstrap
