// How a rank meets the others. A store the launcher names (TUTTI_STORE, MASTER_ADDR) wins. Without
// one, a job started by mpirun meets through MPI (rank 0 hosts a TcpStore, MPI_Bcast tells the
// others its address and a job token it draws), a job started by a PMI-1 launcher (MPICH's Hydra,
// Slurm) through the launcher's key-value space (put, barrier, get); a world of one needs nothing.
#pragma once

#include <chrono>
#include <memory>

#include "bootstrap/mpi_session.hpp"
#include "bootstrap/pmi/pmi_client.hpp"
#include "bootstrap/store_factory.hpp"
#include "bootstrap/world_info.hpp"

namespace tutti::bootstrap {

struct Rendezvous {
  StoreConnection connection;
  // The job token every connection presents: the launcher's, or one rank 0 drew and sent round.
  std::string job_token;
  // The MPI world, when MPI carried the rendezvous or the MPI transport needs it.
  std::shared_ptr<MpiSession> mpi;
  // The PMI launcher's connection (kept until the world goes: cmd=finalize then).
  std::unique_ptr<PmiClient> pmi;
  std::string how;  // "store at 10.0.0.1:29500", "MPI (Open MPI v4.1.4)", "PMI (kvs_123_0)"
};

// `need_mpi`: the MPI transport was asked for, so the MPI world is needed even when a store was
// given. Error(kConfig) when it cannot be had (built without MPI, not started by mpirun) or when
// MPI's rank and size disagree with the launcher's variables. A launcher that gave only PMIx's
// variables (no rank and size tutti reads) leaves the numbering to MPI: `info` gets it.
// `etcd_lease_ttl` goes to open_store().
Rendezvous rendezvous(WorldInfo& info, bool need_mpi, Deadline deadline,
                      std::chrono::milliseconds request_timeout,
                      std::chrono::seconds etcd_lease_ttl);

// The ranks of `mpi`'s communicator meet through MPI: rank 0 hosts a TcpStore and MPI_Bcast sends
// its address, and `job_token` (drawn by rank 0 when empty), to the others.
Rendezvous rendezvous_over_mpi(std::shared_ptr<MpiSession> mpi, const std::string& job_token,
                               Deadline deadline, std::chrono::milliseconds request_timeout);

}  // namespace tutti::bootstrap
