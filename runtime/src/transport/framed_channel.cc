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

// How many frames one write_some call may gather (headers and payloads), and how many pieces in
// all (a gathered payload is several): within the streams' iovec limit. The engine's fused ring
// sends 256 KiB segments of 16 KiB tensors as 16 pieces each: at 64 pieces a sendmsg took about
// 4 of them; at 256, between 2 pods, the engine's step took 0.4 us less CPU per tensor and was
// ahead in 10 of 16 alternating runs (docs/PERFORMANCE.md, "The engine, standby").
constexpr size_t kMaxGatherFrames = 64;
constexpr size_t kMaxGatherPieces = 256;
// How many pieces of a scattered payload one read_some call fills (the next header follows).
constexpr size_t kMaxScatterPieces = 128;
// An abort reason longer than this is a corrupted stream, not a reason.
constexpr size_t kMaxControlPayload = 1 << 20;
// Stash buffers kept for reuse: a pipeline that runs ahead of its peer stashes segment after
// segment, and a fresh allocation of that size is a fresh mmap, one page fault per 4 KiB.
constexpr size_t kMaxSpareStash = 16;
constexpr size_t kMaxSpareStashBytes = 8 << 20;
// send_abort is best effort while the process is failing: it may not stall the exit for long.
constexpr auto kAbortFlushBudget = std::chrono::milliseconds(50);
// Frames of a failed or released context are read into this much memory at a time and dropped.
constexpr size_t kDiscardChunk = 64 << 10;

template <size_t N>
void encode_header(std::array<std::byte, N>& out, Tag tag, uint64_t length,
                   const CallSignature* call) {
  static_assert(N == 16 + CallSignature::kWireBytes);
  std::memcpy(out.data(), &tag, 8);
  std::memcpy(out.data() + 8, &length, 8);
  const CallSignature::Wire wire = call ? call->encode() : CallSignature{}.encode();
  std::memcpy(out.data() + 16, wire.data(), wire.size());
}

// Copies a complete message's `from` into the receive `op` (flat or pieces).
void fill(Operation& op, const std::byte* from) {
  if (op.size == 0) return;
  if (op.pieces.empty())
    std::memcpy(op.data, from, op.size);
  else
    scatter_into(op.pieces, 0, from, op.size);
}

}  // namespace

FramedChannel::FramedChannel(int peer, std::unique_ptr<ByteStream> stream)
    : peer_(peer), stream_(std::move(stream)) {}

FramedChannel::~FramedChannel() = default;

FramedChannel::ContextState* FramedChannel::find_context(ContextId context) {
  if (last_context_ && last_context_->id == context) return last_context_;
  for (ContextState& state : contexts_)
    if (state.id == context) return last_context_ = &state;
  return nullptr;
}

const FramedChannel::ContextState* FramedChannel::find_context(ContextId context) const {
  if (last_context_ && last_context_->id == context) return last_context_;
  for (const ContextState& state : contexts_)
    if (state.id == context) return &state;
  return nullptr;
}

FramedChannel::ContextState& FramedChannel::context_of(ContextId context) {
  if (ContextState* state = find_context(context)) return *state;
  ContextState& state = contexts_.emplace_back();
  state.id = context;
  state.peer = peer_;
  return *(last_context_ = &state);
}

void FramedChannel::bind_call_in(ContextId context, int self, int peer,
                                 const CallSignature* current) {
  ContextState& state = context_of(context);
  state.self = self;
  state.peer = peer;
  state.call = current;
  state.released = false;
}

const Error* FramedChannel::context_failure(ContextId context) const {
  const ContextState* state = find_context(context);
  return state && state->failure ? &*state->failure : nullptr;
}

bool FramedChannel::busy_in(ContextId context) const {
  const ContextState* state = find_context(context);
  return state && (state->pending_sends > 0 || state->pending_receives > 0);
}

void FramedChannel::rethrow_if_failed(const ContextState& state) const {
  if (failure_) throw *failure_;
  if (state.failure) throw *state.failure;
  if (state.released)
    throw make_error(ErrorCode::kInternal, "rank {}: context {} used after its release", state.self,
                     state.id);
}

