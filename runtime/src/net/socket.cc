#include "net/socket.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/log.hpp"
#include "core/parse.hpp"
#include "net/poll_util.hpp"

namespace tutti::net {
namespace {

void set_nodelay(int fd) {
  int one = 1;
  // Best effort: small store requests and handshakes must not wait for Nagle.
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

std::string numeric_host(const sockaddr* addr, socklen_t len) {
  char host[NI_MAXHOST] = {};
  if (::getnameinfo(addr, len, host, sizeof(host), nullptr, 0, NI_NUMERICHOST) != 0) return "?";
  std::string text(host);
  // A dual-stack listener sees IPv4 peers as ::ffff:a.b.c.d; peers want the plain IPv4 form.
  if (text.starts_with("::ffff:") && text.find('.') != std::string::npos) text = text.substr(7);
  return text;
}

uint16_t sockaddr_port(const sockaddr_storage& ss) {
  if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(ss).sin_port);
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(ss).sin6_port);
  return 0;
}

// Errors after which the peer may simply not be up yet: worth trying again until the deadline.
bool retryable_connect_error(int err) {
  switch (err) {
    case ECONNREFUSED:
    case ENETUNREACH:
    case ETIMEDOUT:
    case EHOSTUNREACH:
    case ECONNRESET:  // a listener whose backlog overflowed may reset us
    case ECONNABORTED:
    case EADDRNOTAVAIL:  // the pod's address may not be assigned yet
      return true;
    default:
      return false;
  }
}

bool retryable_resolve_error(int gai) {
  // The pod's DNS name usually appears some time after the pod starts.
  return gai == EAI_AGAIN || gai == EAI_NONAME || gai == EAI_FAIL
#ifdef EAI_NODATA
         || gai == EAI_NODATA
#endif
      ;
}

struct AddrInfoDeleter {
  void operator()(addrinfo* ai) const { ::freeaddrinfo(ai); }
};
using AddrInfoPtr = std::unique_ptr<addrinfo, AddrInfoDeleter>;

// A connect to an unused port in the ephemeral range can connect to itself (TCP simultaneous
// open). Such a socket looks connected but nobody is on the other side.
bool connected_to_self(int fd) {
  sockaddr_storage local{}, peer{};
  socklen_t local_len = sizeof(local), peer_len = sizeof(peer);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0) return false;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0) return false;
  return local_len == peer_len && std::memcmp(&local, &peer, local_len) == 0;
}

// One connection attempt to one address. Returns the connected socket, or an invalid Fd with
// *err set to the reason. Throws only for errors that retrying cannot fix.
Fd try_connect(const addrinfo& ai, Deadline deadline, int* err,
               const std::function<void(int)>& before_connect) {
  Fd fd(::socket(ai.ai_family, ai.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai.ai_protocol));
  if (!fd.valid()) {
    *err = errno;
    return Fd();
  }
  if (before_connect) before_connect(fd.get());
  if (::connect(fd.get(), ai.ai_addr, ai.ai_addrlen) != 0) {
    if (errno != EINPROGRESS && errno != EINTR) {
      *err = errno;
      return Fd();
    }
    // A SYN sent into a black hole must not eat the whole deadline when other addresses or a
    // later retry could work.
    Deadline attempt = deadline.earlier(Deadline::after(std::chrono::seconds(10)));
    pollfd p{fd.get(), POLLOUT, 0};
    for (;;) {
      int n = ::poll(&p, 1, poll_timeout_ms(attempt));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw_system_error("poll() while connecting", errno);
      if (n > 0) break;
      if (attempt.expired()) {
        *err = ETIMEDOUT;
        return Fd();
      }
    }
    int so_error = 0;
    socklen_t len = sizeof(so_error);
    if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &so_error, &len) != 0) so_error = errno;
    if (so_error != 0) {
      *err = so_error;
      return Fd();
    }
  }
  if (connected_to_self(fd.get())) {
    *err = ECONNREFUSED;
    return Fd();
  }
  set_nodelay(fd.get());
  return fd;
}

// Waits until fd is ready for `events` or the deadline passes. Returns false on timeout.
bool wait_ready(int fd, short events, Deadline deadline) {
  pollfd p{fd, events, 0};
  for (;;) {
    int n = ::poll(&p, 1, poll_timeout_ms(deadline));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) throw_system_error("poll() on a socket", errno);
    if (n == 0 && deadline.expired()) return false;
  }
}

}  // namespace

std::string bare_host(std::string_view host) {
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  return std::string(host);
}

