// StripedChannel: one Channel to a peer over several TCP connections (TUTTI_TCP_STREAMS). A large
// message is cut into equal parts, part i travelling on stream i with the message's tag; smaller
// messages use stream 0 alone. The cut depends only on the message size and the stream count, so
// sender and receiver agree without a word, and every stream keeps the per-tag order of its parts.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "net/fd.hpp"
#include "transport/framed_channel.hpp"
#include "transport/link.hpp"

namespace tutti::transport {

// How a message of `bytes` is cut over `streams` streams: parts of equal size (the last one
// shorter), each at least kMinStripePartBytes, so small messages are not torn into syscalls.
inline constexpr size_t kMinStripePartBytes = 16 << 10;
size_t stripe_parts(size_t bytes, size_t streams);
size_t stripe_part_bytes(size_t bytes, size_t parts);

class StripedChannel final : public Link {
 public:
  // streams[0..K) all connect this rank to `peer`; K >= 1.
  StripedChannel(int peer, std::vector<std::unique_ptr<FramedChannel>> streams);
  ~StripedChannel() override;

  int peer() const override { return peer_; }
  std::string describe() const override;
  TransportKind kind() const override { return TransportKind::kTcp; }

  Request isend(Tag tag, std::span<const std::byte> data) override;
  Request irecv(Tag tag, std::span<std::byte> data) override;
  bool progress_link(ContextId caller) override;
  bool ended() const override {
    for (const auto& s : streams_)
      if (s->ended()) return true;
    return false;
  }
  void verify_context(ContextId context) override {
    for (auto& s : streams_) s->verify_context(context);
  }
  bool checks_pending() const override {
    for (const auto& s : streams_)
      if (s->checks_pending()) return true;
    return false;
  }
  // An epoll fd over the streams' sockets: readable when any of them has bytes or, while it has
  // sends queued, room for them. Poll it for POLLIN only.
  int wait_fd() const override { return epoll_.get(); }
  bool wants_writable() const override { return false; }
  void drain_before_close(Deadline deadline) override {
    for (auto& s : streams_) s->drain_before_close(deadline);
  }

  // A context failed on one stream fails on every stream: the parts still posted on the others
  // point into the caller's buffer, which it may free once the call failed.
  const Error* context_failure(ContextId context) const override;
  bool busy_in(ContextId context) const override;
  bool busy_any() const override;
  void bind_call_in(ContextId context, int self, int peer, const CallSignature* current) override {
    for (auto& s : streams_) s->bind_call_in(context, self, peer, current);
  }
  void release_context(ContextId context) override;
  void check_early_messages_in(ContextId context) override {
    for (auto& s : streams_) s->check_early_messages_in(context);
  }
  void announce_call_in(ContextId context) override { streams_[0]->announce_call_in(context); }
  void send_abort_in(ContextId context, ErrorCode code,
                     const std::string& reason) noexcept override;

 private:
  // A message cut into parts: complete once every part is.
  struct Striped {
    std::shared_ptr<Operation> op;
    std::vector<Request> parts;
  };

  template <typename Span, typename Post>
  Request post(Tag tag, Span data, bool is_send, Post&& post_part);
  void settle();
  // Spreads a context failure found on one stream to the others.
  void spread_context_failures();
  void update_interest();

  int peer_;
  std::vector<std::unique_ptr<FramedChannel>> streams_;
  std::vector<Striped> striped_;
  net::Fd epoll_;
  std::vector<int> registered_fd_;       // per stream: the fd in epoll_, or -1
  std::vector<uint32_t> registered_ev_;  // per stream: its epoll events
};

}  // namespace tutti::transport
