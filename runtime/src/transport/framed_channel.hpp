// FramedChannel: the Channel of every byte-stream backend. Each message travels as a frame
// (tag u64, length u64, payload). Sends leave in FIFO order; a received payload goes straight into
// the posted receive of its tag, or into an "unexpected" stash until that receive is posted.
#pragma once

#include <array>
#include <cstddef>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "transport/byte_stream.hpp"
#include "transport/channel.hpp"
#include "tutti/error.hpp"

namespace tutti::transport {

// Control tags (>= kControlTagBase) understood by every FramedChannel.
inline constexpr Tag kAbortTag = kControlTagBase + 1;
// An empty frame whose header's call signature says which call the sender waits in.
inline constexpr Tag kCallTag = kControlTagBase + 2;

class FramedChannel final : public Channel {
 public:
  FramedChannel(int peer, std::unique_ptr<ByteStream> stream);
  ~FramedChannel() override;

  int peer() const override { return peer_; }
  std::string describe() const override { return stream_->describe(); }
  std::string_view kind() const override { return stream_->kind(); }

  Request isend(Tag tag, std::span<const std::byte> data) override;
  Request irecv(Tag tag, std::span<std::byte> data) override;
  bool progress() override;
  void send_abort(ErrorCode code, const std::string& reason) noexcept override;
  int wait_fd() const override;
  int liveness_fd() const override;
  bool busy() const override { return !sends_.empty() || pending_receives_ > 0; }
  bool wants_writable() const override { return !sends_.empty(); }
  void bind_call(int self, const CallSignature* current) override {
    self_ = self;
    call_ = current;
  }
  void check_early_messages() override;
  void announce_call() override;
  void drain_before_close(Deadline deadline) override {
    if (abort_sent_ && !stream_broken_) stream_->drain_before_close(deadline);
  }

 private:
  // tag u64, payload length u64, the sender's CallSignature.
  static constexpr size_t kHeaderBytes = 16 + CallSignature::kWireBytes;
  using Header = std::array<std::byte, kHeaderBytes>;

  struct PendingSend {
    std::shared_ptr<Operation> op;
    Header header;
    size_t header_done = 0;
    std::vector<std::byte> owned;  // payload of control frames
  };
  // A message that arrived before its receive was posted.
  struct Stash {
    CallSignature call;
    std::vector<std::byte> data;
    bool complete = false;
    std::shared_ptr<Operation> claimed;  // a receive posted while the payload was still arriving
  };

  void rethrow_if_failed() const;
  [[noreturn]] void fail(const Error& error);
  void on_stream_error(const Error& error);
  Request enqueue_send(Tag tag, std::span<const std::byte> data, std::vector<std::byte> owned);
  bool progress_sends();
  bool progress_receives();
  void on_header();
  void on_payload_complete();
  Error mismatch(Tag tag, size_t sent, size_t expected) const;
  // How a peer's call reached this rank, which decides what contradicts this rank's call.
  enum class CallSource {
    kMatched,    // on a message a receive here took: any difference
    kEarly,      // on a message no receive here wanted yet: the same call number, or an earlier one
                 // (which this rank finished without the message)
    kAnnounced,  // in an announcement: the same call number only (a peer still finishing an
                 // earlier call is only slow)
  };
  // Fails with kMismatch when `theirs` contradicts this rank's call.
  void check_call(const CallSignature& theirs, CallSource source);
  void recycle(std::vector<std::byte> buffer);  // a consumed stash buffer, kept for reuse

  int peer_;
  std::unique_ptr<ByteStream> stream_;
  int self_ = -1;
  const CallSignature* call_ = nullptr;

  std::deque<PendingSend> sends_;
  std::unordered_map<Tag, std::deque<std::shared_ptr<Operation>>> posted_;
  std::unordered_map<Tag, std::deque<std::shared_ptr<Stash>>> unexpected_;
  size_t pending_receives_ = 0;

  // The frame being received: its header, then (in_payload_) its payload going to in_dest_.
  Header header_{};
  size_t header_done_ = 0;
  bool in_payload_ = false;
  Tag in_tag_ = 0;
  CallSignature in_call_;
  size_t in_size_ = 0;
  size_t in_done_ = 0;
  std::byte* in_dest_ = nullptr;
  std::shared_ptr<Operation> in_op_;
  std::shared_ptr<Stash> in_stash_;
  std::vector<std::byte> control_payload_;
  std::vector<std::vector<std::byte>> spare_stash_;

  std::optional<Error> failure_;  // every later call rethrows it
  bool stream_broken_ = false;    // the stream itself failed: nothing more can be sent
  bool abort_sent_ = false;
  // The peer closed between frames while nothing was pending: maybe a clean shutdown, so this only
  // fails a later operation that needs the peer.
  std::optional<Error> closed_;
};

}  // namespace tutti::transport