std::string Endpoint::to_string() const {
  if (host.find(':') != std::string::npos) return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

Endpoint parse_endpoint(const std::string& text, const std::string& what) {
  auto bad = [&](std::string_view why) {
    return make_error(ErrorCode::kConfig,
                      "{}='{}' is not a valid address ({}); expected host:port or [ipv6]:port",
                      what, text, why);
  };
  Endpoint endpoint;
  std::string port_text;
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos) throw bad("missing ']'");
    endpoint.host = text.substr(1, close - 1);
    if (close + 1 >= text.size() || text[close + 1] != ':') throw bad("missing ':port' after ']'");
    port_text = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string::npos) throw bad("missing ':port'");
    endpoint.host = text.substr(0, colon);
    if (endpoint.host.find(':') != std::string::npos)
      throw bad("IPv6 addresses must be written in brackets");
    port_text = text.substr(colon + 1);
  }
  if (endpoint.host.empty()) throw bad("empty host");
  try {
    endpoint.port = static_cast<uint16_t>(parse::integer(port_text, "port", 0, 65535));
  } catch (const Error&) {
    throw bad("port must be a number from 0 to 65535");
  }
  return endpoint;
}

Fd listen_tcp(const std::string& host, uint16_t port, uint16_t* bound_port) {
  const bool any = host.empty() || host == "0.0.0.0" || host == "::";
  // For "any" we prefer one dual-stack IPv6 socket (reachable over IPv4 and IPv6) and fall back
  // to IPv4 where the kernel has no IPv6.
  std::vector<std::pair<std::string, int>> candidates;
  if (any) {
    candidates = {{"::", AF_INET6}, {"0.0.0.0", AF_INET}};
  } else {
    candidates = {{host, AF_UNSPEC}};
  }
  int last_err = 0;
  std::string last_what;
  for (const auto& [name, family] : candidates) {
    addrinfo hints{};
    hints.ai_family = family;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo* raw = nullptr;
    std::string service = std::to_string(port);
    int gai = ::getaddrinfo(name.c_str(), service.c_str(), &hints, &raw);
    if (gai != 0) {
      last_what = fmt::format("cannot resolve '{}': {}", name, ::gai_strerror(gai));
      continue;
    }
    AddrInfoPtr list(raw);
    for (addrinfo* ai = list.get(); ai != nullptr; ai = ai->ai_next) {
      Fd fd(
          ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol));
      if (!fd.valid()) {
        last_err = errno;
        last_what = fmt::format("socket() for {}: {}", name, std::strerror(errno));
        continue;
      }
      int one = 1;
      (void)::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
      if (ai->ai_family == AF_INET6 && any) {
        int zero = 0;
        (void)::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
      }
      if (::bind(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0 ||
          ::listen(fd.get(), SOMAXCONN) != 0) {
        last_err = errno;
        last_what = fmt::format("cannot listen on {}: {}", Endpoint{name, port}.to_string(),
                                std::strerror(errno));
        // Port in use is final: falling back to IPv4 would only hide the real problem.
        if (last_err == EADDRINUSE) break;
        continue;
      }
      if (bound_port != nullptr) {
        sockaddr_storage ss{};
        socklen_t len = sizeof(ss);
        if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&ss), &len) != 0)
          throw_system_error("getsockname() on a listening socket", errno);
        *bound_port = sockaddr_port(ss);
      }
      return fd;
    }
    if (last_err == EADDRINUSE) break;
  }
  if (last_err == EADDRINUSE)
    throw make_error(ErrorCode::kSystem,
                     "{} (another process uses port {}; pick another port or stop that process)",
                     last_what, port);
  throw make_error(ErrorCode::kSystem, "{}", last_what);
}

Fd accept_tcp(int listen_fd, Deadline deadline, std::string* peer_address) {
  for (;;) {
    sockaddr_storage ss{};
    socklen_t len = sizeof(ss);
    int fd =
        ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      Fd accepted(fd);
      set_nodelay(fd);
      if (peer_address != nullptr) {
        *peer_address =
            Endpoint{numeric_host(reinterpret_cast<sockaddr*>(&ss), len), sockaddr_port(ss)}
                .to_string();
      }
      return accepted;
    }
    int err = errno;
    if (err == EINTR || err == ECONNABORTED || err == EPROTO) continue;
    if (err != EAGAIN && err != EWOULDBLOCK) throw_system_error("accept()", err);
    if (!wait_ready(listen_fd, POLLIN, deadline)) return Fd();
  }
}

