#include "transport/tcp/striped_channel.hpp"

#include <sys/epoll.h>

#include <algorithm>
#include <cerrno>

#include "core/error.hpp"

namespace tutti::transport {

size_t stripe_parts(size_t bytes, size_t streams) {
  if (streams <= 1) return 1;
  return std::clamp<size_t>(bytes / kMinStripePartBytes, 1, streams);
}

size_t stripe_part_bytes(size_t bytes, size_t parts) {
  return (bytes + parts - 1) / parts;
}

StripedChannel::StripedChannel(int peer, std::vector<std::unique_ptr<FramedChannel>> streams)
    : peer_(peer),
      streams_(std::move(streams)),
      epoll_(epoll_create1(EPOLL_CLOEXEC)),
      registered_fd_(streams_.size(), -1),
      registered_ev_(streams_.size(), 0) {
  if (streams_.empty())
    throw make_error(ErrorCode::kInternal, "striped channel to rank {} without streams", peer_);
  if (!epoll_.valid())
    throw_system_error(fmt::format("epoll_create1 for the streams to rank {}", peer_), errno);
  update_interest();
}

StripedChannel::~StripedChannel() = default;

std::string StripedChannel::describe() const {
  return fmt::format("{} over {} streams", streams_[0]->describe(), streams_.size());
}

template <typename Span, typename Post>
Request StripedChannel::post(Tag tag, Span data, bool is_send, Post&& post_part) {
  const size_t parts = stripe_parts(data.size(), streams_.size());
  if (parts == 1) return post_part(*streams_[0], data);
  auto op = std::make_shared<Operation>();
  op->data = const_cast<std::byte*>(data.data());
  op->size = data.size();
  op->tag = tag;
  op->is_send = is_send;
  Striped& s = striped_.emplace_back();
  s.op = op;
  const size_t part_bytes = stripe_part_bytes(data.size(), parts);
  for (size_t i = 0; i < parts; ++i) {
    const size_t begin = i * part_bytes;
    s.parts.push_back(
        post_part(*streams_[i], data.subspan(begin, std::min(part_bytes, data.size() - begin))));
  }
  return Request(std::move(op));
}

Request StripedChannel::isend(Tag tag, std::span<const std::byte> data) {
  return post(tag, data, true, [tag](FramedChannel& c, std::span<const std::byte> part) {
    return c.isend(tag, part);
  });
}

Request StripedChannel::irecv(Tag tag, std::span<std::byte> data) {
  return post(tag, data, false,
              [tag](FramedChannel& c, std::span<std::byte> part) { return c.irecv(tag, part); });
}

bool StripedChannel::progress_link(ContextId caller) {
  bool moved = false;
  try {
    for (auto& s : streams_) moved = s->progress_link(caller) || moved;
  } catch (...) {
    update_interest();
    throw;
  }
  spread_context_failures();
  settle();
  update_interest();
  return moved;
}

void StripedChannel::spread_context_failures() {
  if (streams_.size() < 2) return;
  for (const Striped& s : striped_) {
    const ContextId context = tag_context(s.op->tag);
    if (const Error* failure = context_failure(context))
      for (auto& stream : streams_) stream->fail_context_in(context, *failure);
  }
}

const Error* StripedChannel::context_failure(ContextId context) const {
  for (const auto& s : streams_)
    if (const Error* failure = s->context_failure(context)) return failure;
  return nullptr;
}

bool StripedChannel::busy_in(ContextId context) const {
  return std::any_of(streams_.begin(), streams_.end(),
                     [context](const auto& s) { return s->busy_in(context); });
}

void StripedChannel::release_context(ContextId context) {
  for (auto& s : streams_) s->release_context(context);
  std::erase_if(striped_,
                [context](const Striped& s) { return tag_context(s.op->tag) == context; });
}

void StripedChannel::settle() {
  std::erase_if(striped_, [](Striped& s) {
    if (!std::all_of(s.parts.begin(), s.parts.end(), [](const Request& r) { return r.complete(); }))
      return false;
    s.op->done = s.op->size;
    s.op->finish();
    return true;
  });
}

bool StripedChannel::busy_any() const {
  return std::any_of(streams_.begin(), streams_.end(), [](const auto& s) { return s->busy_any(); });
}

// Level-triggered interest per stream socket: readable always, writable only while that stream
// has sends queued (a writable socket would otherwise wake every wait at once). A stream that
// failed or closed reports fd -1 and leaves the set, so its EOF does not wake waits forever.
void StripedChannel::update_interest() {
  for (size_t i = 0; i < streams_.size(); ++i) {
    const int fd = streams_[i]->wait_fd();
    const uint32_t events = EPOLLIN | (streams_[i]->wants_writable() ? EPOLLOUT : 0u);
    if (fd == registered_fd_[i] && (fd < 0 || events == registered_ev_[i])) continue;
    if (registered_fd_[i] >= 0 && fd != registered_fd_[i])
      (void)epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, registered_fd_[i], nullptr);
    if (fd >= 0) {
      epoll_event ev{};
      ev.events = events;
      ev.data.u64 = i;
      const int op = fd == registered_fd_[i] ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
      if (epoll_ctl(epoll_.get(), op, fd, &ev) != 0)
        throw_system_error(fmt::format("epoll_ctl on stream {} to rank {}", i, peer_), errno);
    }
    registered_fd_[i] = fd;
    registered_ev_[i] = events;
  }
}

void StripedChannel::send_abort_in(ContextId context, ErrorCode code,
                                   const std::string& reason) noexcept {
  for (auto& s : streams_) s->send_abort_in(context, code, reason);
  std::erase_if(striped_,
                [context](const Striped& s) { return tag_context(s.op->tag) == context; });
}

}  // namespace tutti::transport