void FramedChannel::fail(const Error& error) {
  if (!failure_) failure_ = error;
  throw *failure_;
}

void FramedChannel::purge(ContextState& state) {
  auto drop_posted = [&](auto& table) {
    for (auto it = table.begin(); it != table.end();) {
      if (tag_context(it->first) == state.id)
        it = table.erase(it);
      else
        ++it;
    }
  };
  drop_posted(posted_);
  drop_posted(unexpected_);
  pending_receives_ -= state.pending_receives;
  state.pending_receives = 0;
  if (in_context_ == &state && in_payload_) {
    // The frame being read belonged to it: read the rest of it into nowhere.
    in_op_.reset();
    in_stash_.reset();
    discard_payload();
  }
}

void FramedChannel::fail_context(ContextState& state, const Error& error) {
  if (!state.failure) state.failure = error;
  purge(state);
}

void FramedChannel::release_context(ContextId context) {
  ContextState* state = find_context(context);
  if (!state) return;
  drop_sends_of(*state);
  state->released = true;
  state->call = nullptr;
  purge(*state);
}

void FramedChannel::drop_sends_of(const ContextState& state) {
  // A stream that broke will never write again: drop everything of the context.
  const bool dead = stream_broken_ || closed_.has_value() || failure_.has_value();
  // Frames (of any context) whose bytes the stream took without reporting them yet are under way.
  size_t committed = stream_->committed_bytes();
  for (auto it = sends_.begin(); it != sends_.end();) {
    const size_t left = (kHeaderBytes - it->header_done) + (it->op->size - it->op->done);
    const bool started = it->header_done > 0 || it->op->done > 0 || committed > 0;
    committed -= std::min(committed, left);
    if (it->context != &state) {
      ++it;
      continue;
    }
    if (dead || !started) {
      it->context->pending_sends--;
      it = sends_.erase(it);
      continue;
    }
    if (it->owned.empty() && it->op->done < it->op->size) {
      // Half sent: the peer expects the rest of it. Keep the rest in memory of our own.
      if (it->op->pieces.empty()) {
        it->owned.assign(it->op->data + it->op->done, it->op->data + it->op->size);
      } else {
        it->owned.resize(it->op->size - it->op->done);
        gather_from(it->op->pieces, it->op->done, it->owned.data(), it->owned.size());
      }
      auto op = std::make_shared<Operation>();
      op->size = it->owned.size();
      op->data = it->owned.data();
      op->tag = it->op->tag;
      op->is_send = true;
      it->op = std::move(op);
    }
    ++it;
  }
}

Error FramedChannel::mismatch(Tag tag, size_t sent, size_t expected, int from) {
  if (tag_class(tag) == TagClass::kPointToPoint)
    return make_error(ErrorCode::kMismatch,
                      "rank {} sent {} bytes with tag {} but this rank posted a receive of {} "
                      "bytes: the send and receive sizes must match",
                      from, sent, tag_user(tag), expected);
  return make_error(ErrorCode::kMismatch,
                    "rank {} sent {} bytes for collective #{} step {} but this rank expected {} "
                    "bytes: ranks are calling different collectives or passing different "
                    "counts/dtypes, or their TUTTI_SEGMENT_BYTES differ",
                    from, sent, tag_sequence(tag), tag_step(tag), expected);
}

Request FramedChannel::isend(Tag tag, std::span<const std::byte> data) {
  auto op = std::make_shared<Operation>();
  // const_cast: Operation has one pointer type for both directions; sends never write through it.
  op->data = const_cast<std::byte*>(data.data());
  op->size = data.size();
  return post_send(tag, std::move(op));
}

Request FramedChannel::isend_pieces(Tag tag, ConstPieces pieces) {
  auto op = std::make_shared<Operation>();
  op->pieces.reserve(pieces.size());
  for (const auto& p : pieces)
    if (!p.empty()) op->pieces.emplace_back(const_cast<std::byte*>(p.data()), p.size());
  op->size = total_bytes(op->pieces);
  return post_send(tag, std::move(op));
}