Fd connect_tcp(const Endpoint& endpoint, Deadline deadline, RefusedConnection refused,
               const std::function<void(int)>& before_connect) {
  auto backoff = std::chrono::milliseconds(10);
  const auto max_backoff = std::chrono::milliseconds(500);
  std::string last_error = "no attempt made before the deadline";
  int attempts = 0;
  // A long retry says what it is retrying and why, first after 5 s, then every 15 s: an
  // unresolvable MASTER_ADDR used to be silent for the whole 60 s of TUTTI_TIMEOUT.
  const auto started = std::chrono::steady_clock::now();
  auto next_note = started + std::chrono::seconds(5);
  for (;;) {
    ++attempts;
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    addrinfo* raw = nullptr;
    std::string service = std::to_string(endpoint.port);
    int gai = ::getaddrinfo(endpoint.host.c_str(), service.c_str(), &hints, &raw);
    if (gai != 0) {
      if (gai == EAI_SYSTEM) {
        last_error = fmt::format("cannot resolve host: {}", std::strerror(errno));
      } else {
        last_error = fmt::format("cannot resolve host: {}", ::gai_strerror(gai));
        if (!retryable_resolve_error(gai))
          throw make_error(ErrorCode::kConfig, "cannot connect to {}: {}", endpoint.to_string(),
                           last_error);
      }
    } else {
      AddrInfoPtr list(raw);
      // A name may resolve to several addresses (localhost: ::1 and 127.0.0.1) of which the
      // server listens on one: only every address refusing means it has ended.
      bool every_one_refused = true;
      for (addrinfo* ai = list.get(); ai != nullptr; ai = ai->ai_next) {
        int err = 0;
        Fd fd = try_connect(*ai, deadline, &err, before_connect);
        if (fd.valid()) {
          if (attempts > 1)
            log::debug("connected to {} after {} attempts", endpoint.to_string(), attempts);
          return fd;
        }
        last_error = std::strerror(err);
        if (err != ECONNREFUSED) every_one_refused = false;
        if (!retryable_connect_error(err))
          throw make_error(ErrorCode::kSystem, "cannot connect to {}: {}", endpoint.to_string(),
                           last_error);
      }
      if (every_one_refused && refused == RefusedConnection::kFinal)
        throw make_error(ErrorCode::kPeerFailure,
                         "cannot connect to {}: {}; it was reached before, so it has ended",
                         endpoint.to_string(), last_error);
    }
    if (deadline.expired()) break;
    if (const auto now = std::chrono::steady_clock::now(); now >= next_note) {
      next_note = now + std::chrono::seconds(15);
      log::warn(
          "still retrying the connection to {} after {:.0f} s and {} attempts: {}; "
          "retrying for {:.0f} s more (check the address and port{})",
          endpoint.to_string(), std::chrono::duration<double>(now - started).count(), attempts,
          last_error, std::chrono::duration<double>(deadline.remaining()).count(),
          last_error.starts_with("cannot resolve")
              ? ", e.g. MASTER_ADDR or TUTTI_STORE; a pod's DNS name can take a while to "
                "appear"
              : "; the peer or store may not be listening yet");
    }
    auto pause = std::min<std::chrono::nanoseconds>(backoff, deadline.remaining());
    std::this_thread::sleep_for(pause);
    backoff = std::min(backoff * 2, max_backoff);
  }
  throw make_error(ErrorCode::kTimeout,
                   "timed out connecting to {} after {} attempts (last error: {}); check that the "
                   "peer is running and that the address and port are reachable from this host",
                   endpoint.to_string(), attempts, last_error);
}

void write_all(int fd, std::span<const std::byte> data, Deadline deadline,
               const std::string& peer) {
  size_t done = 0;
  while (done < data.size()) {
    // MSG_NOSIGNAL: a peer that went away must be an Error, never a SIGPIPE that kills us.
    ssize_t n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    int err = errno;
    if (n < 0 && err == EINTR) continue;
    if (n < 0 && (err == EAGAIN || err == EWOULDBLOCK)) {
      if (!wait_ready(fd, POLLOUT, deadline))
        throw make_error(ErrorCode::kTimeout,
                         "timed out writing to {} ({} of {} bytes sent); the peer stopped reading",
                         peer, done, data.size());
      continue;
    }
    if (err == EPIPE || err == ECONNRESET || err == ENOTCONN)
      throw make_error(ErrorCode::kPeerFailure, "connection to {} closed (while sending: {})", peer,
                       std::strerror(err));
    throw_system_error(fmt::format("send() to {}", peer), err);
  }
}

void read_exact(int fd, std::span<std::byte> data, Deadline deadline, const std::string& peer) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::recv(fd, data.data() + done, data.size() - done, 0);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n == 0)
      throw make_error(ErrorCode::kPeerFailure,
                       "connection to {} closed (received {} of {} expected bytes)", peer, done,
                       data.size());
    int err = errno;
    if (err == EINTR) continue;
    if (err == EAGAIN || err == EWOULDBLOCK) {
      if (!wait_ready(fd, POLLIN, deadline))
        throw make_error(ErrorCode::kTimeout, "timed out reading from {} ({} of {} bytes received)",
                         peer, done, data.size());
      continue;
    }
    if (err == ECONNRESET || err == EPIPE || err == ENOTCONN || err == ETIMEDOUT)
      throw make_error(ErrorCode::kPeerFailure, "connection to {} closed (while receiving: {})",
                       peer, std::strerror(err));
    throw_system_error(fmt::format("recv() from {}", peer), err);
  }
}

std::string local_address(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0)
    throw_system_error("getsockname()", errno);
  return numeric_host(reinterpret_cast<sockaddr*>(&ss), len);
}

void set_bulk_buffers(int fd, int bytes) {
  // Best effort: the kernel caps these at net.core.{w,r}mem_max, which is fine.
  (void)::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
  (void)::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
}

}  // namespace tutti::net
