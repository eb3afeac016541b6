// Builds the full mesh of channels of one rank through the Store: shared memory to peers on the
// same host, TCP to the others (TUTTI_TRANSPORT overrides), each connection authenticated with the
// job token. A peer that never arrives fails with Error(kTimeout) listing the missing ranks.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "bootstrap/store.hpp"
#include "core/deadline.hpp"
#include "transport/transport.hpp"

namespace tutti::transport {

enum class TransportChoice { kAuto, kTcp, kShm };

struct MeshConfig {
  int rank = 0;
  int size = 1;
  std::vector<std::string> host_ids;  // per rank; equal ids share memory
  std::string job_id;                 // namespaces store keys and shm segment names
  std::string job_token;
  std::string listen_address;  // address this rank's TCP listener binds and advertises
  TransportChoice choice = TransportChoice::kAuto;
  size_t shm_ring_bytes = 1 << 20;
};

std::unique_ptr<Transport> connect_mesh(const MeshConfig& config, bootstrap::Store& store,
                                        Deadline deadline);

}  // namespace tutti::transport
