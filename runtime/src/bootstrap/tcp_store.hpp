// TcpStore: a Store served over TCP. The server runs inside tuttirun, or inside rank 0 when only
// MASTER_ADDR/MASTER_PORT are given. Clients must present the job token.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "bootstrap/store.hpp"
#include "net/socket.hpp"

namespace tutti::bootstrap {

class TcpStoreServer {
 public:
  // Listens on host:port (port 0 = any free port) and serves until destroyed. A client with a wrong
  // token is refused and logged; serving goes on. Handshakes run side by side in the accepting
  // thread (a connection silent for 5 s is dropped; at most 1024 wait at once, the oldest dropped
  // beyond that); only authenticated clients get a thread.
  TcpStoreServer(const std::string& host, uint16_t port, std::string job_token);
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  uint16_t port() const;
  // Connections refused (not a Hello, wrong token or kind), dropped in their handshake (silent,
  // evicted) or dropped later for a protocol error.
  size_t refused_connections() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

class TcpStore : public Store {
 public:
  // Connects (retrying until deadline: the server may start later) and authenticates. Calls that
  // take no deadline (set, add, missing, remove) give up after request_timeout.
  TcpStore(const net::Endpoint& server, std::string job_token, int rank, Deadline connect_deadline,
           std::chrono::milliseconds request_timeout = std::chrono::seconds(60));
  ~TcpStore() override;

  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key, Deadline deadline) override;
  int64_t add(const std::string& key, int64_t delta) override;
  std::vector<std::string> missing(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, Deadline deadline) override;
  bool remove(const std::string& key) override;
  std::string describe() const override;

  // The local address of the connection to the server: the address peers can reach us on.
  std::string local_address() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// A dedicated connection to the store server whose only purpose is to notice that the server (the
// launcher) has gone. A background thread blocks on it; when it drops, on_lost runs once (from that
// thread). Destroying the lifeline stops watching without calling on_lost.
class StoreLifeline {
 public:
  StoreLifeline(const net::Endpoint& server, const std::string& job_token, int rank,
                Deadline connect_deadline, std::function<void()> on_lost);
  ~StoreLifeline();
  StoreLifeline(const StoreLifeline&) = delete;
  StoreLifeline& operator=(const StoreLifeline&) = delete;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace tutti::bootstrap
