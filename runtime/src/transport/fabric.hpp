// Fabric: the connections of one process to the other processes of its job, shared by every
// communicator made from them (a world, its splits, groups and dups). Each communicator is a
// context (transport/tag.hpp) with a Transport of its own: views of the fabric's links for its
// members that add its context id to every tag and lock the link while they use it. So a split
// opens no connection and no file descriptor, two communicators can be driven from two threads at
// once (they meet only on a link's lock, held for one non-blocking pass), and a mismatch or abort
// on one communicator fails only that one; a peer process that dies fails every context.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "net/fd.hpp"
#include "transport/link.hpp"
#include "transport/transport.hpp"

namespace tutti::transport {

class Fabric : public std::enable_shared_from_this<Fabric> {
 public:
  // links[rank] is null (no link to self); every other entry is set.
  Fabric(int rank, std::vector<std::unique_ptr<Link>> links);
  ~Fabric();
  Fabric(const Fabric&) = delete;
  Fabric& operator=(const Fabric&) = delete;

  int rank() const { return rank_; }
  int size() const { return static_cast<int>(links_.size()); }

  // A Transport for `context` whose rank i is fabric rank members[i]; members[self] is this rank.
  // It keeps the fabric alive.
  std::unique_ptr<Transport> make_transport(ContextId context, std::span<const int> members,
                                            int self);

  // One link and the lock that every communicator takes to use it.
  struct SharedLink {
    std::mutex mutex;
    std::unique_ptr<Link> link;
    // The peer's pidfd, kept open for the fabric's life: a link stops reporting its own once it
    // has seen the peer go, but a shared-memory window wait must still see that it is gone.
    net::Fd pidfd;
  };
  SharedLink& link(int peer) { return *links_[peer]; }

  // Whether fabric rank `peer`'s process is gone: its pidfd (a peer on this host) turned readable,
  // or its link ended (failed, reset, or closed by the peer), which one non-blocking pass of the
  // link (progressed for `caller`'s context) finds. An abort notice fails a context, not the link:
  // a peer that aborted a communicator is not gone.
  bool peer_gone(int peer, ContextId caller);

 private:
  int rank_;
  std::vector<std::unique_ptr<SharedLink>> links_;
  // How many transports use the links now (see Transport::share_links).
  std::shared_ptr<std::atomic<int>> live_contexts_ = std::make_shared<std::atomic<int>>(0);
};

}  // namespace tutti::transport
