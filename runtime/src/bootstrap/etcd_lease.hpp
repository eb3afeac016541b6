// EtcdLease: a lease this process holds in etcd and keeps alive from a thread of its own. Every key
// the process writes is attached to it, so when the process dies (no more keep-alives) etcd deletes
// its keys one TTL later: a dead rank's keys expire, and a job leaves nothing behind.
//
// It is not revoked when the process ends normally: a peer may still be reading keys this process
// wrote (a barrier's counter, an address), and revoking would pull them out from under it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include "bootstrap/etcd_client.hpp"

namespace tutti::bootstrap {

class EtcdLease {
 public:
  // Grants a lease of `ttl` (retrying until `deadline`: etcd may start later) and starts keeping
  // it alive every ttl / 3.
  EtcdLease(std::shared_ptr<EtcdClient> client, std::chrono::seconds ttl, Deadline deadline);
  ~EtcdLease();
  EtcdLease(const EtcdLease&) = delete;
  EtcdLease& operator=(const EtcdLease&) = delete;

  // The lease to attach to a write. A new one once etcd lost the old (the process stalled longer
  // than the TTL, or etcd was unreachable that long): the old one's keys are gone, which is logged.
  int64_t id() const;
  std::chrono::seconds ttl() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace tutti::bootstrap
