#include "transport/tcp/tcp_stream.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "core/error.hpp"

namespace tutti::transport {
namespace {

// iovecs per sendmsg/readv (IOV_MAX is 1024): enough for FramedChannel's gathers of many small
// pieces, small enough for the stack of any thread that progresses a channel (4 KiB).
constexpr size_t kMaxIov = 256;

bool peer_gone(int err) {
  return err == EPIPE || err == ECONNRESET || err == ECONNABORTED || err == ETIMEDOUT ||
         err == EHOSTUNREACH || err == ENETUNREACH;
}

}  // namespace

TcpStream::TcpStream(net::Fd socket, int peer, std::string peer_host, std::string peer_address,
                     int buffer_bytes)
    : socket_(std::move(socket)),
      peer_(peer),
      peer_host_(std::move(peer_host)),
      peer_address_(std::move(peer_address)) {
  int fd = socket_.get();
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
    throw_system_error(fmt::format("fcntl(O_NONBLOCK) on the socket to {}", describe()), errno);
  int one = 1;
  // Best effort: a frame header must not wait for Nagle behind the previous payload's ACK.
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  // Explicit sizes turn the kernel's autotuning off, so only a user's TUTTI_TCP_BUFFER_BYTES sets
  // them: between veth pods on shared vCPUs fixed 4 MiB buffers saw 100x the (spurious)
  // retransmits of the autotuned ones and made a 97.5 MiB allreduce up to 9% slower.
  if (buffer_bytes > 0) net::set_bulk_buffers(fd, buffer_bytes);
}

std::string TcpStream::describe() const {
  return fmt::format("rank {} on host {} (tcp {})", peer_, peer_host_, peer_address_);
}

void TcpStream::throw_lost(int err) const {
  throw make_error(
      ErrorCode::kPeerFailure,
      "lost connection to rank {} on host {} (tcp {}): the peer process died or closed "
      "the connection{}{}",
      peer_, peer_host_, peer_address_, err ? ": " : "", err ? std::strerror(err) : "");
}

size_t TcpStream::write_some(ConstPieces pieces) {
  std::array<iovec, kMaxIov> iov;
  size_t count = 0;
  for (const auto& p : pieces) {
    if (p.empty()) continue;
    if (count == kMaxIov) break;
    iov[count++] = {const_cast<std::byte*>(p.data()), p.size()};
  }
  if (count == 0) return 0;
  msghdr msg{};
  msg.msg_iov = iov.data();
  msg.msg_iovlen = count;
  for (;;) {
    ssize_t n = sendmsg(socket_.get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n >= 0) return static_cast<size_t>(n);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
    if (peer_gone(errno)) throw_lost(errno);
    throw_system_error(fmt::format("sendmsg to {}", describe()), errno);
  }
}

size_t TcpStream::read_some(Pieces pieces) {
  std::array<iovec, kMaxIov> iov;
  size_t count = 0;
  for (const auto& p : pieces) {
    if (p.empty()) continue;
    if (count == kMaxIov) break;
    iov[count++] = {p.data(), p.size()};
  }
  if (count == 0) return 0;
  for (;;) {
    ssize_t n = readv(socket_.get(), iov.data(), static_cast<int>(count));
    if (n > 0) return static_cast<size_t>(n);
    if (n == 0) throw_lost(0);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
    if (peer_gone(errno)) throw_lost(errno);
    throw_system_error(fmt::format("readv from {}", describe()), errno);
  }
}

void TcpStream::drain_before_close(Deadline deadline) {
  if (!socket_.valid()) return;
  ::shutdown(socket_.get(), SHUT_WR);
  std::array<std::byte, 64 << 10> sink;
  while (!deadline.expired()) {
    pollfd p{socket_.get(), POLLIN, 0};
    if (::poll(&p, 1, deadline.remaining_ms(1)) <= 0) continue;
    ssize_t n = ::recv(socket_.get(), sink.data(), sink.size(), 0);
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) return;  // the peer closed
  }
}

}  // namespace tutti::transport
