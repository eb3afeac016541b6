#include "transport/mesh.hpp"

#include <optional>

#include "core/error.hpp"
#include "core/log.hpp"
#include "core/parse.hpp"
#include "transport/mesh_rendezvous.hpp"
#include "transport/mpi_links.hpp"
#include "transport/shm/shm_mesh.hpp"
#include "transport/shm/shm_sizing.hpp"
#include "transport/shm/shm_window.hpp"
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
  if (c.options.transport == TransportKind::kShm) {
    for (int r = 0; r < c.size; ++r)
      if (c.host_ids[r] != c.host_ids[c.rank])
        throw make_error(ErrorCode::kConfig,
                         "TUTTI_TRANSPORT=shm but rank {} is on host {} and rank {} on host {}; "
                         "shared memory only reaches ranks on one host (use auto or tcp)",
                         c.rank, c.host_ids[c.rank], r, c.host_ids[r]);
  }
}

// Below this a window holds too few pipeline chunks to be worth its synchronization.
constexpr size_t kMinWindowBytes = 64 << 10;

size_t window_bytes(const MeshConfig& c) {
  size_t bytes = c.options.shm_window_bytes;
  if (bytes != 0 && bytes < kMinWindowBytes)
    throw make_error(
        ErrorCode::kConfig,
        "TUTTI_SHM_WINDOW_BYTES={} is below the minimum of {} bytes per rank; raise it "
        "or set 0 to go without the shared-memory window",
        bytes, kMinWindowBytes);
  return bytes;
}

// Empty when every rank can map one window of `area` bytes per rank; otherwise why not.
std::string why_no_window(const MeshConfig& c, size_t bytes, size_t area) {
  if (c.size < 2) return "a world of one rank has no peers to share memory with";
  for (int r = 0; r < c.size; ++r)
    if (r != c.rank && !uses_shm(c, c.rank, r))
      return fmt::format(
          "rank {} (host {}) reaches rank {} (host {}) over {}, so not all ranks "
          "share memory (TUTTI_TRANSPORT={})",
          c.rank, c.host_ids[c.rank], r, c.host_ids[r],
          kind_name(c.options.transport == TransportKind::kMpi ? TransportKind::kMpi
                                                               : TransportKind::kTcp),
          kind_name(c.options.transport));
  if (bytes == 0) return "TUTTI_SHM_WINDOW_BYTES=0 turned the shared-memory window off";
  if (area < kMinWindowBytes)
    return fmt::format(
        "TUTTI_SHM_WINDOW_BUDGET={} leaves each of {} ranks {} of window, below the {} minimum",
        parse::bytes_text(c.options.shm_window_budget), c.size, parse::bytes_text(area),
        parse::bytes_text(kMinWindowBytes));
  return {};
}

}  // namespace

std::shared_ptr<Fabric> connect_fabric(const MeshConfig& config, bootstrap::Store& store,
                                       Deadline deadline) {
  validate(config);
  (void)window_bytes(config);  // a bad setting fails before anything is published
  if (config.options.transport == TransportKind::kMpi)
    return std::make_shared<Fabric>(config.rank, connect_mpi_links(config));
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

  std::vector<std::unique_ptr<Link>> links(config.size);
  if (shm) shm->map_peers();
  if (tcp) tcp->connect(links);
  if (shm) shm->connect(links);
  log::debug("rank {} connected: {} tcp, {} shm peers", config.rank, tcp_peers.size(),
             shm_peers.size());
  return std::make_shared<Fabric>(config.rank, std::move(links));
}

void attach_local_window(const MeshConfig& config, Transport& transport, bootstrap::Store& store,
                         Deadline deadline) {
  const size_t bytes = window_bytes(config);
  const size_t area = window_area_for(config.size, bytes, config.options.shm_window_budget);
  std::string no_window = why_no_window(config, bytes, area);
  if (!no_window.empty()) {
    transport.set_local_window(nullptr, no_window);
    return;
  }
  MeshContext context{config, store, deadline};
  const int spin =
      config.options.shm_spin_rounds.value_or(default_spin_rounds(config.size, config.host_cpus));
  auto window = connect_local_window(context, transport, area, spin, no_window);
  transport.set_local_window(std::move(window), no_window);
}

std::unique_ptr<Transport> connect_mesh(const MeshConfig& config, bootstrap::Store& store,
                                        Deadline deadline) {
  std::shared_ptr<Fabric> fabric = connect_fabric(config, store, deadline);
  std::vector<int> members(config.size);
  for (int r = 0; r < config.size; ++r) members[r] = r;
  auto transport = fabric->make_transport(0, members, config.rank);
  attach_local_window(config, *transport, store, deadline);
  return transport;
}

}  // namespace tutti::transport
