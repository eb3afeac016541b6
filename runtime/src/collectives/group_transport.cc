#include "collectives/group_transport.hpp"

#include <string>
#include <vector>

namespace tutti::collectives {
namespace {

// Forwards every call to a channel owned by the world transport. Progress, liveness and abort
// notices all go through the real channel, so a group wait sees a member's death or abort.
class ChannelView final : public transport::Channel {
 public:
  explicit ChannelView(transport::Channel& inner) : inner_(inner) {}

  int peer() const override { return inner_.peer(); }
  std::string describe() const override { return inner_.describe(); }
  TransportKind kind() const override { return inner_.kind(); }
  transport::Request isend(transport::Tag tag, std::span<const std::byte> data) override {
    return inner_.isend(tag, data);
  }
  transport::Request irecv(transport::Tag tag, std::span<std::byte> data) override {
    return inner_.irecv(tag, data);
  }
  bool takes_pieces() const override { return inner_.takes_pieces(); }
  transport::Request isend_pieces(transport::Tag tag, transport::ConstPieces pieces) override {
    return inner_.isend_pieces(tag, pieces);
  }
  transport::Request irecv_pieces(transport::Tag tag, transport::Pieces pieces) override {
    return inner_.irecv_pieces(tag, pieces);
  }
  bool progress() override { return inner_.progress(); }
  void send_abort(ErrorCode code, const std::string& reason) noexcept override {
    inner_.send_abort(code, reason);
  }
  int wait_fd() const override { return inner_.wait_fd(); }
  int liveness_fd() const override { return inner_.liveness_fd(); }
  int peer_pidfd() const override { return inner_.peer_pidfd(); }
  bool busy() const override { return inner_.busy(); }
  bool wants_writable() const override { return inner_.wants_writable(); }
  transport::Bells arm_doorbells(std::vector<transport::Doorbell>& out) override {
    return inner_.arm_doorbells(out);
  }
  // The world transport bound the real channel to its own call; a group never rebinds it.
  void check_early_messages() override { inner_.check_early_messages(); }
  void announce_call() override { inner_.announce_call(); }
  void verify_delivered() override { inner_.verify_delivered(); }

 private:
  transport::Channel& inner_;
};

}  // namespace

std::unique_ptr<transport::Transport> make_group_transport(transport::Transport& world,
                                                           std::span<const int> members, int self) {
  std::vector<std::unique_ptr<transport::Channel>> channels(members.size());
  for (size_t i = 0; i < members.size(); ++i) {
    if (static_cast<int>(i) != self)
      channels[i] = std::make_unique<ChannelView>(world.channel(members[i]));
  }
  auto group = std::make_unique<transport::Transport>(self, std::move(channels));
  // The world's call, so that a group wait that stalls announces it to the members it waits on
  // (a member in another call then fails with a mismatch instead of both waiting out the deadline).
  group->begin_call(world.current_call());
  return group;
}

}  // namespace tutti::collectives
