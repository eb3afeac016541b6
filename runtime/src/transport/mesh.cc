#include "transport/mesh.hpp"

#include <optional>

#include "core/error.hpp"
#include "core/log.hpp"
#include "transport/mesh_rendezvous.hpp"
#include "transport/shm/shm_mesh.hpp"
#include "transport/tcp/tcp_mesh.hpp"

namespace tutti::transport {
namespace {

void validate(const MeshConfig& c) {
  if (c.size < 1 || c.rank < 0 || c.rank >= c.size)
    throw make_error(ErrorCode::kConfig, "rank {} is not a rank of a world of {}", c.rank, c.size);
  if (c.host_ids.size() != static_cast<size_t>(c.size))
    throw make_error(ErrorCode::kInternal, "rank {}: {} host ids for a world of {}", c.rank,
                     c.host_ids.size(), c.size);
  if (c.job_id.empty())
    throw make_error(ErrorCode::kInternal, "rank {}: connect_mesh needs a job id", c.rank);
  if (c.choice == TransportChoice::kShm) {
    for (int r = 0; r < c.size; ++r)
      if (c.host_ids[r] != c.host_ids[c.rank])
        throw make_error(ErrorCode::kConfig,
                         "TUTTI_TRANSPORT=shm but rank {} is on host {} and rank {} on host {}; "
                         "shared memory only reaches ranks on one host (use auto or tcp)",
                         c.rank, c.host_ids[c.rank], r, c.host_ids[r]);
  }
}

}  // namespace

std::unique_ptr<Transport> connect_mesh(const MeshConfig& config, bootstrap::Store& store,
                                        Deadline deadline) {
  validate(config);
  MeshContext context{config, store, deadline};
  std::vector<int> tcp_peers, shm_peers, all_peers;
  for (int r = 0; r < config.size; ++r) {
    if (r == config.rank) continue;
    all_peers.push_back(r);
    (uses_shm(config, config.rank, r) ? shm_peers : tcp_peers).push_back(r);
  }

  // Publish first, then wait for everyone: a rank that never starts is then reported by every
  // other rank, rather than hidden behind a peer that waits for it.
  std::optional<TcpMesh> tcp;
  std::optional<ShmMesh> shm;
  if (!tcp_peers.empty()) tcp.emplace(context, tcp_peers);
  if (!shm_peers.empty()) shm.emplace(context, shm_peers);
  std::vector<std::string> endpoint_keys;
  for (int peer : all_peers)
    endpoint_keys.push_back(context.key(uses_shm(config, config.rank, peer) ? "shm" : "tcp", peer));
  context.wait_for(all_peers, endpoint_keys, "publish their endpoints",
                   "the store (" + store.describe() + ")");

  std::vector<std::unique_ptr<Channel>> channels(config.size);
  if (shm) shm->map_peers();
  if (tcp) tcp->connect(channels);
  if (shm) shm->connect(channels);
  log::debug("rank {} connected: {} tcp, {} shm peers", config.rank, tcp_peers.size(),
             shm_peers.size());
  return std::make_unique<Transport>(config.rank, std::move(channels));
}

}  // namespace tutti::transport
