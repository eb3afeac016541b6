#include "bootstrap/store_factory.hpp"

#include <thread>

#include "bootstrap/etcd_store.hpp"
#include "bootstrap/file_store.hpp"
#include "bootstrap/memory_store.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "net/host_interfaces.hpp"

namespace tutti::bootstrap {
namespace {

// A FileStore directory outlives its job. Keys an earlier job with the same job id left there would
// be read as this job's (peers' addresses, shared-memory names) and fail far from the cause, in
// connect() or shm_open(). Each rank therefore claims its rank with an atomic counter first: a
// second claim means the keys are stale (or two processes were started as the same rank).
void claim_rank(Store& store, const WorldInfo& info, const std::string& directory) {
  const std::string key = fmt::format("{}/claimed/{}", info.job_id, info.rank);
  if (store.add(key, 1) == 1) return;
  throw make_error(
      ErrorCode::kConfig,
      "file store directory '{}' already holds keys of job '{}' for rank {}: stale keys "
      "from an earlier job in {} (or two processes of this job started as rank {}); give "
      "each job its own directory or TUTTI_JOB_ID, or remove the contents of {}",
      directory, info.job_id, info.rank, directory, info.rank, directory);
}

// In etcd an earlier run's keys go by themselves, one lease TTL after its processes stopped (they
// share each process's lease, so a rank's claim goes with the rest of its keys). A rank that finds
// its claim taken waits that long before it calls the keys stale; a claim that stays belongs to a
// live process: two processes started as one rank. (A rerun of a job id that ended less than a
// TTL ago works, and pays up to TTL + ttl / 3 + 3 s; tuttirun --store gives each attempt a prefix
// of its own instead.)
void claim_rank_in_etcd(EtcdStore& store, const WorldInfo& info, Deadline deadline) {
  const std::string key = fmt::format("{}/claimed/{}", info.job_id, info.rank);
  const auto ttl = store.lease_ttl();
  const EtcdStore::Claim claim =
      store.claim(key, deadline,
                  fmt::format("rank {}: keys of an earlier run of job '{}' are still there",
                              info.rank, info.job_id));
  if (claim == EtcdStore::Claim::kHeld)
    throw make_error(
        ErrorCode::kConfig,
        "{} already holds keys of job '{}' for rank {}{}: two processes of this job started "
        "as rank {}, or an earlier run with the same job id is still alive; give each job its "
        "own prefix (etcd://host:port/PREFIX) or TUTTI_JOB_ID",
        store.describe(), info.job_id, info.rank,
        ttl.count() == 0
            ? " (no lease: TUTTI_ETCD_LEASE_TTL=0, so they never expire)"
            : fmt::format(", still after {} s", (ttl + std::chrono::seconds(2)).count()),
        info.rank);
  if (claim == EtcdStore::Claim::kAfterExpiry) {
    // This rank's old keys are gone. The other ranks' went at about the same moment, but their
    // leases were last renewed up to a keep-alive period (ttl / 3) apart: wait that out too, so no
    // peer's old address is read as its new one.
    std::this_thread::sleep_for(ttl / 3 + std::chrono::seconds(1));
  }
}

}  // namespace

StoreConnection open_store(const WorldInfo& info, Deadline deadline,
                           std::chrono::milliseconds request_timeout,
                           std::chrono::seconds etcd_lease_ttl) {
  StoreConnection connection;
  const std::string& address = info.store_address;
  if (address.empty()) {
    if (info.size == 1) {
      connection.store = std::make_unique<MemoryStore>();
      return connection;
    }
    throw make_error(ErrorCode::kConfig,
                     "rank {} of {} ({} launcher) has no rendezvous store: set TUTTI_STORE "
                     "(host:port of a TcpStore, or file:/shared/dir) or MASTER_ADDR and "
                     "MASTER_PORT (rank 0 then hosts the store), or start the job with tuttirun",
                     info.rank, info.size, info.source);
  }
  if (address.starts_with("file:")) {
    std::string directory = address.substr(5);
    if (directory.empty())
      throw make_error(ErrorCode::kConfig,
                       "TUTTI_STORE='{}' names no directory; write file:/shared/dir", address);
    connection.store = std::make_unique<FileStore>(directory, request_timeout);
    claim_rank(*connection.store, info, directory);
    return connection;
  }
  if (address.starts_with("etcd") || address.starts_with("https://")) {
    if (info.host_store)
      throw make_error(ErrorCode::kConfig,
                       "MASTER_ADDR:MASTER_PORT='{}' names an etcd store, which a rank cannot "
                       "host: set TUTTI_STORE=etcd://host:port instead",
                       address);
    const EtcdAddress etcd = parse_etcd_address(address, "TUTTI_STORE");
    std::unique_ptr<EtcdStore> store;
    try {
      store = std::make_unique<EtcdStore>(etcd, etcd_lease_ttl, request_timeout, deadline);
    } catch (const Error& e) {
      throw make_error(e.code(), "rank {} of {}: {}", info.rank, info.size, e.what());
    }
    claim_rank_in_etcd(*store, info, deadline);
    connection.store = std::move(store);
    // Peers reach this rank at its address on the route to etcd, as they would at the one that
    // reaches a TcpStore (TUTTI_ADDR and TUTTI_SOCKET_IFNAME still win).
    connection.local_address =
        net::address_on_route_to(net::bare_host(etcd.endpoints.front().host)).value_or("");
    return connection;
  }
  net::Endpoint endpoint =
      net::parse_endpoint(address, info.host_store ? "MASTER_ADDR:MASTER_PORT" : "TUTTI_STORE");
  if (endpoint.port == 0)
    throw make_error(ErrorCode::kConfig, "store address '{}' needs a non-zero port", address);
  if (info.host_store) {
    // Listen on every interface: MASTER_ADDR names this host as the others see it, which may not
    // be an address we can bind to directly (a Service name, a NAT address).
    connection.server = std::make_unique<TcpStoreServer>("", endpoint.port, info.job_token);
    log::debug("rank {} hosts the store on port {}", info.rank, endpoint.port);
  }
  auto store =
      std::make_unique<TcpStore>(endpoint, info.job_token, info.rank, deadline, request_timeout);
  connection.local_address = store->local_address();
  connection.store = std::move(store);
  return connection;
}

}  // namespace tutti::bootstrap