Request FramedChannel::post_send(Tag tag, std::shared_ptr<Operation> op) {
  if (tag_class(tag) == TagClass::kControl)
    throw make_error(ErrorCode::kInternal,
                     "tag {:#x} sent to rank {} is reserved for the transport", tag, peer_);
  ContextState& state = context_of(tag_context(tag));
  rethrow_if_failed(state);
  if (closed_) fail(*closed_);
  return enqueue_send(tag, std::move(op), {});
}

Request FramedChannel::enqueue_send(Tag tag, std::shared_ptr<Operation> op,
                                    std::vector<std::byte> owned) {
  ContextState& state = context_of(tag_context(tag));
  op->tag = tag;
  op->is_send = true;
  PendingSend& send = sends_.emplace_back();
  send.owned = std::move(owned);
  send.context = &state;
  if (!send.owned.empty()) {
    op->data = send.owned.data();
    op->size = send.owned.size();
  }
  // A point-to-point message belongs to no collective call: it carries no signature to check.
  const bool stamped = tag_class(tag) != TagClass::kPointToPoint;
  encode_header(send.header, tag, op->size, stamped ? state.call : nullptr);
  send.op = op;
  ++state.pending_sends;
  return Request(std::move(op));
}

Request FramedChannel::irecv(Tag tag, std::span<std::byte> data) {
  auto op = std::make_shared<Operation>();
  op->data = data.data();
  op->size = data.size();
  return post_receive(tag, std::move(op));
}

Request FramedChannel::irecv_pieces(Tag tag, Pieces pieces) {
  auto op = std::make_shared<Operation>();
  op->pieces.reserve(pieces.size());
  for (const auto& p : pieces)
    if (!p.empty()) op->pieces.push_back(p);
  op->size = total_bytes(op->pieces);
  return post_receive(tag, std::move(op));
}

Request FramedChannel::post_receive(Tag tag, std::shared_ptr<Operation> op) {
  if (tag_class(tag) == TagClass::kControl)
    throw make_error(ErrorCode::kInternal,
                     "tag {:#x} received from rank {} is reserved for the transport", tag, peer_);
  ContextState& state = context_of(tag_context(tag));
  rethrow_if_failed(state);
  op->tag = tag;
  Request request(op);

  auto stashed = unexpected_.find(tag);
  if (stashed != unexpected_.end()) {
    std::shared_ptr<Stash> stash = std::move(stashed->second.front());
    stashed->second.pop_front();
    if (stashed->second.empty()) unexpected_.erase(stashed);
    std::optional<Error> error = check_call(state, stash->call, CallSource::kMatched);
    if (!error && stash->data.size() != op->size)
      error = mismatch(tag, stash->data.size(), op->size, state.peer);
    if (error) {
      if (stash.get() == in_stash_.get()) in_stash_.reset();
      fail_context(state, *error);
      throw *state.failure;
    }
    if (stash->complete) {
      fill(*op, stash->data.data());
      recycle(std::move(stash->data));
      op->done = op->size;
      op->finish();
    } else {
      stash->claimed = std::move(op);
      ++pending_receives_;
      ++state.pending_receives;
    }
    return request;
  }
  if (closed_) fail(*closed_);
  posted_[tag].push_back(std::move(op));
  ++pending_receives_;
  ++state.pending_receives;
  return request;
}

