// Small RAII socket layer shared by the store and the TCP transport. All blocking calls take a
// Deadline and use non-blocking sockets + poll underneath, so nothing can hang forever.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "core/deadline.hpp"
#include "net/fd.hpp"

namespace tutti::net {

struct Endpoint {
  std::string host;  // numeric address or name
  uint16_t port = 0;
  std::string to_string() const;  // "host:port" ([v6]:port for IPv6)
};

// "[::1]" -> "::1": a host as URLs and TUTTI_ADDR may write it, for socket calls; anything else
// unchanged.
std::string bare_host(std::string_view host);

// Parses "host:port" or "[v6addr]:port". Throws Error(kConfig) naming `what` on bad input.
Endpoint parse_endpoint(const std::string& text, const std::string& what);

// Listening TCP socket (non-blocking, SO_REUSEADDR), bound to host ("" or "0.0.0.0" = any) and port
// (0 = kernel picks). Returns the fd; bound_port tells the chosen port.
Fd listen_tcp(const std::string& host, uint16_t port, uint16_t* bound_port);

// Accepts one connection, waiting until deadline. Returns an invalid Fd on timeout.
// The accepted socket is non-blocking with TCP_NODELAY set.
Fd accept_tcp(int listen_fd, Deadline deadline, std::string* peer_address = nullptr);

// What a refused connection means to the caller. Before a server has been reached, it may not be
// listening yet (retry). Once a client has reached it, a refusal means it has ended: retrying
// would only wait out the deadline (a rank ending after the rank that hosted the job's store used
// to spend TUTTI_TIMEOUT on every store call of its exit).
enum class RefusedConnection { kRetry, kFinal };

// Connects to endpoint, retrying refused/unreachable connections with backoff until deadline
// (the peer may not be listening yet). Resolves names. Throws Error(kTimeout) naming the endpoint
// and the last error, or Error(kPeerFailure) at once for a refusal when `refused` is kFinal. The
// socket is non-blocking with TCP_NODELAY set. `before_connect`, when given, is called with each
// new socket before its connect(): what must hold from the handshake on (a congestion control
// whose start-up must never run) is set there.
Fd connect_tcp(const Endpoint& endpoint, Deadline deadline,
               RefusedConnection refused = RefusedConnection::kRetry,
               const std::function<void(int)>& before_connect = {});

// Writes/reads exactly the buffer, polling until done. Throws Error(kPeerFailure) when the peer
// closed the connection (message includes `peer`), Error(kTimeout) at the deadline.
void write_all(int fd, std::span<const std::byte> data, Deadline deadline, const std::string& peer);
void read_exact(int fd, std::span<std::byte> data, Deadline deadline, const std::string& peer);

// The local address of a connected socket (used to advertise "the address that reaches the store").
std::string local_address(int fd);

// Sets large send/receive buffers (best effort) for bulk data sockets.
void set_bulk_buffers(int fd, int bytes);

}  // namespace tutti::net
