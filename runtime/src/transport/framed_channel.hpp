// FramedChannel: the Link of every byte-stream backend. Each message travels as a frame (tag u64,
// length u64, the sender's call signature, payload). Sends leave in FIFO order; a received payload
// goes straight into the posted receive of its tag, or into an "unexpected" stash until that
// receive is posted. Every communicator of the process that reaches the peer shares it, each as a
// context of its own (link.hpp): a mismatch or abort notice fails one context, and the frames that
// still arrive for a failed or released context are read and dropped, so the stream stays in step.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "transport/byte_stream.hpp"
#include "transport/link.hpp"
#include "tutti/error.hpp"

namespace tutti::transport {

class FramedChannel final : public Link {
 public:
  FramedChannel(int peer, std::unique_ptr<ByteStream> stream);
  ~FramedChannel() override;

  int peer() const override { return peer_; }
  std::string describe() const override { return stream_->describe(); }
  TransportKind kind() const override { return stream_->kind(); }

  Request isend(Tag tag, std::span<const std::byte> data) override;
  Request irecv(Tag tag, std::span<std::byte> data) override;
  bool takes_pieces() const override { return true; }
  Request isend_pieces(Tag tag, ConstPieces pieces) override;
  Request irecv_pieces(Tag tag, Pieces pieces) override;
  bool progress_link(ContextId caller) override;
  bool ended() const override {
    return failure_.has_value() || closed_.has_value() || stream_broken_;
  }
  void verify_context(ContextId context) override;
  bool checks_pending() const override {
    return deferred_checks_.load(std::memory_order_acquire) > 0;
  }
  int wait_fd() const override;
  int liveness_fd() const override;
  bool wants_writable() const override { return !sends_.empty(); }
  Bells arm_doorbells(std::vector<Doorbell>& out) override;
  void drain_before_close(Deadline deadline) override;

  const Error* context_failure(ContextId context) const override;
  bool busy_in(ContextId context) const override;
  bool busy_any() const override { return !sends_.empty() || pending_receives_ > 0; }
  void bind_call_in(ContextId context, int self, int peer, const CallSignature* current) override;
  void release_context(ContextId context) override;
  void check_early_messages_in(ContextId context) override;
  void announce_call_in(ContextId context) override;
  void send_abort_in(ContextId context, ErrorCode code,
                     const std::string& reason) noexcept override;
  // Fails `context` here with `error` (found on a sibling stream of a StripedChannel).
  void fail_context_in(ContextId context, const Error& error) {
    fail_context(context_of(context), error);
  }

 private:
  // tag u64, payload length u64, the sender's CallSignature.
  static constexpr size_t kHeaderBytes = 16 + CallSignature::kWireBytes;
  using Header = std::array<std::byte, kHeaderBytes>;

  struct ContextState;
  struct PendingSend {
    std::shared_ptr<Operation> op;
    ContextState* context = nullptr;
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

  // What one communicator (context) has on this link.
  struct ContextState {
    ContextId id = 0;
    int self = -1;                        // this rank's number in the context
    int peer = -1;                        // the peer's number in the context
    const CallSignature* call = nullptr;  // its current call; null until bound
    size_t pending_sends = 0;
    size_t pending_receives = 0;
    std::optional<Error> failure;  // a mismatch or abort notice failed it
    bool released = false;         // its communicator is gone
    // Calls of frames another context's thread received for this one, to check from its own.
    std::vector<std::pair<CallSignature, int>> deferred;  // (their call, CallSource)
  };

  ContextState* find_context(ContextId context);
  const ContextState* find_context(ContextId context) const;
  ContextState& context_of(ContextId context);
  // The context no longer takes messages (failed or released): what it had posted or stashed is
  // dropped, and later frames for it are discarded.
  void purge(ContextState& state);
  // Records `error` as the context's failure (the first one stays) and purges it.
  void fail_context(ContextState& state, const Error& error);
  void rethrow_if_failed(const ContextState& state) const;
  // A frame that has not started leaving is dropped; a half-sent one keeps its remaining bytes in
  // owned memory, since its caller's buffer may be gone once the context failed.
  void drop_sends_of(const ContextState& state);
  [[noreturn]] void fail(const Error& error);
  void on_stream_error(const Error& error);
  Request post_send(Tag tag, std::shared_ptr<Operation> op);
  Request post_receive(Tag tag, std::shared_ptr<Operation> op);
  // `owned`, when not empty, is the payload (control frames) and replaces op's bytes.
  Request enqueue_send(Tag tag, std::shared_ptr<Operation> op, std::vector<std::byte> owned);
  void on_send_complete(const PendingSend& send);
  bool progress_sends();
  bool progress_receives();
  void on_header();
  void on_control_header();
  void on_payload_complete();
  void discard_payload();
  // `from`: the sender's number in the message's context.
  static Error mismatch(Tag tag, size_t sent, size_t expected, int from);
  // How a peer's call reached this rank, which decides what contradicts this rank's call.
  enum class CallSource {
    kMatched,    // on a message a receive here took: any difference
    kEarly,      // on a message no receive here wanted yet: the same call number, or an earlier one
                 // (which this rank finished without the message)
    kAnnounced,  // in an announcement: the same call number only (a peer still finishing an
                 // earlier call is only slow)
  };
  // Checks now when `state` is the caller's context, else leaves the check for its thread; a
  // disagreement fails the context.
  void check_or_defer(ContextState& state, const CallSignature& theirs, CallSource source);
  // The kMismatch error when `theirs` contradicts the context's call, else nothing.
  std::optional<Error> check_call(const ContextState& state, const CallSignature& theirs,
                                  CallSource source) const;
  void recycle(std::vector<std::byte> buffer);  // a consumed stash buffer, kept for reuse

  int peer_;
  std::unique_ptr<ByteStream> stream_;
  // Usually one or a few communicators: a vector searched from the last one used. Entries are
  // never removed (a released context still discards its late frames), and deque keeps them put.
  std::deque<ContextState> contexts_;
  ContextState* last_context_ = nullptr;
  ContextId caller_ = 0;  // the context whose thread runs the current progress_link
  std::atomic<size_t> deferred_checks_{0};

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
  ContextState* in_context_ = nullptr;
  std::shared_ptr<Stash> in_stash_;
  bool in_discard_ = false;  // the payload goes nowhere (its context failed or is gone)
  std::vector<std::byte> discard_buffer_;
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
