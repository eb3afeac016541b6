// EtcdStore: a Store in etcd (TUTTI_STORE=etcd://host:port[/prefix]), for jobs whose ranks are too
// many for one process's TcpStore, or whose platform already runs etcd. Every key lives under the
// prefix; a get() that finds nothing watches the key instead of polling. Keys are attached to this
// process's lease (EtcdLease): a dead rank's keys expire one TTL after it stops.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "bootstrap/etcd_client.hpp"
#include "bootstrap/etcd_lease.hpp"
#include "bootstrap/store.hpp"

namespace tutti::bootstrap {

class EtcdStore : public Store {
 public:
  // Reaches etcd (retrying until `connect_deadline`) and takes a lease of `lease_ttl` (0: none;
  // keys then stay until removed). Calls without a deadline of their own give up after
  // `request_timeout`.
  EtcdStore(const EtcdAddress& address, std::chrono::seconds lease_ttl,
            std::chrono::milliseconds request_timeout, Deadline connect_deadline);
  ~EtcdStore() override;

  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key, Deadline deadline) override;
  int64_t add(const std::string& key, int64_t delta) override;
  std::vector<std::string> missing(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, Deadline deadline) override;
  bool remove(const std::string& key) override;
  std::string describe() const override;

  // Takes `key` for this process: an atomic add that must find it absent. A key an earlier
  // process left is waited out (its lease expires at most a TTL after that process stopped; the
  // wait is logged with `waiting`): kAfterExpiry. kHeld when it is still there then (a live
  // process holds it), or when there is no lease to expire, or `deadline` passed.
  enum class Claim { kFree, kAfterExpiry, kHeld };
  Claim claim(const std::string& key, Deadline deadline, const std::string& waiting);

  // Removes every key under the prefix but `keep` (what tuttirun does with a job's keys when the
  // job starts, keeping its own claim, and when it ends); returns how many it removed.
  int64_t clear(const std::string& keep = "");
  // The same within `deadline` (at a job's end: an etcd that went away must not hold tuttirun's
  // exit for a request timeout; the keys expire with their leases anyway).
  int64_t clear(const std::string& keep, Deadline deadline);

  // The lease's TTL (0: none): how long a dead process's keys outlive it.
  std::chrono::seconds lease_ttl() const;

 private:
  std::string full_key(const std::string& key) const;
  Deadline request_deadline() const;
  int64_t lease_id() const;
  nlohmann::json checked(const char* what, const std::string& key, nlohmann::json reply) const;

  std::shared_ptr<EtcdClient> client_;
  std::string prefix_;
  std::chrono::milliseconds request_timeout_;
  std::unique_ptr<EtcdLease> lease_;
};

}  // namespace tutti::bootstrap
