// The MpiSession of a libtutti built without MPI (TUTTI_WITH_MPI=OFF, or no MPI found): every
// entry point says so.
#include "bootstrap/mpi_session.hpp"
#include "core/error.hpp"

namespace tutti::bootstrap {
namespace {

[[noreturn]] void unavailable() {
  throw make_error(ErrorCode::kConfig,
                   "this libtutti was built without MPI: install Open MPI (libopenmpi-dev) and "
                   "rebuild with -DTUTTI_WITH_MPI=ON, or give a store (TUTTI_STORE, MASTER_ADDR) "
                   "or start the job with tuttirun");
}

}  // namespace

// No MPI session exists without MPI, so nothing calls this.
void MpiSession::require_transport_thread_level(int) const {}

bool MpiSession::available() {
  return false;
}

bool MpiSession::serves_pmi_launcher() {
  return false;
}

std::shared_ptr<MpiSession> MpiSession::world() {
  unavailable();
}

std::shared_ptr<MpiSession> MpiSession::of_communicator(const void*) {
  unavailable();
}

}  // namespace tutti::bootstrap
