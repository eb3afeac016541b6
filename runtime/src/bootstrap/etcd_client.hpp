// EtcdClient: etcd's v3 API through its JSON gateway (POST /v3/kv/range and friends, the same API
// etcdctl speaks over gRPC). Keys and values travel base64-encoded; integers as JSON strings. Safe
// to call from several threads: each call takes a connection of its own from a small pool.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/deadline.hpp"
#include "net/socket.hpp"

namespace tutti::bootstrap {

// "etcd://host[:port][,host[:port]...][/prefix]": etcd's client endpoints (port 2379 by default)
// and the key prefix tutti's keys live under ("/tutti" by default).
struct EtcdAddress {
  std::vector<net::Endpoint> endpoints;
  std::string prefix;
};
// Error(kConfig) naming `what` (the variable it came from) on bad input.
EtcdAddress parse_etcd_address(const std::string& text, const std::string& what);
// The address back as text: "etcd://host:port,host:port/prefix".
std::string etcd_url(const EtcdAddress& address);

class EtcdClient {
 public:
  explicit EtcdClient(std::vector<net::Endpoint> endpoints);
  ~EtcdClient();
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  // POSTs `body` to `path` ("/v3/kv/range") and returns etcd's reply. A refused or failed
  // connection moves to the next endpoint and is retried until `deadline` (etcd may start later
  // than the ranks); then Error(kTimeout) naming the endpoints and the last failure. A refusal
  // etcd answers comes back as a reply with "error" and "code" (see failed()).
  // `cancelled` (optional) ends the retries early with kAborted once it turns true: a keep-alive
  // thread that is told to stop while etcd is away must not hold its process's exit.
  nlohmann::json post(const std::string& path, const nlohmann::json& body, Deadline deadline,
                      const std::atomic<bool>* cancelled = nullptr);

  // Opens a watch (`create_request` as in etcd's WatchCreateRequest) and hands each result of its
  // stream to `on_result` until it returns true (then true) or `deadline` passes (then false).
  bool watch(const nlohmann::json& create_request, Deadline deadline,
             const std::function<bool(const nlohmann::json&)>& on_result);

  // "http://10.0.0.5:2379,http://10.0.0.6:2379"
  std::string describe() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Whether a reply is a refusal ({"error": ..., "code": N}), and its message.
bool failed(const nlohmann::json& reply);
std::string failure_message(const nlohmann::json& reply);

// An int64 field of a reply (the gateway writes them as strings); `fallback` when absent.
int64_t json_int(const nlohmann::json& object, const char* field, int64_t fallback = 0);

}  // namespace tutti::bootstrap
