// tutti/tutti_mpi.h: a communicator from an MPI_Comm.
#include "api/c_support.hpp"
#include "bootstrap/mpi_session.hpp"
#include "comm/communicator.hpp"
#include "tutti/tutti_mpi.h"

namespace tutti {

Communicator communicator_from_mpi(MPI_Comm comm, const Options& options) {
  auto session = bootstrap::MpiSession::of_communicator(&comm);
  return Communicator(comm::Communicator::create(std::move(session), options));
}

}  // namespace tutti

extern "C" int tutti_comm_from_mpi(MPI_Comm comm, tutti_comm_t* out) {
  return tutti::c_support::guarded(
      [&] { return tutti::c_support::give(tutti::communicator_from_mpi(comm), out); });
}
