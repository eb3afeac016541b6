#include "transport/fabric.hpp"

#include <fcntl.h>
#include <poll.h>

#include <chrono>

#include "core/error.hpp"
#include "transport/context_channel.hpp"

namespace tutti::transport {
namespace {

// How long a fabric whose links sent abort notices keeps them open at the end (see
// ByteStream::drain_before_close): all links together, not each.
constexpr auto kAbortLinger = std::chrono::milliseconds(250);

}  // namespace

Fabric::Fabric(int rank, std::vector<std::unique_ptr<Link>> links) : rank_(rank) {
  if (rank_ < 0 || rank_ >= static_cast<int>(links.size()))
    throw make_error(ErrorCode::kInternal, "fabric of rank {} built with {} links", rank_,
                     links.size());
  for (size_t peer = 0; peer < links.size(); ++peer) {
    if ((static_cast<int>(peer) == rank_) != (links[peer] == nullptr))
      throw make_error(ErrorCode::kInternal, "rank {}: link to rank {} is {}", rank_, peer,
                       static_cast<int>(peer) == rank_ ? "set (no link to self)" : "missing");
    auto shared = std::make_unique<SharedLink>();
    if (links[peer]) {
      if (int fd = links[peer]->liveness_fd(); fd >= 0)
        shared->pidfd.reset(fcntl(fd, F_DUPFD_CLOEXEC, 0));
      shared->link = std::move(links[peer]);
    }
    links_.push_back(std::move(shared));
  }
}

Fabric::~Fabric() {
  // Links that carried abort notices stay open a moment so a reset cannot discard the notices
  // before the peers read them; nobody else uses the links any more.
  const Deadline deadline = Deadline::after(kAbortLinger);
  for (auto& shared : links_)
    if (shared->link) shared->link->drain_before_close(deadline);
}

std::unique_ptr<Transport> Fabric::make_transport(ContextId context, std::span<const int> members,
                                                  int self) {
  if (context > kMaxContextId)
    throw make_error(ErrorCode::kInternal, "context id {} is beyond the tag's {} bits", context,
                     kContextBits);
  if (self < 0 || self >= static_cast<int>(members.size()) || members[self] != rank_)
    throw make_error(ErrorCode::kInternal, "rank {} is not member {} of the communicator", rank_,
                     self);
  std::vector<std::unique_ptr<Channel>> channels(members.size());
  for (size_t i = 0; i < members.size(); ++i) {
    if (static_cast<int>(i) == self) continue;
    const int peer = members[i];
    if (peer < 0 || peer >= size() || peer == rank_)
      throw make_error(ErrorCode::kInternal, "rank {}: member {} is fabric rank {} of {}", rank_, i,
                       peer, size());
    channels[i] = std::make_unique<ContextChannel>(shared_from_this(), *links_[peer], context,
                                                   static_cast<int>(i));
  }
  auto transport = std::make_unique<Transport>(self, std::move(channels));
  transport->share_links(live_contexts_);
  return transport;
}

bool Fabric::peer_gone(int peer, ContextId caller) {
  if (peer < 0 || peer >= size() || peer == rank_) return false;
  SharedLink& shared = *links_[peer];
  if (shared.pidfd.valid()) {
    pollfd p{shared.pidfd.get(), POLLIN, 0};
    if (poll(&p, 1, 0) > 0) return true;
  }
  std::lock_guard lock(shared.mutex);
  try {
    shared.link->progress_link(caller);
  } catch (const Error&) {
    return true;
  }
  return shared.link->ended();
}

}  // namespace tutti::transport
