// The MPI transport of a libtutti built without MPI: asking for it says so.
#include "core/error.hpp"
#include "transport/mpi_links.hpp"

namespace tutti::transport {

std::vector<std::unique_ptr<Link>> connect_mpi_links(const MeshConfig& config) {
  throw make_error(ErrorCode::kConfig,
                   "rank {}: TUTTI_TRANSPORT=mpi, but this libtutti was built without MPI "
                   "(TUTTI_WITH_MPI): rebuild it with Open MPI (libopenmpi-dev) or use tcp or shm",
                   config.rank);
}

}  // namespace tutti::transport