bool FramedChannel::progress_link(ContextId caller) {
  if (failure_) throw *failure_;
  caller_ = caller;
  if (checks_pending()) verify_context(caller);
  if (closed_) {
    if (busy_any()) fail(*closed_);
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
  // Corrupted frames already set failure_; this only sorts out stream (peer) failures.
  if (failure_) throw *failure_;
  stream_broken_ = true;
  bool between_frames = !in_payload_ && header_done_ == 0;
  if (error.code() == ErrorCode::kPeerFailure && between_frames && !busy_any()) {
    log::debug("{} closed while nothing was pending", stream_->describe());
    closed_ = error;
    return;
  }
  fail(error);
}

void FramedChannel::on_send_complete(const PendingSend& send) {
  send.op->finish();
  send.context->pending_sends--;
}

bool FramedChannel::progress_sends() {
  bool moved = false;
  while (!sends_.empty()) {
    const size_t room = stream_->writable_bytes();
    if (room == 0) break;
    std::array<std::span<const std::byte>, kMaxGatherPieces> pieces;
    size_t count = 0;
    size_t wanted = 0;
    size_t frames = std::min(sends_.size(), kMaxGatherFrames);
    // Whole frames while they fit (in the stream's room, where it tells); a gathered payload that
    // does not fit goes in part, and the bytes written are accounted in order below whatever the
    // split.
    const auto list = [&](std::span<const std::byte> piece) {
      pieces[count++] = piece;
      wanted += piece.size();
    };
    for (size_t i = 0; i < frames && count < pieces.size() && wanted < room; ++i) {
      const PendingSend& s = sends_[i];
      if (s.header_done < kHeaderBytes)
        list(std::span<const std::byte>(s.header).subspan(s.header_done));
      const size_t left = s.op->size - s.op->done;
      if (count == pieces.size() || left == 0) continue;
      if (s.op->pieces.empty()) {
        list(std::span<const std::byte>(s.op->data + s.op->done, left));
      } else {
        const size_t first = count;
        count += pieces_from(s.op->pieces, s.op->done, std::span(pieces).subspan(count),
                             room - std::min(room, wanted));
        for (size_t k = first; k < count; ++k) wanted += pieces[k].size();
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
      on_send_complete(s);
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
    const size_t available = stream_->readable_bytes();
    if (available == 0) break;
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
    // message while messages stream in. A discarded payload cycles through one buffer.
    const size_t left = in_size_ - in_done_;
    std::array<std::span<std::byte>, kMaxScatterPieces + 1> pieces;
    size_t count = 1;
    if (in_discard_)
      pieces[0] = std::span<std::byte>(discard_buffer_).first(std::min(left, kDiscardChunk));
    else if (in_op_ && !in_op_->pieces.empty())
      count = pieces_from(in_op_->pieces, in_done_, std::span(pieces).first(kMaxScatterPieces),
                          available);
    else
      pieces[0] = std::span<std::byte>(in_dest_ + in_done_, left);
    size_t taking = 0;
    for (size_t i = 0; i < count; ++i) taking += pieces[i].size();
    // Behind a part of the payload that is not its last (a discarded chunk, the first pieces of a
    // scattered one), no header may be read yet.
    const bool header_follows = taking == left;
    if (header_follows) pieces[count++] = std::span<std::byte>(header_);
    size_t n = stream_->read_some(std::span(pieces.data(), count));
    if (n == 0) break;
    moved = true;
    size_t payload = std::min(n, left);
    in_done_ += payload;
    if (in_op_) in_op_->done = in_done_;
    if (in_done_ < in_size_) continue;
    on_payload_complete();
    header_done_ = n - payload;
    if (header_done_ == kHeaderBytes) on_header();
  }
  return moved;
}

void FramedChannel::discard_payload() {
  if (discard_buffer_.size() < kDiscardChunk) discard_buffer_.resize(kDiscardChunk);
  in_discard_ = true;
  in_dest_ = nullptr;
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
  in_discard_ = false;
  in_payload_ = true;
  if (tag_class(tag) == TagClass::kControl) {
    on_control_header();
  } else {
    // A context nobody here has bound yet (a communicator another rank created first) still
    // stashes its messages: they are checked once it exists.
    ContextState& state = context_of(tag_context(tag));
    in_context_ = &state;
    if (state.failure || state.released) {
      discard_payload();
    } else if (auto posted = posted_.find(tag); posted != posted_.end()) {
      in_op_ = std::move(posted->second.front());
      posted->second.pop_front();
      if (posted->second.empty()) posted_.erase(posted);
      std::optional<Error> error;
      if (state.id == caller_)
        error = check_call(state, in_call_, CallSource::kMatched);
      else
        check_or_defer(state, in_call_, CallSource::kMatched);
      if (!error && in_op_->size != length) error = mismatch(tag, length, in_op_->size, state.peer);
      if (error) {
        // The receive is dropped with the context; count it out first.
        --pending_receives_;
        --state.pending_receives;
        in_op_.reset();
        fail_context(state, *error);
      } else {
        in_dest_ = in_op_->data;
      }
    } else if (std::optional<Error> error = state.id == caller_
                                                ? check_call(state, in_call_, CallSource::kEarly)
                                                : std::nullopt) {
      fail_context(state, *error);
    } else {
      if (state.id != caller_) check_or_defer(state, in_call_, CallSource::kEarly);
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
  }
  if (in_payload_ && length == 0) on_payload_complete();
}

void FramedChannel::on_control_header() {
  ContextState& state = context_of(tag_context(in_tag_));
  in_context_ = &state;
  const ControlKind kind = control_kind(in_tag_);
  if (kind == ControlKind::kCallAnnouncement && in_size_ == 0) {
    in_payload_ = false;
    in_context_ = nullptr;
    if (!state.failure && !state.released) check_or_defer(state, in_call_, CallSource::kAnnounced);
    return;
  }
  if (kind != ControlKind::kAbort || in_size_ > kMaxControlPayload)
    fail(make_error(ErrorCode::kPeerFailure,
                    "{} sent a corrupted frame (control tag {:#x}, {} bytes); is it running the "
                    "same tutti version?",
                    stream_->describe(), in_tag_, in_size_));
  control_payload_.assign(in_size_, std::byte{0});
  in_dest_ = control_payload_.data();
}

void FramedChannel::on_payload_complete() {
  in_payload_ = false;
  ContextState* state = in_context_;
  in_context_ = nullptr;
  if (in_discard_) {
    in_discard_ = false;
    return;
  }
  if (tag_class(in_tag_) == TagClass::kControl) {
    // An abort notice: its first byte is the error the sender failed with.
    ErrorCode code = ErrorCode::kPeerFailure;
    if (!control_payload_.empty()) {
      const auto sent = static_cast<ErrorCode>(control_payload_[0]);
      // What every rank should report: the call's real failure where it is the job's, not a
      // peer's (a mismatch, an abort, a timeout); else the peer failed.
      if (sent == ErrorCode::kMismatch || sent == ErrorCode::kAborted ||
          sent == ErrorCode::kTimeout)
        code = sent;
    }
    std::string reason(reinterpret_cast<const char*>(control_payload_.data()),
                       control_payload_.size());
    if (!reason.empty()) reason.erase(0, 1);
    if (!state->released)
      fail_context(*state, make_error(code, "rank {} aborted: {}", state->peer, reason));
    return;
  }
  if (in_op_) {
    in_op_->done = in_op_->size;
    in_op_->finish();
    in_op_.reset();
    --pending_receives_;
    --state->pending_receives;
  } else if (in_stash_) {
    in_stash_->complete = true;
    if (auto& op = in_stash_->claimed) {
      fill(*op, in_stash_->data.data());
      recycle(std::move(in_stash_->data));
      op->done = op->size;
      op->finish();
      op.reset();
      --pending_receives_;
      --state->pending_receives;
    }
    in_stash_.reset();
  }
}

void FramedChannel::check_or_defer(ContextState& state, const CallSignature& theirs,
                                   CallSource source) {
  if (!theirs.stamped()) return;
  if (state.id != caller_) {
    state.deferred.emplace_back(theirs, static_cast<int>(source));
    deferred_checks_.fetch_add(1, std::memory_order_release);
    return;
  }
  if (std::optional<Error> error = check_call(state, theirs, source)) fail_context(state, *error);
}

void FramedChannel::verify_context(ContextId context) {
  ContextState* state = find_context(context);
  if (!state || state->deferred.empty()) return;
  std::vector<std::pair<CallSignature, int>> checks;
  checks.swap(state->deferred);
  deferred_checks_.fetch_sub(checks.size(), std::memory_order_relaxed);
  if (state->failure || state->released) return;
  for (const auto& [theirs, source] : checks)
    if (std::optional<Error> error = check_call(*state, theirs, static_cast<CallSource>(source))) {
      fail_context(*state, *error);
      return;
    }
}

std::optional<Error> FramedChannel::check_call(const ContextState& state,
                                               const CallSignature& theirs,
                                               CallSource source) const {
  const CallSignature* mine = state.call;
  if (mine == nullptr || !mine->stamped() || !theirs.stamped() || !theirs.conflicts(*mine))
    return std::nullopt;
  // A later call is the peer running ahead; it is checked when this rank gets there.
  if (source != CallSource::kMatched && theirs.sequence > mine->sequence) return std::nullopt;
  if (source == CallSource::kAnnounced && theirs.sequence < mine->sequence) return std::nullopt;
  return call_mismatch(state.self, *mine, state.peer, theirs);
}

void FramedChannel::check_early_messages_in(ContextId context) {
  ContextState& state = context_of(context);
  rethrow_if_failed(state);
  for (const auto& [tag, stashes] : unexpected_) {
    if (tag_context(tag) != context) continue;
    for (const auto& stash : stashes)
      if (std::optional<Error> error = check_call(state, stash->call, CallSource::kEarly)) {
        fail_context(state, *error);  // invalidates the iteration: leave at once
        throw *state.failure;
      }
  }
}

void FramedChannel::announce_call_in(ContextId context) {
  ContextState* state = find_context(context);
  if (failure_ || closed_ || !state || state->failure || !state->call || !state->call->stamped())
    return;
  enqueue_send(control_tag(ControlKind::kCallAnnouncement, context), std::make_shared<Operation>(),
               {});
}

void FramedChannel::recycle(std::vector<std::byte> buffer) {
  if (spare_stash_.size() < kMaxSpareStash && buffer.capacity() <= kMaxSpareStashBytes)
    spare_stash_.push_back(std::move(buffer));
}

void FramedChannel::send_abort_in(ContextId context, ErrorCode code,
                                  const std::string& reason) noexcept {
  try {
    ContextState& state = context_of(context);
    // From now on this context takes nothing more here: what arrives for it is dropped.
    if (!state.failure) state.failure = make_error(code, "{}", reason);
    purge(state);
    // Now, while the failing caller's buffers still exist: frames the peer has not seen a byte of
    // are dropped (the abort goes out sooner), a half-sent one keeps the rest of its bytes in
    // memory of its own (the peer expects them), and on a broken stream all go.
    drop_sends_of(state);
    // A channel failed by a mismatch or a local error still reaches its peer: tell it why.
    if (stream_broken_ || closed_) return;
    std::vector<std::byte> payload(1 + reason.size());
    payload[0] = static_cast<std::byte>(code);
    std::memcpy(payload.data() + 1, reason.data(), reason.size());
    Request request = enqueue_send(control_tag(ControlKind::kAbort, context),
                                   std::make_shared<Operation>(), std::move(payload));
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

void FramedChannel::drain_before_close(Deadline deadline) {
  if (!abort_sent_ || stream_broken_) return;
  // An abort notice that did not go out within send_abort's budget (queued behind the rest of a
  // half-sent frame, in a ring the peer had not read yet: a loaded machine) gets the linger too;
  // otherwise the peer only learns that this rank died, not why (one rank of mismatch_shm_hd
  // reported a dead peer instead of the mismatch beside a second make test).
  try {
    while (!sends_.empty() && !deadline.expired())
      if (!progress_sends()) sched_yield();
  } catch (const std::exception& e) {
    log::debug("abort notice to {} while closing: {}", stream_->describe(), e.what());
    return;
  }
  stream_->drain_before_close(deadline);
}

int FramedChannel::wait_fd() const {
  return failure_ || closed_ ? -1 : stream_->wait_fd();
}

Bells FramedChannel::arm_doorbells(std::vector<Doorbell>& out) {
  // A failed or closed channel has nothing to wake a sleeper: the wait yields and finds out.
  if (failure_ || closed_) return Bells::kNone;
  return stream_->arm_doorbells(out, !sends_.empty());
}

int FramedChannel::liveness_fd() const {
  return failure_ || closed_ ? -1 : stream_->liveness_fd();
}

}  // namespace tutti::transport
