// Channel: an ordered, tagged, asynchronous byte pipe to one peer rank. Collectives are written
// against this interface only; they never know whether bytes go over TCP or shared memory.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/deadline.hpp"
#include "transport/call_signature.hpp"
#include "transport/pieces.hpp"
#include "transport/shm/doorbell.hpp"
#include "transport/tag.hpp"
#include "tutti/options.hpp"

namespace tutti::transport {

// One posted send or receive. The Channel fills it in (under its link's lock, see
// context_channel.hpp); the caller only looks at `complete`, possibly from another thread than the
// one that progressed the channel: finish() publishes the bytes with it.
struct Operation {
  std::byte* data = nullptr;  // for sends this points at const data; the channel never writes it
  // A gathered send or scattered receive: the bytes are these, in order, and `data` is null.
  PieceList pieces;
  size_t size = 0;
  size_t done = 0;
  Tag tag = 0;
  bool is_send = false;
  std::atomic<bool> complete{false};

  void finish() { complete.store(true, std::memory_order_release); }
  bool finished() const { return complete.load(std::memory_order_acquire); }
};

// A handle on a posted Operation. Cheap to move; an empty Request counts as complete.
class Request {
 public:
  Request() = default;
  explicit Request(std::shared_ptr<Operation> op) : op_(std::move(op)) {}
  bool complete() const { return !op_ || op_->finished(); }
  const Operation* operation() const { return op_.get(); }

 private:
  std::shared_ptr<Operation> op_;
};

// "tcp", "shm" or "mpi" (TUTTI_TRANSPORT's names), for messages.
std::string_view kind_name(TransportKind kind);

class Channel {
 public:
  virtual ~Channel() = default;

  virtual int peer() const = 0;
  // For error messages: "rank 3 on host worker-1 (tcp 198.18.0.3:41000)".
  virtual std::string describe() const = 0;
  // What carries the bytes (never kAuto); kind_name() for messages.
  virtual TransportKind kind() const = 0;

  // Queues a send. `data` must stay valid and unchanged until the request completes. Sends on one
  // channel are delivered in order.
  virtual Request isend(Tag tag, std::span<const std::byte> data) = 0;

  // Posts a receive of exactly data.size() bytes with `tag`. Receives with the same tag match that
  // tag's messages in order; a message of another size fails with Error(kMismatch) naming both
  // sizes.
  virtual Request irecv(Tag tag, std::span<std::byte> data) = 0;

  // One message whose bytes are `pieces` in order: sent from them (gathered) or received into them
  // (scattered), without a copy into one buffer first. It matches a plain isend or irecv of the
  // same bytes on the other side. Only where takes_pieces() is true; other channels throw
  // Error(kInternal), and their callers pack instead.
  virtual bool takes_pieces() const { return false; }
  virtual Request isend_pieces(Tag tag, ConstPieces pieces);
  virtual Request irecv_pieces(Tag tag, Pieces pieces);

  // Moves whatever bytes can move without blocking; returns true if anything moved. Throws
  // Error(kPeerFailure) naming the peer when it closed, died or sent an abort notice.
  virtual bool progress() = 0;

  // Tells the peer this rank is failing, with the reason (best effort; never blocks for long).
  // The peer fails with kMismatch when `code` is kMismatch, else with kPeerFailure.
  virtual void send_abort(ErrorCode code, const std::string& reason) noexcept = 0;

  // A pollable fd that turns readable when bytes may have arrived (TCP socket), or -1 when the
  // channel must be polled by calling progress() (shared memory).
  virtual int wait_fd() const = 0;

  // A pollable fd that turns readable when the peer process dies (pidfd for local peers), or -1.
  virtual int liveness_fd() const { return -1; }

  // A pidfd of the peer that stays valid after the peer died (for shared-memory window waits,
  // which must keep seeing it gone), owned elsewhere; -1 when the channel has none to lend, and
  // the Transport then keeps a copy of liveness_fd().
  virtual int peer_pidfd() const { return -1; }

  // Runs the checks that another thread's progress left for this channel's messages (a shared
  // link delivers frames of every communicator); throws what they find. Cheap when none wait.
  virtual void verify_delivered() {}

  // True while sends or receives are posted and not complete.
  virtual bool busy() const = 0;

  // Where this channel reads the call in progress (owned by its Transport, which calls this once;
  // `self` is this rank): every message sent is stamped with it, and a message stamped with
  // another call of the same or an earlier number fails with Error(kMismatch) naming both.
  virtual void bind_call(int self, const CallSignature* current) {
    (void)self;
    (void)current;
  }

  // Fails with Error(kMismatch) when a message that arrived before its receive was posted
  // belongs to the current call but disagrees with it (for waits that post no receive here).
  virtual void check_early_messages() {}

  // Tells the peer which call this rank is in (a small control message) so that two ranks stuck in
  // different calls of the same number, each waiting for the other, find out. Waits send it only
  // once they have stalled: it costs nothing while messages flow.
  virtual void announce_call() {}

  // Called before the channel is destroyed once this rank sent abort notices: see
  // ByteStream::drain_before_close. Every channel shares one deadline.
  virtual void drain_before_close(Deadline deadline) { (void)deadline; }

  // True while sends wait for room in the wait_fd()'s send buffer, so a waiter polls it for
  // POLLOUT too (only then: a writable socket would otherwise wake the waiter forever).
  virtual bool wants_writable() const { return false; }
  // The doorbells a wait on this channel may sleep on (ByteStream::arm_doorbells).
  virtual Bells arm_doorbells(std::vector<Doorbell>& out) {
    (void)out;
    return Bells::kNone;
  }
};

}  // namespace tutti::transport
