// Transport: every Channel of one rank plus the loop that drives them while a caller waits.
// Waiting progresses all channels (so an abort notice from any peer is seen promptly), spins
// briefly, then yields or sleeps in poll() on the channels' fds, and always honours the deadline.
#pragma once

#include <poll.h>

#include <atomic>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "core/deadline.hpp"
#include "net/fd.hpp"
#include "transport/channel.hpp"
#include "transport/local_window.hpp"

namespace tutti::transport {

class Transport {
 public:
  // channels[rank] is null (no channel to self); every other entry is set.
  Transport(int rank, std::vector<std::unique_ptr<Channel>> channels);
  ~Transport();

  int rank() const { return rank_; }
  int size() const { return static_cast<int>(channels_.size()); }
  Channel& channel(int peer);

  // Waits until every request completes. Throws the channel's Error when a peer fails, or
  // Error(kTimeout) at the deadline naming `what` and the peers still pending.
  void wait(std::span<const Request> requests, Deadline deadline, std::string_view what);

  // Starts collective call `call`: every message sent from now on is stamped with it, a wait that
  // stalls shows it to the peers (window call line, announcements), and a peer found in another
  // call fails the waits here with Error(kMismatch). See call_signature.hpp.
  void begin_call(const CallSignature& call) { call_ = call; }
  // Records the algorithm the call's allreduce chose (part of what ranks must agree on).
  void set_call_algorithm(uint8_t algorithm) { call_.algorithm = algorithm; }
  const CallSignature& current_call() const { return call_; }
  // Throws Error(kMismatch) when a peer is known to be in another call of the current number: from
  // a message that arrived early or from its entry in the window. Cheap enough for slow paths.
  void check_call_agreement();
  // Tells the peers this rank waits on (busy channels) which call it is in (for stalled waits).
  void announce_call();

  // Sends an abort notice with `reason` to every peer (best effort). Peers fail with `code` when it
  // is kMismatch, kAborted or kTimeout (every rank reports the call's real failure), else
  // kPeerFailure. A window's counters are poisoned (LocalWindow::poison).
  void abort_all(const std::string& reason, ErrorCode code = ErrorCode::kPeerFailure) noexcept;

  // Memory every rank maps when all ranks share this host, or null: some rank is on another
  // host, the transport is tcp, or TUTTI_SHM_WINDOW_BYTES=0. See local_window.hpp.
  // A window deferred with defer_local_window is built on the first call, which every rank makes
  // in the same collective call (the selection of an allreduce, or the shm algorithm itself).
  LocalWindow* local_window() {
    if (window_factory_) build_deferred_window();
    return window_.get();
  }
  // Why there is no window, for the error of a caller that insists on one.
  const std::string& no_local_window_reason() const { return no_window_reason_; }
  // Adopts the window, or records why there is none.
  void set_local_window(std::unique_ptr<LocalWindow> window, std::string reason_if_none = {});
  // Builds the window only when a collective first asks for it (`build` calls set_local_window):
  // a communicator that never runs the shared-memory allreduce never maps one.
  void defer_local_window(std::function<void(Transport&)> build);

  // The channels are views of links that other transports (communicators, maybe in other threads)
  // use too: `live` counts them. While more than one is live, a wait sleeps at most 1 ms at a
  // time, since another thread may read the bytes that would have woken it.
  void share_links(std::shared_ptr<std::atomic<int>> live);

  // Interrupts waits: while *flag is set, every wait throws `interrupted()`'s error at its next
  // round (communicator abort, launcher gone). The flag outlives the transport.
  void set_interrupt(const std::atomic<bool>* flag, std::function<Error()> interrupted);

  // Runs the checks another thread's progress left on the shared links for this transport's
  // messages; wait() does it before it returns, the communicator at the end of each call.
  void verify_delivered() {
    for (auto& c : channels_)
      if (c) c->verify_delivered();
  }

  // Progresses every channel once; throws the first peer failure. True if anything moved.
  bool progress_all();

  // For waits outside the channels (LocalWindow flags), one look at the peers: progresses every
  // channel (an abort notice throws its Error) and throws Error(kPeerFailure) naming the first
  // rank of `awaited` whose process has died. `what` names the wait for the message.
  void check_peers(std::span<const int> awaited, std::string_view what);
  // The same look between calls (a communicator's setup in the store, group()): without the
  // call-agreement check, which compares against the last call and would take a peer that has
  // moved on to the next one for a mismatch.
  void check_peers_between_calls(std::span<const int> awaited, std::string_view what);
  // Sleeps up to timeout_ns, waking early when a peer dies or a socket turns readable.
  void nap(long timeout_ns) { sleep_on_fds(timeout_ns); }
  // Error(kTimeout) for a window wait: names `what` and the ranks in `awaited`.
  [[noreturn]] void throw_window_timeout(std::string_view what, std::span<const int> awaited,
                                         double waited_seconds) const;

 private:
  void build_deferred_window();
  // Throws the interrupt's error when the flag is set.
  void check_interrupt() const {
    if (interrupt_flag_ && interrupt_flag_->load(std::memory_order_relaxed)) throw interrupted_();
  }
  // Sleeps in poll() on the channels' fds for at most timeout_ns (the idle path of wait()).
  void sleep_on_fds(long timeout_ns);
  // Sleeps on the busy channels' doorbells (ByteStream::arm_doorbells) at most `timeout_ns`. False,
  // having not slept, when a busy channel has none (a socket is busy too) or its bytes or room came
  // meanwhile: the caller yields instead.
  bool sleep_on_rings(long timeout_ns);
  // Error(kPeerFailure) naming the first rank of `awaited` whose process has died.
  void throw_if_dead(std::span<const int> awaited, std::string_view what);
  [[noreturn]] void throw_timeout(std::string_view what, double waited_seconds) const;

  int rank_;
  CallSignature call_;         // the channels read it through bind_call: the Transport never moves
  CallSignature posted_call_;  // what the window's call line shows for this rank
  bool aborted_ = false;       // abort notices went out: linger before closing
  std::shared_ptr<std::atomic<int>> live_sharers_;
  const std::atomic<bool>* interrupt_flag_ = nullptr;
  std::function<Error()> interrupted_;
  std::vector<std::unique_ptr<Channel>> channels_;
  std::vector<pollfd> pollfds_;  // reused between waits
  std::vector<Doorbell> bells_;  // likewise
  std::string no_window_reason_ = "the transport was built without a shared-memory window";
  // Copies of the peers' pidfds taken when the window is set: a channel stops reporting its pidfd
  // once it has seen the peer go, but a window wait must still notice that the peer is gone.
  std::vector<net::Fd> owned_pidfds_;
  std::vector<int> peer_pidfds_;  // per peer: a channel's peer_pidfd() or one of owned_pidfds_
  std::unique_ptr<LocalWindow> window_;  // after channels_: destroyed first, it waits through them
  std::function<void(Transport&)> window_factory_;
};

}  // namespace tutti::transport
