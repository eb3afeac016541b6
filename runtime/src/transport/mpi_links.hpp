// The MPI transport (TUTTI_TRANSPORT=mpi): a Link to every peer over MPI point-to-point, so the
// collectives run on MPI's network stack (InfiniBand through Open MPI, for example). Each link is a
// FramedChannel over an MpiStream (mpi/mpi_links.cc): framing, tag matching, call signatures and
// abort notices are the same code as tcp's and shm's; only the bytes move by MPI_Isend/MPI_Imrecv
// on a communicator the fabric duplicates for itself.
#pragma once

#include <memory>
#include <vector>

#include "transport/link.hpp"
#include "transport/mesh.hpp"

namespace tutti::transport {

// links[config.rank] stays null. Error(kConfig) when config.mpi is null (no MPI bootstrap), when
// this libtutti has no MPI, or when MPI's thread level is below MPI_THREAD_SERIALIZED;
// Error(kConfig) too when MPI's communicator does not have config.size ranks with this one as
// config.rank.
std::vector<std::unique_ptr<Link>> connect_mpi_links(const MeshConfig& config);

}  // namespace tutti::transport
