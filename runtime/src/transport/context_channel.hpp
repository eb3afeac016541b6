// ContextChannel: one communicator's Channel to one peer, a view of the fabric's shared link to
// that peer process. It adds the communicator's context id to every tag, holds the link's lock for
// each call (links are shared by communicators that other threads may drive), numbers the peer as
// the communicator does, and fails with the communicator's own failures (a mismatch, an abort
// notice) besides those of the link.
#pragma once

#include <memory>
#include <string>

#include "transport/fabric.hpp"

namespace tutti::transport {

class ContextChannel final : public Channel {
 public:
  // `peer`: the peer's rank in the communicator.
  ContextChannel(std::shared_ptr<Fabric> fabric, Fabric::SharedLink& link, ContextId context,
                 int peer);
  ~ContextChannel() override;  // releases the context on the link

  int peer() const override { return peer_; }
  std::string describe() const override;
  TransportKind kind() const override { return link_.link->kind(); }
  Request isend(Tag tag, std::span<const std::byte> data) override;
  Request irecv(Tag tag, std::span<std::byte> data) override;
  bool takes_pieces() const override { return link_.link->takes_pieces(); }
  Request isend_pieces(Tag tag, ConstPieces pieces) override;
  Request irecv_pieces(Tag tag, Pieces pieces) override;
  bool progress() override;
  void send_abort(ErrorCode code, const std::string& reason) noexcept override;
  int wait_fd() const override;
  int liveness_fd() const override;
  int peer_pidfd() const override { return link_.pidfd.get(); }
  bool busy() const override;
  bool wants_writable() const override;
  Bells arm_doorbells(std::vector<Doorbell>& out) override;
  void bind_call(int self, const CallSignature* current) override;
  void check_early_messages() override;
  void announce_call() override;
  void verify_delivered() override;

 private:
  Tag tagged(Tag tag) const;

  std::shared_ptr<Fabric> fabric_;  // the link lives as long as the fabric
  Fabric::SharedLink& link_;
  ContextId context_;
  int peer_;
};

}  // namespace tutti::transport
