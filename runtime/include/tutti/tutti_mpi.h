/* tutti and MPI: a tutti communicator over the ranks of an MPI communicator. Only for a libtutti
 * built with MPI (TUTTI_WITH_MPI; the library links the same MPI as the application). MPI must be
 * initialized before and finalized after: tutti never initializes or finalizes MPI for these.
 *
 * The communicator numbers its ranks as `comm` does. Rank 0 of `comm` hosts the communicator's
 * rendezvous store, and MPI_Bcast sends its address and a job token to the others. Its channels
 * follow TUTTI_TRANSPORT (or Options::transport): mpi = MPI point-to-point on a duplicate of `comm`
 * (MPI must then provide MPI_THREAD_SERIALIZED or MPI_THREAD_MULTIPLE), else tcp / shm as usual.
 * Collective over `comm`. */
#ifndef TUTTI_TUTTI_MPI_H
#define TUTTI_TUTTI_MPI_H

#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include "tutti/tutti.h"

#ifdef __cplusplus
extern "C" {
#endif

/* *out: a new communicator, the caller's to tutti_comm_free. Needs no tutti_init. */
TUTTI_API int tutti_comm_from_mpi(MPI_Comm comm, tutti_comm_t* out);

#ifdef __cplusplus
} /* extern "C" */

#include "tutti/tutti.hpp"

namespace tutti {

TUTTI_CXX_API Communicator communicator_from_mpi(MPI_Comm comm,
                                                 const Options& options = Options::from_env());

}  // namespace tutti
#endif

#endif /* TUTTI_TUTTI_MPI_H */
