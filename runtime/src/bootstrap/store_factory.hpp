// Opens the Store a WorldInfo points at: TcpStore for host:port (starting the server first when
// this rank must host it), FileStore for file:/dir, EtcdStore for etcd://host:port, MemoryStore for
// a world of one without any address.
#pragma once

#include <chrono>
#include <memory>

#include "bootstrap/store.hpp"
#include "bootstrap/tcp_store.hpp"
#include "bootstrap/world_info.hpp"

namespace tutti::bootstrap {

struct StoreConnection {
  std::unique_ptr<TcpStoreServer> server;  // set when this rank hosts the store
  std::unique_ptr<Store> store;
  std::string local_address;  // the address of ours that reaches the store ("" if not TCP)
};

// `request_timeout`: how long a store call without a deadline of its own may take.
// `etcd_lease_ttl`: for an etcd store, how long a dead process's keys outlive it (0: forever).
StoreConnection open_store(const WorldInfo& info, Deadline deadline,
                           std::chrono::milliseconds request_timeout,
                           std::chrono::seconds etcd_lease_ttl = std::chrono::seconds(10));

}  // namespace tutti::bootstrap
