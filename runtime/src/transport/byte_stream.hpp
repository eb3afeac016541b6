// ByteStream: the only thing a transport backend (TCP socket, shared-memory ring pair) provides.
// Framing, tag matching and failure bookkeeping live once, in FramedChannel, on top of it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/deadline.hpp"
#include "transport/pieces.hpp"
#include "transport/shm/doorbell.hpp"
#include "tutti/options.hpp"

namespace tutti::transport {

class ByteStream {
 public:
  virtual ~ByteStream() = default;

  // Both move bytes without blocking, filling/draining the pieces in order, and return how many
  // bytes moved (0 when nothing can move now). They throw Error(kPeerFailure) naming the peer when
  // it closed the connection or died.
  virtual size_t write_some(ConstPieces pieces) = 0;
  virtual size_t read_some(Pieces pieces) = 0;
  // How many bytes write_some / read_some could move now where the stream knows (a ring's room
  // and fill; 0 after the same check of the peer as a call that moved nothing), else SIZE_MAX (a
  // socket). The channel lists no more of its queue's pieces than that for one call: a ring with
  // a little room would otherwise have hundreds of pieces listed on every look while it waits.
  virtual size_t writable_bytes() { return SIZE_MAX; }
  virtual size_t readable_bytes() { return SIZE_MAX; }

  // Before the stream is closed after an abort notice went out: make sure the peer can read it.
  // A TCP socket closed with unread bytes sends a reset, and a reset can discard the notice on
  // the peer's side before it reads it; so this half-closes, then reads and drops what arrives
  // until the peer closes or the deadline passes.
  virtual void drain_before_close(Deadline deadline) { (void)deadline; }

  // Bytes past those write_some reported that the stream has already taken and cannot take back
  // (MPI sends in flight): the frames they belong to will reach the peer, so they count as started.
  virtual size_t committed_bytes() const { return 0; }

  // Doorbells a wait may sleep on (doorbell.hpp): the incoming bytes', and with `writing` the room
  // for outgoing ones. kNone: the stream has none (a socket: wait_fd); kReady: bytes or room came
  // meanwhile (nothing left raised), look again instead of sleeping.
  virtual Bells arm_doorbells(std::vector<Doorbell>& out, bool writing) {
    (void)out;
    (void)writing;
    return Bells::kNone;
  }

  virtual int wait_fd() const = 0;
  virtual int liveness_fd() const { return -1; }
  virtual std::string describe() const = 0;
  virtual TransportKind kind() const = 0;
};

}  // namespace tutti::transport
