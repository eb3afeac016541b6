// Accepts connections on a listening socket and runs their Hello handshakes side by side (one
// poll() over the listener and every connection still handshaking), so that no stranger can delay
// or fail a job: a silent socket, a slow one or one sending garbage costs a pending slot for a few
// seconds, never the time of the real ranks behind it. Unauthenticated connections are bounded
// twice: each must finish its handshake within a short deadline, and at most max_pending may be
// waiting at once (the oldest is dropped for a newcomer). Real ranks send their Hello the moment
// they connect, so it is usually read in the same pass that accepts them.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <list>
#include <optional>
#include <string>
#include <vector>

#include "core/deadline.hpp"
#include "core/error.hpp"
#include "net/handshake.hpp"
#include "net/socket.hpp"

namespace tutti::net {

struct HandshakePolicy {
  std::string expected_token;
  // Kinds this port serves; a Hello of another kind is refused in the handshake.
  std::vector<ConnectionKind> kinds;
  // Bytes the client sends right after an accepted Hello (the data connection's stream header),
  // read within the same per-connection deadline.
  size_t trailer_bytes = 0;
  // From accept to the last byte of Hello and trailer.
  std::chrono::milliseconds per_connection = std::chrono::seconds(5);
  // Connections accepted but not yet through their handshake.
  size_t max_pending = 256;
  // Who is accepting, for log lines: "rank 3's data port", "store server on port 4000".
  std::string label;
};

struct AcceptedConnection {
  Fd fd;
  Hello hello;
  std::string address;  // the peer's "host:port"
  std::vector<std::byte> trailer;
};

class HandshakeAcceptor {
 public:
  // listen_fd stays owned by the caller and must outlive the acceptor.
  HandshakeAcceptor(int listen_fd, HandshakePolicy policy);
  ~HandshakeAcceptor();
  HandshakeAcceptor(const HandshakeAcceptor&) = delete;
  HandshakeAcceptor& operator=(const HandshakeAcceptor&) = delete;

  // The next connection whose handshake (and trailer) succeeded; nullopt once deadline passes or
  // wake_fd (when >= 0) becomes readable. Refusals and drops are logged and counted, never thrown;
  // only a failure of this process itself (poll() failing, out of file descriptors with nothing
  // left to drop) throws.
  std::optional<AcceptedConnection> next(Deadline deadline, int wake_fd = -1);

  // Connections refused (not a Hello, wrong token or kind) or dropped (silent too long, evicted).
  // Readable from any thread.
  size_t refused() const { return refused_.load(); }
  size_t pending() const { return pending_.size(); }

 private:
  struct Pending;
  using PendingList = std::list<Pending>;

  void accept_new();
  // Reads what the connection has sent; true when it is finished with (ready, refused or gone).
  bool progress(Pending& p);
  // Refuses (or drops) the connection, logs why and counts it.
  void drop(PendingList::iterator it, const std::string& why);
  // The same for a handshake that failed with error; one that merely closed is not counted.
  void drop(PendingList::iterator it, const Error& error);
  void drop_expired();

  int listen_fd_;
  HandshakePolicy policy_;
  PendingList pending_;  // oldest first
  std::list<AcceptedConnection> ready_;
  std::atomic<size_t> refused_{0};
};

}  // namespace tutti::net
