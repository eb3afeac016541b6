// Open MPI's MPI_Allreduce as tutti-bench's baseline. Defined only when built with MPI
// (TUTTI_BENCH_HAVE_MPI); baseline.cc never calls it otherwise.
#pragma once

#include <memory>

#include "baseline.hpp"

#ifndef TUTTI_BENCH_HAVE_MPI
#define TUTTI_BENCH_HAVE_MPI 0
#endif

namespace tutti::bench {

// MPI_Init, then, when the job was started by mpirun without a tutti store (no TUTTI_STORE, no
// MASTER_ADDR/MASTER_PORT), rank 0 picks a free TCP port on its host and MPI_Bcast tells every rank
// to use it as MASTER_ADDR/MASTER_PORT, so tutti::init() finds rank 0's store. MPI_Finalize when
// destroyed.
std::unique_ptr<BaselineSession> start_mpi_session();

}  // namespace tutti::bench
