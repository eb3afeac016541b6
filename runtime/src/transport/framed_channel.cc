#include "transport/framed_channel.hpp"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "core/deadline.hpp"
#include "core/error.hpp"
#include "core/log.hpp"

namespace tutti::transport {
namespace {

// How many frames one write_some call may gather (headers and payloads).
constexpr size_t kMaxGatherFrames = 32;
// An abort reason longer than this is a corrupted stream, not a reason.
constexpr size_t kMaxControlPayload = 1 << 20;
// Stash buffers kept for reuse: a pipeline that runs ahead of its peer stashes segment after
// segment, and a fresh allocation of that size is a fresh mmap, one page fault per 4 KiB.
constexpr size_t kMaxSpareStash = 16;
constexpr size_t kMaxSpareStashBytes = 8 << 20;
// send_abort is best effort while the process is failing: it may not stall the exit for long.
constexpr auto kAbortFlushBudget = std::chrono::milliseconds(50);
// First byte of an abort notice: which error the peer should fail with.
constexpr uint8_t kAbortFailure = 1;
constexpr uint8_t kAbortMismatch = 2;

template <size_t N>
void encode_header(std::array<std::byte, N>& out, Tag tag, uint64_t length,
                   const CallSignature* call) {
  static_assert(N == 16 + CallSignature::kWireBytes);
  std::memcpy(out.data(), &tag, 8);
  std::memcpy(out.data() + 8, &length, 8);
  const CallSignature::Wire wire = call ? call->encode() : CallSignature{}.encode();
  std::memcpy(out.data() + 16, wire.data(), wire.size());
}

}  // namespace

FramedChannel::FramedChannel(int peer, std::unique_ptr<ByteStream> stream)
    : peer_(peer), stream_(std::move(stream)) {}

FramedChannel::~FramedChannel() = default;

void FramedChannel::rethrow_if_failed() const {
  if (failure_) throw *failure_;
}

void FramedChannel::fail(const Error& error) {
  if (!failure_) failure_ = error;
  throw *failure_;
}

Error FramedChannel::mismatch(Tag tag, size_t sent, size_t expected) const {
  return make_error(ErrorCode::kMismatch,
                    "rank {} sent {} bytes for collective #{} step {} but this rank expected {} "
                    "bytes: ranks are calling different collectives or passing different "
                    "counts/dtypes",
                    peer_, sent, tag >> 24, tag & 0xffffff, expected);
}

Request FramedChannel::isend(Tag tag, std::span<const std::byte> data) {
  rethrow_if_failed();
  if (tag >= kControlTagBase)
    throw make_error(ErrorCode::kInternal,
                     "tag {:#x} sent to rank {} is reserved for the transport", tag, peer_);
  if (closed_) fail(*closed_);
  return enqueue_send(tag, data, {});
}

Request FramedChannel::enqueue_send(Tag tag, std::span<const std::byte> data,
                                    std::vector<std::byte> owned) {
  auto op = std::make_shared<Operation>();
  op->tag = tag;
  op->is_send = true;
  PendingSend& send = sends_.emplace_back();
  send.owned = std::move(owned);
  // const_cast: Operation has one pointer type for both directions; sends never write through it.
  op->data = send.owned.empty() ? const_cast<std::byte*>(data.data()) : send.owned.data();
  op->size = send.owned.empty() ? data.size() : send.owned.size();
  encode_header(send.header, tag, op->size, call_);
  send.op = op;
  return Request(std::move(op));
}

Request FramedChannel::irecv(Tag tag, std::span<std::byte> data) {
  rethrow_if_failed();
  if (tag >= kControlTagBase)
    throw make_error(ErrorCode::kInternal,
                     "tag {:#x} received from rank {} is reserved for the transport", tag, peer_);
  auto op = std::make_shared<Operation>();
  op->data = data.data();
  op->size = data.size();
  op->tag = tag;
  Request request(op);

  auto stashed = unexpected_.find(tag);
  if (stashed != unexpected_.end()) {
    std::shared_ptr<Stash> stash = std::move(stashed->second.front());
    stashed->second.pop_front();
    if (stashed->second.empty()) unexpected_.erase(stashed);
    check_call(stash->call, CallSource::kMatched);
    if (stash->data.size() != data.size()) fail(mismatch(tag, stash->data.size(), data.size()));
    if (stash->complete) {
      if (!data.empty()) std::memcpy(data.data(), stash->data.data(), data.size());
      recycle(std::move(stash->data));
      op->done = op->size;
      op->complete = true;
    } else {
      stash->claimed = std::move(op);
      ++pending_receives_;
    }
    return request;
  }
  if (closed_) fail(*closed_);
  posted_[tag].push_back(std::move(op));
  ++pending_receives_;
  return request;
}

bool FramedChannel::progress() {
  rethrow_if_failed();
  if (closed_) {
    if (busy()) fail(*closed_);
    return false;
  }
  bool moved = false;
  try {
    moved = progress_sends();
    moved = progress_receives() || moved;
  } catch (const Error& e) {
    on_stream_error(e);
  }
  return moved;
}

void FramedChannel::on_stream_error(const Error& error) {
  // Mismatches and aborts already set failure_; this only sorts out stream (peer) failures.
  if (failure_) throw *failure_;
  stream_broken_ = true;
  bool between_frames = !in_payload_ && header_done_ == 0;
  if (error.code() == ErrorCode::kPeerFailure && between_frames && !busy()) {
    log::debug("{} closed while nothing was pending", stream_->describe());
    closed_ = error;
    return;
  }
  fail(error);
}

bool FramedChannel::progress_sends() {
  bool moved = false;
  while (!sends_.empty()) {
    std::array<std::span<const std::byte>, 2 * kMaxGatherFrames> pieces;
    size_t count = 0;
    size_t wanted = 0;
    size_t frames = std::min(sends_.size(), kMaxGatherFrames);
    for (size_t i = 0; i < frames; ++i) {
      const PendingSend& s = sends_[i];
      if (s.header_done < kHeaderBytes) {
        pieces[count++] = std::span<const std::byte>(s.header).subspan(s.header_done);
        wanted += kHeaderBytes - s.header_done;
      }
      size_t left = s.op->size - s.op->done;
      if (left > 0) {
        pieces[count++] = std::span<const std::byte>(s.op->data + s.op->done, left);
        wanted += left;
      }
    }
    size_t n = stream_->write_some(std::span(pieces.data(), count));
    if (n == 0) break;
    size_t written = n;
    moved = true;
    while (!sends_.empty()) {
      PendingSend& s = sends_.front();
      size_t h = std::min(n, kHeaderBytes - s.header_done);
      s.header_done += h;
      n -= h;
      size_t p = std::min(n, s.op->size - s.op->done);
      s.op->done += p;
      n -= p;
      if (s.header_done < kHeaderBytes || s.op->done < s.op->size) break;
      s.op->complete = true;
      sends_.pop_front();
    }
    if (n != 0) throw make_error(ErrorCode::kInternal, "stream to rank {} wrote too much", peer_);
    if (written < wanted) break;  // the stream is full for now
  }
  return moved;
}

bool FramedChannel::progress_receives() {
  bool moved = false;
  for (;;) {
    if (!in_payload_) {
      std::span<std::byte> piece = std::span<std::byte>(header_).subspan(header_done_);
      size_t n = stream_->read_some(std::span(&piece, 1));
      if (n == 0) break;
      moved = true;
      header_done_ += n;
      if (header_done_ == kHeaderBytes) on_header();
      continue;
    }
    // Read the payload and, behind it, whatever of the next header is there: one call per
    // message while messages stream in.
    std::array<std::span<std::byte>, 2> pieces = {
        std::span<std::byte>(in_dest_ + in_done_, in_size_ - in_done_),
        std::span<std::byte>(header_)};
    size_t n = stream_->read_some(pieces);
    if (n == 0) break;
    moved = true;
    size_t payload = std::min(n, in_size_ - in_done_);
    in_done_ += payload;
    if (in_op_) in_op_->done = in_done_;
    if (in_done_ < in_size_) continue;
    on_payload_complete();
    header_done_ = n - payload;
    if (header_done_ == kHeaderBytes) on_header();
  }
  return moved;
}

void FramedChannel::on_header() {
  Tag tag;
  uint64_t length;
  std::memcpy(&tag, header_.data(), 8);
  std::memcpy(&length, header_.data() + 8, 8);
  in_call_ = CallSignature::decode(header_.data() + 16);
  header_done_ = 0;
  in_tag_ = tag;
  in_size_ = length;
  in_done_ = 0;
  if (tag == kCallTag && length == 0) {
    check_call(in_call_, CallSource::kAnnounced);
    return;
  }
  if (tag >= kControlTagBase) {
    if (tag != kAbortTag || length > kMaxControlPayload)
      fail(make_error(ErrorCode::kPeerFailure,
                      "{} sent a corrupted frame (control tag {:#x}, {} bytes); is it running the "
                      "same tutti version?",
                      stream_->describe(), tag, length));
    control_payload_.assign(length, std::byte{0});
    in_dest_ = control_payload_.data();
  } else if (auto posted = posted_.find(tag); posted != posted_.end()) {
    in_op_ = std::move(posted->second.front());
    posted->second.pop_front();
    if (posted->second.empty()) posted_.erase(posted);
    check_call(in_call_, CallSource::kMatched);
    if (in_op_->size != length) fail(mismatch(tag, length, in_op_->size));
    in_dest_ = in_op_->data;
  } else {
    check_call(in_call_, CallSource::kEarly);
    in_stash_ = std::make_shared<Stash>();
    in_stash_->call = in_call_;
    if (!spare_stash_.empty()) {
      in_stash_->data = std::move(spare_stash_.back());
      spare_stash_.pop_back();
    }
    in_stash_->data.resize(length);
    in_dest_ = in_stash_->data.data();
    unexpected_[tag].push_back(in_stash_);
  }
  in_payload_ = true;
  if (length == 0) on_payload_complete();
}

void FramedChannel::on_payload_complete() {
  in_payload_ = false;
  if (in_tag_ >= kControlTagBase) {
    const bool mismatch =
        !control_payload_.empty() && control_payload_[0] == static_cast<std::byte>(kAbortMismatch);
    std::string reason(reinterpret_cast<const char*>(control_payload_.data()),
                       control_payload_.size());
    if (!reason.empty()) reason.erase(0, 1);
    fail(make_error(mismatch ? ErrorCode::kMismatch : ErrorCode::kPeerFailure,
                    "rank {} aborted: {}", peer_, reason));
  }
  if (in_op_) {
    in_op_->done = in_op_->size;
    in_op_->complete = true;
    in_op_.reset();
    --pending_receives_;
  } else if (in_stash_) {
    in_stash_->complete = true;
    if (auto& op = in_stash_->claimed) {
      if (op->size > 0) std::memcpy(op->data, in_stash_->data.data(), op->size);
      recycle(std::move(in_stash_->data));
      op->done = op->size;
      op->complete = true;
      op.reset();
      --pending_receives_;
    }
    in_stash_.reset();
  }
}

void FramedChannel::check_call(const CallSignature& theirs, CallSource source) {
  if (call_ == nullptr || !call_->stamped() || !theirs.stamped() || !theirs.conflicts(*call_))
    return;
  // A later call is the peer running ahead; it is checked when this rank gets there.
  if (source != CallSource::kMatched && theirs.sequence > call_->sequence) return;
  if (source == CallSource::kAnnounced && theirs.sequence < call_->sequence) return;
  fail(call_mismatch(self_, *call_, peer_, theirs));
}

void FramedChannel::check_early_messages() {
  rethrow_if_failed();
  for (const auto& [tag, stashes] : unexpected_)
    for (const auto& stash : stashes) check_call(stash->call, CallSource::kEarly);
}

void FramedChannel::announce_call() {
  if (failure_ || closed_ || call_ == nullptr || !call_->stamped()) return;
  enqueue_send(kCallTag, {}, {});
}

void FramedChannel::recycle(std::vector<std::byte> buffer) {
  if (spare_stash_.size() < kMaxSpareStash && buffer.capacity() <= kMaxSpareStashBytes)
    spare_stash_.push_back(std::move(buffer));
}

void FramedChannel::send_abort(ErrorCode code, const std::string& reason) noexcept {
  try {
    // A channel failed by a mismatch or a local error still reaches its peer: tell it why.
    if (stream_broken_ || closed_) return;
    // Frames the peer has not seen a byte of are dropped: the abort goes out sooner, and their
    // buffers may already be gone with the failing caller. A half-sent frame must be finished.
    std::erase_if(sends_, [](const PendingSend& s) { return s.header_done == 0; });
    std::vector<std::byte> payload(1 + reason.size());
    payload[0] =
        static_cast<std::byte>(code == ErrorCode::kMismatch ? kAbortMismatch : kAbortFailure);
    std::memcpy(payload.data() + 1, reason.data(), reason.size());
    Request request = enqueue_send(kAbortTag, {}, std::move(payload));
    abort_sent_ = true;
    Deadline budget = Deadline::after(kAbortFlushBudget);
    while (!request.complete() && !budget.expired()) {
      if (!progress_sends()) sched_yield();
    }
    if (!request.complete())
      log::debug("abort notice to {} did not go out within {} ms", stream_->describe(),
                 kAbortFlushBudget.count());
  } catch (const std::exception& e) {
    log::debug("abort notice to {} failed: {}", stream_->describe(), e.what());
  }
}

int FramedChannel::wait_fd() const {
  return failure_ || closed_ ? -1 : stream_->wait_fd();
}

int FramedChannel::liveness_fd() const {
  return failure_ || closed_ ? -1 : stream_->liveness_fd();
}

}  // namespace tutti::transport
