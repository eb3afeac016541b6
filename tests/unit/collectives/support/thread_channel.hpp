// TEST DOUBLE, for the collective algorithm unit tests only: ranks are threads of one process and
// a "channel" is a pair of in-memory mailboxes guarded by a mutex. tutti never uses it in
// production; the real-process tests of the algorithms over tcp and shm live in tests/integration.
//
// It keeps the Channel contract that the algorithms rely on: sends on a channel are delivered in
// order, receives of one tag match that tag's messages in order, a size mismatch throws
// Error(kMismatch), and a send completes only once the receiver has copied it (rendezvous), so an
// algorithm that reuses a send buffer too early, or that only works when sends are buffered, fails
// here. wait_fd() is -1: Transport::wait polls progress(), which moves the bytes.
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "transport/channel.hpp"

namespace tutti::testing {

// Messages from one rank to another, not yet copied by the receiver.
struct Mailbox {
  struct Message {
    std::shared_ptr<transport::Operation> op;  // the sender's operation; its data is read here
    bool copied = false;                       // set by the receiver, completed by the sender
  };
  std::mutex mutex;
  std::deque<Message> messages;
  bool aborted = false;
  std::string abort_reason;
};

// The mailboxes of a world of `size` ranks, one per ordered pair.
class ThreadWorld {
 public:
  explicit ThreadWorld(int size);
  int size() const { return size_; }
  Mailbox& mailbox(int from, int to) { return *mailboxes_[static_cast<size_t>(from * size_ + to)]; }

 private:
  int size_;
  std::vector<std::unique_ptr<Mailbox>> mailboxes_;
};

class ThreadChannel : public transport::Channel {
 public:
  ThreadChannel(ThreadWorld& world, int self, int peer);

  int peer() const override { return peer_; }
  std::string describe() const override;
  // Memory between threads: placement treats it as shared memory.
  TransportKind kind() const override { return TransportKind::kShm; }
  transport::Request isend(transport::Tag tag, std::span<const std::byte> data) override;
  transport::Request irecv(transport::Tag tag, std::span<std::byte> data) override;
  bool takes_pieces() const override { return takes_pieces_; }
  transport::Request isend_pieces(transport::Tag tag, transport::ConstPieces pieces) override;
  transport::Request irecv_pieces(transport::Tag tag, transport::Pieces pieces) override;
  // As a channel without pieces (an MPI or striped link): callers must pack.
  void refuse_pieces() { takes_pieces_ = false; }
  bool progress() override;
  void send_abort(ErrorCode code, const std::string& reason) noexcept override;
  int wait_fd() const override { return -1; }
  bool busy() const override { return !receives_.empty() || unfinished_sends_ > 0; }

 private:
  transport::Request post_send(transport::Tag tag, std::shared_ptr<transport::Operation> op);
  transport::Request post_receive(transport::Tag tag, std::shared_ptr<transport::Operation> op);
  bool match_receives();
  bool complete_sends();

  ThreadWorld& world_;
  int self_;
  int peer_;
  std::deque<std::shared_ptr<transport::Operation>> receives_;  // posted, in order
  size_t unfinished_sends_ = 0;
  bool takes_pieces_ = true;
};

}  // namespace tutti::testing
