// Builds the full mesh of channels of one rank through the Store: shared memory to peers on the
// same host, TCP to the others (TUTTI_TRANSPORT overrides), each connection authenticated with the
// job token. A peer that never arrives fails with Error(kTimeout) listing the missing ranks. When
// every rank shares this host, the transport also gets a LocalWindow (see local_window.hpp).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bootstrap/mpi_session.hpp"
#include "bootstrap/store.hpp"
#include "core/deadline.hpp"
#include "transport/fabric.hpp"
#include "transport/transport.hpp"
#include "tutti/options.hpp"

namespace tutti::transport {

// One communicator's mesh: who it is, and its Options (which transport, the buffer sizes, the
// TCP streams; the settings table's defaults unless the communicator's options say otherwise).
struct MeshConfig {
  int rank = 0;
  int size = 1;
  std::vector<std::string> host_ids;  // per rank; equal ids share memory
  std::string job_id;                 // namespaces store keys and shm segment names
  std::string job_token;
  std::string listen_address;  // address this rank's TCP listener binds and advertises
  Options options;
  // A window that does not fit in /dev/shm is an error when required (a world's: the job needs
  // it from the start), a warning and no window otherwise (a split's, made in the middle of a job).
  bool shm_window_required = true;
  // The CPUs this host's ranks may run on together (comm::host_cpus_of_ranks; 0: unknown, then
  // this process's own count): whether the window's waits spin or yield at once.
  int host_cpus = 0;
  // The MPI world (MPI bootstrap) for transport kMpi: every link goes over MPI point-to-point.
  std::shared_ptr<bootstrap::MpiSession> mpi;
};

// The links of this rank to every other (fabric.hpp), nothing more: no window.
std::shared_ptr<Fabric> connect_fabric(const MeshConfig& config, bootstrap::Store& store,
                                       Deadline deadline);

// Gives `transport` (of the communicator `config` describes: rank, size and host ids are the
// communicator's, job_id namespaces its store keys and segment names) its LocalWindow when every
// member shares this host and the window is not turned off, or records why not. Every member
// must call it.
void attach_local_window(const MeshConfig& config, Transport& transport, bootstrap::Store& store,
                         Deadline deadline);

// connect_fabric, then the transport of context 0 over every rank, with its window.
std::unique_ptr<Transport> connect_mesh(const MeshConfig& config, bootstrap::Store& store,
                                        Deadline deadline);

}  // namespace tutti::transport
