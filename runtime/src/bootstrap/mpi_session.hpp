// MpiSession: tutti's use of an MPI library, when libtutti is built with MPI (TUTTI_WITH_MPI). It
// initializes MPI only when the application has not (and then finalizes it when the last user
// goes), never finalizes what it did not initialize, and works on its own duplicate of the
// communicator it was given, so none of its traffic can meet the application's. No header of tutti
// includes <mpi.h>: the communicator is handed around as an opaque pointer that only the MPI
// sources dereference.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/deadline.hpp"

namespace tutti::bootstrap {

class MpiSession {
 public:
  // Whether this libtutti was built with MPI.
  static bool available();
  // Whether this MPI, not tutti's own PMI client, meets the others of a job that a PMI launcher
  // started (Hydra's mpiexec, srun --mpi=pmi2): true for the MPICH family (MPICH, Intel MPI), whose
  // MPI_Init speaks that PMI (and then owns the launcher's connection: a second client on it breaks
  // both). Open MPI's does not: it would come up as a world of one.
  static bool serves_pmi_launcher();

  // The session of MPI_COMM_WORLD, shared by every user in the process: MPI_Init_thread (asking for
  // MPI_THREAD_MULTIPLE) unless the application called MPI_Init itself. Error(kConfig) when built
  // without MPI, or when MPI was already finalized.
  static std::shared_ptr<MpiSession> world();

  // A session on a duplicate of the caller's communicator (`comm` points at an MPI_Comm); MPI must
  // already be initialized. Collective over that communicator.
  static std::shared_ptr<MpiSession> of_communicator(const void* comm);

  virtual ~MpiSession() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Rank and size among the ranks of this communicator that share memory with this one
  // (MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)).
  virtual int local_rank() const = 0;
  virtual int local_size() const = 0;
  // The thread level MPI provides (MPI_THREAD_SINGLE = 0 ... MPI_THREAD_MULTIPLE = 3).
  virtual int thread_level() const = 0;
  // Error(kConfig) naming `rank` unless the thread level lets the MPI transport call MPI from
  // whichever thread drives a communicator (MPI_THREAD_SERIALIZED or more). Every rank checks its
  // own at once, before meeting the others: checked later, the ranks that failed first closed the
  // store, and the others reported "connection to store closed" instead.
  void require_transport_thread_level(int rank) const;
  // "Open MPI v4.1.4" (the first line of MPI_Get_library_version).
  virtual std::string library() const = 0;

  // Rank 0's `value` on every rank (MPI_Ibcast of its size, then of its bytes). Error(kTimeout)
  // at the deadline naming `what` (a rank that never calls it leaves the others waiting).
  virtual std::string broadcast(const std::string& value, Deadline deadline,
                                std::string_view what) = 0;

  // Points at the session's own MPI_Comm (a duplicate), for the MPI transport: a second duplicate
  // of it carries the transport's messages.
  virtual const void* communicator() const = 0;
};

}  // namespace tutti::bootstrap
