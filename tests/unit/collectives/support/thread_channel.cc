#include "unit/collectives/support/thread_channel.hpp"

#include <fmt/format.h>

#include <cstring>

#include "core/error.hpp"

namespace tutti::testing {
namespace {

// A message's bytes into a receive, either side flat or in pieces.
void copy_message(const transport::Operation& from, transport::Operation& to) {
  if (to.size == 0) return;
  std::vector<std::byte> flat;
  const std::byte* bytes = from.data;
  if (!from.pieces.empty()) {
    flat.resize(from.size);
    transport::gather_from(from.pieces, 0, flat.data(), from.size);
    bytes = flat.data();
  }
  if (to.pieces.empty())
    std::memcpy(to.data, bytes, to.size);
  else
    transport::scatter_into(to.pieces, 0, bytes, to.size);
}

}  // namespace

ThreadWorld::ThreadWorld(int size) : size_(size) {
  for (int i = 0; i < size * size; ++i) mailboxes_.push_back(std::make_unique<Mailbox>());
}

ThreadChannel::ThreadChannel(ThreadWorld& world, int self, int peer)
    : world_(world), self_(self), peer_(peer) {}

std::string ThreadChannel::describe() const {
  return fmt::format("rank {} (in-process test channel from rank {})", peer_, self_);
}

transport::Request ThreadChannel::isend(transport::Tag tag, std::span<const std::byte> data) {
  auto op = std::make_shared<transport::Operation>();
  // The channel never writes through a send's pointer (Operation's contract).
  op->data = const_cast<std::byte*>(data.data());
  op->size = data.size();
  return post_send(tag, std::move(op));
}

transport::Request ThreadChannel::irecv(transport::Tag tag, std::span<std::byte> data) {
  auto op = std::make_shared<transport::Operation>();
  op->data = data.data();
  op->size = data.size();
  return post_receive(tag, std::move(op));
}

transport::Request ThreadChannel::isend_pieces(transport::Tag tag, transport::ConstPieces pieces) {
  if (!takes_pieces_) return Channel::isend_pieces(tag, pieces);
  auto op = std::make_shared<transport::Operation>();
  for (const auto& p : pieces) op->pieces.emplace_back(const_cast<std::byte*>(p.data()), p.size());
  op->size = transport::total_bytes(op->pieces);
  return post_send(tag, std::move(op));
}

transport::Request ThreadChannel::irecv_pieces(transport::Tag tag, transport::Pieces pieces) {
  if (!takes_pieces_) return Channel::irecv_pieces(tag, pieces);
  auto op = std::make_shared<transport::Operation>();
  op->pieces.assign(pieces.begin(), pieces.end());
  op->size = transport::total_bytes(op->pieces);
  return post_receive(tag, std::move(op));
}

transport::Request ThreadChannel::post_send(transport::Tag tag,
                                            std::shared_ptr<transport::Operation> op) {
  op->tag = tag;
  op->is_send = true;
  Mailbox& box = world_.mailbox(self_, peer_);
  std::lock_guard lock(box.mutex);
  box.messages.push_back({op, false});
  ++unfinished_sends_;
  return transport::Request(std::move(op));
}

transport::Request ThreadChannel::post_receive(transport::Tag tag,
                                               std::shared_ptr<transport::Operation> op) {
  op->tag = tag;
  receives_.push_back(op);
  return transport::Request(std::move(op));
}

bool ThreadChannel::progress() {
  const bool received = match_receives();
  const bool sent = complete_sends();
  return received || sent;
}

bool ThreadChannel::match_receives() {
  Mailbox& box = world_.mailbox(peer_, self_);
  std::lock_guard lock(box.mutex);
  if (box.aborted) {
    throw make_error(ErrorCode::kPeerFailure, "rank {} aborted: {}", peer_, box.abort_reason);
  }
  bool moved = false;
  for (auto& receive : receives_) {
    if (receive->finished()) continue;
    for (auto& message : box.messages) {
      if (message.copied || message.op->tag != receive->tag) continue;
      if (message.op->size != receive->size) {
        throw make_error(ErrorCode::kMismatch,
                         "rank {} received {} bytes from rank {} with tag {:#x} where it posted {}",
                         self_, message.op->size, peer_, receive->tag, receive->size);
      }
      copy_message(*message.op, *receive);
      message.copied = true;
      receive->done = receive->size;
      receive->finish();
      moved = true;
      break;
    }
  }
  while (!receives_.empty() && receives_.front()->finished()) receives_.pop_front();
  return moved;
}

bool ThreadChannel::complete_sends() {
  if (unfinished_sends_ == 0) return false;
  Mailbox& box = world_.mailbox(self_, peer_);
  std::lock_guard lock(box.mutex);
  bool moved = false;
  // Copied messages leave the mailbox; only the sender touches its own Operation.
  std::erase_if(box.messages, [&](Mailbox::Message& message) {
    if (!message.copied) return false;
    message.op->done = message.op->size;
    message.op->finish();
    --unfinished_sends_;
    moved = true;
    return true;
  });
  return moved;
}

void ThreadChannel::send_abort(ErrorCode, const std::string& reason) noexcept {
  Mailbox& box = world_.mailbox(self_, peer_);
  std::lock_guard lock(box.mutex);
  box.aborted = true;
  box.abort_reason = reason;
}

}  // namespace tutti::testing
