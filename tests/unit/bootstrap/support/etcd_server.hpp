// A real etcd (Debian's etcd-server) for the tests: started on free ports in a temporary directory,
// stopped (and its data removed) when the object goes. One per test process: the suites share it,
// each under a prefix of its own.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "bootstrap/etcd_client.hpp"
#include "unit/bootstrap/support/test_util.hpp"

namespace tutti::bootstrap::testing {

class EtcdServer {
 public:
  // The process's etcd, started on first use; nullptr when there is no etcd binary (the reason is
  // in skip_reason()).
  static EtcdServer* shared();
  static std::string skip_reason();

  EtcdServer();
  ~EtcdServer();
  EtcdServer(const EtcdServer&) = delete;
  EtcdServer& operator=(const EtcdServer&) = delete;

  net::Endpoint endpoint() const { return {"127.0.0.1", client_port_}; }
  // "etcd://127.0.0.1:PORT/PREFIX" with a prefix no other caller in this process got.
  std::string fresh_url(const std::string& what);

 private:
  TempDir dir_;
  uint16_t client_port_ = 0;
  pid_t pid_ = -1;
  int next_prefix_ = 0;
};

}  // namespace tutti::bootstrap::testing
