// Open MPI's MPI_Allreduce as tutti-bench's baseline. Defined only when built with MPI
// (TUTTI_BENCH_HAVE_MPI); baseline.cc never calls it otherwise.
#pragma once

#include <memory>

#include "baseline.hpp"

#ifndef TUTTI_BENCH_HAVE_MPI
#define TUTTI_BENCH_HAVE_MPI 0
#endif

namespace tutti::bench {

// MPI_Init_thread (MPI_THREAD_SERIALIZED, for TUTTI_WITH_MPI's transport too); tutti::init() then
// meets the other ranks through MPI unless a store is given. MPI_Finalize when destroyed.
std::unique_ptr<BaselineSession> start_mpi_session();

}  // namespace tutti::bench
