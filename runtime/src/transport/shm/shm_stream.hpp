// ShmStream: a ByteStream to a peer on the same host through two rings: the one in this rank's
// segment that the peer writes, and the one in the peer's segment that this rank writes. The peer's
// death is seen through a pidfd (there is no connection to drop).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>

#include "net/fd.hpp"
#include "transport/byte_stream.hpp"
#include "transport/shm/ring.hpp"
#include "transport/shm/segment.hpp"

namespace tutti::transport {

class ShmStream final : public ByteStream {
 public:
  // rx: ring `rx_index` of own_segment; tx: ring `tx_index` of peer_segment.
  ShmStream(int peer, std::string peer_host, pid_t peer_pid,
            std::shared_ptr<ShmSegment> own_segment, size_t rx_index,
            std::shared_ptr<ShmSegment> peer_segment, size_t tx_index);

  size_t write_some(ConstPieces pieces) override;
  size_t read_some(Pieces pieces) override;
  size_t writable_bytes() override;
  size_t readable_bytes() override;
  Bells arm_doorbells(std::vector<Doorbell>& out, bool writing) override;
  int wait_fd() const override { return -1; }
  int liveness_fd() const override { return pidfd_.get(); }
  std::string describe() const override;
  TransportKind kind() const override { return TransportKind::kShm; }

 private:
  // Throws Error(kPeerFailure) when the peer process has exited and left nothing more to read.
  // Cheap: looks at the pidfd at most about once per millisecond.
  void check_peer_alive();

  int peer_;
  std::string peer_host_;
  pid_t peer_pid_;
  std::shared_ptr<ShmSegment> own_segment_;
  std::shared_ptr<ShmSegment> peer_segment_;
  ShmRing rx_;
  ShmRing tx_;
  net::Fd pidfd_;
  std::chrono::steady_clock::time_point next_check_{};
};

}  // namespace tutti::transport
