#include "bootstrap/store_factory.hpp"

#include "bootstrap/file_store.hpp"
#include "bootstrap/memory_store.hpp"
#include "core/error.hpp"
#include "core/log.hpp"

namespace tutti::bootstrap {

StoreConnection open_store(const WorldInfo& info, Deadline deadline) {
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
    connection.store = std::make_unique<FileStore>(directory);
    return connection;
  }
  Endpoint endpoint =
      parse_endpoint(address, info.host_store ? "MASTER_ADDR:MASTER_PORT" : "TUTTI_STORE");
  if (endpoint.port == 0)
    throw make_error(ErrorCode::kConfig, "store address '{}' needs a non-zero port", address);
  if (info.host_store) {
    // Listen on every interface: MASTER_ADDR names this host as the others see it, which may not
    // be an address we can bind to directly (a Service name, a NAT address).
    connection.server = std::make_unique<TcpStoreServer>("", endpoint.port, info.job_token);
    log::debug("rank {} hosts the store on port {}", info.rank, endpoint.port);
  }
  auto store = std::make_unique<TcpStore>(endpoint, info.job_token, info.rank, deadline);
  connection.local_address = store->local_address();
  connection.store = std::move(store);
  return connection;
}

}  // namespace tutti::bootstrap
