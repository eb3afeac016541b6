#include "transport/context_channel.hpp"

#include "core/error.hpp"

namespace tutti::transport {

ContextChannel::ContextChannel(std::shared_ptr<Fabric> fabric, Fabric::SharedLink& link,
                               ContextId context, int peer)
    : fabric_(std::move(fabric)), link_(link), context_(context), peer_(peer) {}

ContextChannel::~ContextChannel() {
  std::lock_guard lock(link_.mutex);
  link_.link->release_context(context_);
}

std::string ContextChannel::describe() const {
  std::string link = link_.link->describe();
  if (peer_ == link_.link->peer()) return link;
  return fmt::format("rank {} of this communicator ({})", peer_, link);
}

Tag ContextChannel::tagged(Tag tag) const {
  if (tag_context(tag) != 0)
    throw make_error(ErrorCode::kInternal, "tag {:#x} to rank {} already names a context", tag,
                     peer_);
  return with_context(tag, context_);
}

Request ContextChannel::isend(Tag tag, std::span<const std::byte> data) {
  const Tag full = tagged(tag);
  std::lock_guard lock(link_.mutex);
  return link_.link->isend(full, data);
}

Request ContextChannel::irecv(Tag tag, std::span<std::byte> data) {
  const Tag full = tagged(tag);
  std::lock_guard lock(link_.mutex);
  return link_.link->irecv(full, data);
}

Request ContextChannel::isend_pieces(Tag tag, ConstPieces pieces) {
  const Tag full = tagged(tag);
  std::lock_guard lock(link_.mutex);
  return link_.link->isend_pieces(full, pieces);
}

Request ContextChannel::irecv_pieces(Tag tag, Pieces pieces) {
  const Tag full = tagged(tag);
  std::lock_guard lock(link_.mutex);
  return link_.link->irecv_pieces(full, pieces);
}

bool ContextChannel::progress() {
  std::lock_guard lock(link_.mutex);
  return link_.link->progress_in(context_);
}

void ContextChannel::send_abort(ErrorCode code, const std::string& reason) noexcept {
  std::lock_guard lock(link_.mutex);
  link_.link->send_abort_in(context_, code, reason);
}

int ContextChannel::wait_fd() const {
  std::lock_guard lock(link_.mutex);
  return link_.link->wait_fd();
}

int ContextChannel::liveness_fd() const {
  std::lock_guard lock(link_.mutex);
  return link_.link->liveness_fd();
}

bool ContextChannel::busy() const {
  std::lock_guard lock(link_.mutex);
  return link_.link->busy_in(context_);
}

Bells ContextChannel::arm_doorbells(std::vector<Doorbell>& out) {
  std::lock_guard lock(link_.mutex);
  return link_.link->arm_doorbells(out);
}

bool ContextChannel::wants_writable() const {
  std::lock_guard lock(link_.mutex);
  return link_.link->wants_writable();
}

void ContextChannel::bind_call(int self, const CallSignature* current) {
  std::lock_guard lock(link_.mutex);
  link_.link->bind_call_in(context_, self, peer_, current);
}

void ContextChannel::check_early_messages() {
  std::lock_guard lock(link_.mutex);
  link_.link->check_early_messages_in(context_);
}

void ContextChannel::verify_delivered() {
  if (!link_.link->checks_pending()) return;
  std::lock_guard lock(link_.mutex);
  link_.link->verify_context(context_);
  if (const Error* failure = link_.link->context_failure(context_)) throw *failure;
}

void ContextChannel::announce_call() {
  std::lock_guard lock(link_.mutex);
  link_.link->announce_call_in(context_);
}

}  // namespace tutti::transport
