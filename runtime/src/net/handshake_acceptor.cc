#include "net/handshake_acceptor.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "core/error.hpp"
#include "core/log.hpp"
#include "net/poll_util.hpp"

namespace tutti::net {
namespace {

std::string_view kind_name(ConnectionKind kind) {
  switch (kind) {
    case ConnectionKind::kStore:
      return "store";
    case ConnectionKind::kStoreLifeline:
      return "store lifeline";
    case ConnectionKind::kData:
      return "data";
  }
  return "unknown";
}

std::string kind_names(const std::vector<ConnectionKind>& kinds) {
  std::string out;
  for (ConnectionKind k : kinds)
    out += fmt::format("{}{}", out.empty() ? "" : " or ", kind_name(k));
  return out;
}

// One byte on a freshly accepted socket: its send buffer is empty, so this never blocks.
bool send_verdict(int fd, std::byte verdict) {
  return ::send(fd, &verdict, 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1;
}

}  // namespace

struct HandshakeAcceptor::Pending {
  Fd fd;
  std::string address;
  Deadline deadline;
  HelloDecoder decoder;
  std::optional<Hello> hello;  // set once the Hello is accepted; the trailer follows
  std::vector<std::byte> trailer;
  size_t trailer_received = 0;
};

HandshakeAcceptor::HandshakeAcceptor(int listen_fd, HandshakePolicy policy)
    : listen_fd_(listen_fd), policy_(std::move(policy)) {}

HandshakeAcceptor::~HandshakeAcceptor() = default;

std::optional<AcceptedConnection> HandshakeAcceptor::next(Deadline deadline, int wake_fd) {
  std::vector<pollfd> fds;
  for (;;) {
    drop_expired();
    if (!ready_.empty()) {
      AcceptedConnection c = std::move(ready_.front());
      ready_.pop_front();
      return c;
    }
    fds.clear();
    fds.push_back(pollfd{listen_fd_, POLLIN, 0});
    fds.push_back(pollfd{wake_fd, POLLIN, 0});  // poll() skips a negative fd
    for (const Pending& p : pending_) fds.push_back(pollfd{p.fd.get(), POLLIN, 0});
    const Deadline wake_at =
        pending_.empty() ? deadline : deadline.earlier(pending_.front().deadline);
    const int n = ::poll(fds.data(), fds.size(), poll_timeout_ms(wake_at));
    if (n < 0 && errno != EINTR)
      throw_system_error(policy_.label + ": poll() while accepting", errno);
    if (n > 0) {
      if (fds[1].revents != 0) return std::nullopt;
      // Connections already accepted go first, so a flood of newcomers cannot evict them before
      // their waiting bytes are read.
      size_t i = 2;
      for (auto it = pending_.begin(); it != pending_.end(); ++i) {
        if (fds[i].revents == 0) {
          ++it;
          continue;
        }
        try {
          if (progress(*it)) {
            it = pending_.erase(it);
            continue;
          }
          ++it;
        } catch (const Error& e) {
          auto next = std::next(it);
          drop(it, e);
          it = next;
        }
      }
      if (fds[0].revents != 0) accept_new();
    }
    if (ready_.empty() && deadline.expired()) return std::nullopt;
  }
}

void HandshakeAcceptor::accept_new() {
  // Bounded per pass so that connections already pending are served in between.
  for (size_t accepted = 0; accepted < policy_.max_pending; ++accepted) {
    std::string address;
    Fd fd;
    try {
      fd = accept_tcp(listen_fd_, Deadline::after(std::chrono::seconds(0)), &address);
    } catch (const Error& e) {
      // Out of file descriptors (or buffers): the pending strangers are what we can give back.
      if (pending_.empty()) throw;
      drop(pending_.begin(), fmt::format("dropped to free resources ({})", e.what()));
      return;
    }
    if (!fd.valid()) return;
    pending_.push_back(Pending{std::move(fd),
                               address,
                               Deadline::after(policy_.per_connection),
                               HelloDecoder(address),
                               {},
                               {},
                               0});
    auto newest = std::prev(pending_.end());
    try {
      // A real rank has usually sent its whole Hello by the time we accept it.
      if (progress(*newest)) pending_.erase(newest);
    } catch (const Error& e) {
      drop(newest, e);
    }
    if (pending_.size() > policy_.max_pending)
      drop(pending_.begin(),
           fmt::format("dropped connection from {}: it was the oldest of the {} connections "
                       "waiting for their handshake, the most this port holds",
                       pending_.front().address, policy_.max_pending));
  }
}

bool HandshakeAcceptor::progress(Pending& p) {
  std::array<std::byte, 4096> buffer{};
  for (;;) {
    std::span<std::byte> into;
    if (!p.hello) {
      into = std::span(buffer).first(std::min(buffer.size(), p.decoder.wanted()));
    } else {
      into = std::span(p.trailer).subspan(p.trailer_received);
    }
    if (!into.empty()) {
      const ssize_t n = ::recv(p.fd.get(), into.data(), into.size(), MSG_DONTWAIT);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
      if (n < 0)
        throw make_error(ErrorCode::kPeerFailure,
                         "connection from {} failed during its handshake: {}", p.address,
                         std::strerror(errno));
      if (n == 0)
        throw make_error(ErrorCode::kPeerFailure, "connection from {} closed during its handshake",
                         p.address);
      if (!p.hello) {
        p.decoder.feed(into.first(static_cast<size_t>(n)));
      } else {
        p.trailer_received += static_cast<size_t>(n);
      }
    }
    if (!p.hello && p.decoder.complete()) {
      Hello hello = p.decoder.finish(policy_.expected_token);
      if (std::find(policy_.kinds.begin(), policy_.kinds.end(), hello.kind) == policy_.kinds.end())
        throw make_error(
            ErrorCode::kAuth,
            "refused connection from {} (rank {}): it opened a {} connection, but this "
            "port takes only {} connections; check the peer's address table",
            p.address, hello.rank, kind_name(hello.kind), kind_names(policy_.kinds));
      if (!send_verdict(p.fd.get(), kHelloAccepted))
        throw make_error(ErrorCode::kPeerFailure, "connection from {} closed before its verdict",
                         p.address);
      p.hello = std::move(hello);
      p.trailer.resize(policy_.trailer_bytes);
    }
    if (p.hello && p.trailer_received == p.trailer.size()) {
      ready_.push_back(AcceptedConnection{std::move(p.fd), std::move(*p.hello), p.address,
                                          std::move(p.trailer)});
      return true;
    }
  }
}

void HandshakeAcceptor::drop(PendingList::iterator it, const std::string& why) {
  // Only a connection still in its Hello can be told it was refused; the verdict is best effort.
  if (!it->hello) (void)send_verdict(it->fd.get(), kHelloRefused);
  ++refused_;
  log::warn("{}: {}", policy_.label, why);
  pending_.erase(it);
}

void HandshakeAcceptor::drop(PendingList::iterator it, const Error& error) {
  if (error.code() != ErrorCode::kPeerFailure) {
    drop(it, error.what());
    return;
  }
  // Clients that simply go away (TCP health probes, port scanners) are not worth a warning.
  log::debug("{}: {}", policy_.label, error.what());
  pending_.erase(it);
}

void HandshakeAcceptor::drop_expired() {
  while (!pending_.empty() && pending_.front().deadline.expired()) {
    const Pending& p = pending_.front();
    drop(pending_.begin(),
         fmt::format("dropped connection from {}: no complete handshake within {} s (a stranger "
                     "or a stalled client; the job goes on without it)",
                     p.address, std::chrono::duration<double>(policy_.per_connection).count()));
  }
}

}  // namespace tutti::net
