// WorldInfo: who this process is in the job, read from whichever launcher started it.
#pragma once

#include <string>

namespace tutti::bootstrap {

struct WorldInfo {
  int rank = 0;
  int size = 1;
  int local_rank =
      0;  // -1 when the launcher did not say; the Communicator derives it from host ids
  int local_size = 1;
  int cross_rank = 0;
  int cross_size = 1;
  std::string
      host_id;  // ranks with equal host_id share memory (TUTTI_HOST, else hostname + boot id)
  std::string source;  // which launcher's env this came from: "tuttirun", "openmpi", "pmi",
                       // "torchrun", "slurm", "default"

  // Store address, from TUTTI_STORE or MASTER_ADDR:MASTER_PORT; empty when none was given.
  std::string store_address;
  // True when this rank must host the TcpStore server itself (torchrun-style MASTER_ADDR/PORT, rank
  // 0).
  bool host_store = false;
  std::string job_token;  // TUTTI_JOB_TOKEN, may be empty
  std::string job_id;     // TUTTI_JOB_ID, or derived; empty: rank 0 draws one in the store
  // Started by an MPI launcher (Open MPI's OMPI_COMM_WORLD_*, or PMIx's PMIX_RANK): without a
  // store, MPI carries the store address (bootstrap/rendezvous.hpp).
  bool mpi_launcher = false;
  // Started by a PMI-1 launcher (MPICH's Hydra mpiexec, Slurm with PMI): the connection to it, as
  // the fd it passed (PMI_FD) or its host:port (PMI_PORT, with PMI_ID); -1 / empty when not.
  int pmi_fd = -1;
  std::string pmi_port;
  int pmi_id = -1;
  // The launcher says rank and size only through its own protocol (PMI_PORT's cmd=initack):
  // rank and size here are placeholders until the rendezvous (bootstrap/rendezvous.hpp).
  bool numbered_at_rendezvous = false;
  // Started by tuttirun (TUTTI_LAUNCHER): watch the launcher's store connection, and fail every
  // call once it is gone.
  bool launcher_lifeline = false;
  // tuttirun's number for this process (TUTTI_LAUNCH_ID): the lifeline sends heartbeats under it.
  int64_t launch_id = -1;
};

// Reads WorldInfo from the environment, trying tuttirun (TUTTI_*), Open MPI (OMPI_COMM_WORLD_*),
// PMI (PMI_RANK/PMI_SIZE), Kubeflow/torchrun (RANK, WORLD_SIZE, LOCAL_RANK, PET_*), Slurm
// (SLURM_*), in that order; with none of them, a world of one. Throws Error(kConfig) on
// inconsistent values.
WorldInfo world_info_from_env();

// Logs each TUTTI_* variable of the environment that tutti does not read: a warning naming the
// setting meant where one is near (TUTTI_ALOG: TUTTI_ALGO), else at info level (other tools'
// variables share the prefix). world_info_from_env calls it on rank 0 when tuttirun did not.
void warn_unknown_variables();

// The default host identity: hostname plus the kernel boot id (so that two containers with the same
// hostname on different machines never try shared memory with each other).
std::string default_host_id();

}  // namespace tutti::bootstrap
