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
  // Watches the lifelines of clients that send heartbeats (StoreLifeline with a launch id): one
  // silent for `silence` after its first heartbeat (a stopped or hung process: its beating thread
  // stopped with it) makes on_silent(launch id, its pid, seconds silent) run once, from that
  // lifeline's thread. Lifelines without heartbeats (older ranks) are never judged. Call before
  // clients come.
  void watch_heartbeats(std::chrono::milliseconds silence,
                        std::function<void(int64_t, int32_t, double)> on_silent);
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

// A dedicated connection to the store server whose purpose is to notice that the server (the
// launcher) has gone. A background thread blocks on it; when it drops, on_lost runs once (from that
// thread). Destroying the lifeline stops watching without calling on_lost.
// With a launch id (>= 0: the launcher's number for this process) the thread also sends a
// heartbeat every second, by which the launcher tells a stopped or hung process from a busy one
// (TcpStoreServer::watch_heartbeats). Wire: 'I', the id (8 bytes) and the pid (4 bytes, both little
// endian) once, then 'h' per beat; a server that does not watch reads and drops them.
class StoreLifeline {
 public:
  StoreLifeline(const net::Endpoint& server, const std::string& job_token, int rank,
                Deadline connect_deadline, std::function<void()> on_lost, int64_t launch_id = -1);
  ~StoreLifeline();
  StoreLifeline(const StoreLifeline&) = delete;
  StoreLifeline& operator=(const StoreLifeline&) = delete;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace tutti::bootstrap
