#include "transport/shm/shm_stream.hpp"

#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "core/error.hpp"
#include "core/log.hpp"

namespace tutti::transport {
namespace {

constexpr auto kLivenessInterval = std::chrono::milliseconds(1);

int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
#else
  errno = ENOSYS;
  return -1;
#endif
}

}  // namespace

ShmStream::ShmStream(int peer, std::string peer_host, pid_t peer_pid,
                     std::shared_ptr<ShmSegment> own_segment, size_t rx_index,
                     std::shared_ptr<ShmSegment> peer_segment, size_t tx_index)
    : peer_(peer),
      peer_host_(std::move(peer_host)),
      peer_pid_(peer_pid),
      own_segment_(std::move(own_segment)),
      peer_segment_(std::move(peer_segment)),
      rx_(own_segment_->ring(rx_index), own_segment_->ring_capacity()),
      tx_(peer_segment_->ring(tx_index), peer_segment_->ring_capacity()),
      pidfd_(open_pidfd(peer_pid)) {
  if (!pidfd_.valid()) {
    if (errno == ESRCH)
      throw make_error(ErrorCode::kPeerFailure,
                       "rank {} (pid {}) on this host died while connecting", peer_, peer_pid_);
    // Old kernels: a dead peer is then only seen at the collective deadline.
    log::warn("pidfd_open({}) for rank {} failed ({}); its death will only show as a timeout",
              peer_pid_, peer_, errno);
  }
}

std::string ShmStream::describe() const {
  return fmt::format("rank {} on host {} (shm, pid {})", peer_, peer_host_, peer_pid_);
}

size_t ShmStream::write_some(ConstPieces pieces) {
  size_t n = tx_.write(pieces);
  if (n == 0) check_peer_alive();
  return n;
}

size_t ShmStream::read_some(Pieces pieces) {
  size_t n = rx_.read(pieces);
  if (n == 0) check_peer_alive();
  return n;
}

size_t ShmStream::writable_bytes() {
  size_t n = tx_.room();
  if (n == 0) check_peer_alive();
  return n;
}

size_t ShmStream::readable_bytes() {
  size_t n = rx_.available();
  if (n == 0) check_peer_alive();
  return n;
}

Bells ShmStream::arm_doorbells(std::vector<Doorbell>& out, bool writing) {
  Doorbell in;
  if (!rx_.arm_reader(in)) return Bells::kReady;
  if (writing) {
    Doorbell room;
    if (!tx_.arm_writer(room)) {
      lower_doorbells(std::span(&in, 1));
      return Bells::kReady;
    }
    out.push_back(room);
  }
  out.push_back(in);
  return Bells::kArmed;
}

void ShmStream::check_peer_alive() {
  if (!pidfd_.valid()) return;
  auto now = std::chrono::steady_clock::now();
  if (now < next_check_) return;
  next_check_ = now + kLivenessInterval;
  pollfd p{pidfd_.get(), POLLIN, 0};
  if (poll(&p, 1, 0) <= 0) return;
  // Bytes it wrote before dying (an abort notice, say) are read first.
  if (rx_.readable()) return;
  throw make_error(ErrorCode::kPeerFailure, "rank {} (pid {}) on this host ({}) died", peer_,
                   peer_pid_, peer_host_);
}

}  // namespace tutti::transport
