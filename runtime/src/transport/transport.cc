#include "transport/transport.hpp"

#include <fcntl.h>
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <string>

#include "core/cpu_relax.hpp"
#include "core/error.hpp"
#include "core/log.hpp"

namespace tutti::transport {
namespace {

using Clock = std::chrono::steady_clock;

// Busy shared-memory channels: spin this many rounds (a peer a few hundred ns away answers within
// them), then yield; after kSpinPhase without progress, sleep in short polls so a stalled job
// stops burning the CPU.
constexpr int kSpinRounds = 50;
constexpr auto kSpinPhase = std::chrono::seconds(1);
constexpr long kMinSleepNs = 100'000;
constexpr long kMaxSleepNs = 1'000'000;
// TCP-only waits block in poll(); capped so the deadline is checked.
constexpr long kMaxBlockNs = 100'000'000;
// Yield rounds between looks for a peer in another call while a wait yields.
constexpr int kAgreementCheckRounds = 64;
// A wait on rings sleeps on their doorbells (sleep_on_rings) once it has yielded this often and
// this long without progress. With a CPU per rank a peer answers within microseconds, and a
// small message's wait never sleeps; on fewer CPUs than ranks a yield is a turn of another rank,
// the time passes within the yields, and every further one would take the CPU from a rank with
// work.
constexpr int kYieldsBeforeSleep = 2;
constexpr auto kSleepAfter = std::chrono::microseconds(200);
// A wait this long without progress tells every peer which call it is in (so two ranks waiting
// for each other in different calls find out), then again at this interval.
constexpr auto kFirstAnnouncement = std::chrono::milliseconds(10);
constexpr auto kAnnouncementInterval = std::chrono::seconds(1);
// Longest single sleep of a wait while other transports share the links, or an interrupt
// (abort(), launcher gone) may come.
constexpr long kSharedLinkMaxSleepNs = 1'000'000;
constexpr long kInterruptCheckNs = 20'000'000;
// A sleep on doorbells lasts at most kMaxSleepNs: within both limits above.
static_assert(kMaxSleepNs <= kSharedLinkMaxSleepNs && kMaxSleepNs <= kInterruptCheckNs);
// How long a transport that sent abort notices keeps its connections open at the end.
constexpr auto kAbortLinger = std::chrono::milliseconds(250);

bool all_complete(std::span<const Request> requests) {
  return std::all_of(requests.begin(), requests.end(),
                     [](const Request& r) { return r.complete(); });
}

}  // namespace

Transport::Transport(int rank, std::vector<std::unique_ptr<Channel>> channels)
    : rank_(rank), channels_(std::move(channels)) {
  if (rank_ < 0 || rank_ >= size())
    throw make_error(ErrorCode::kInternal, "transport of rank {} built with {} channels", rank_,
                     channels_.size());
  for (int peer = 0; peer < size(); ++peer) {
    if ((peer == rank_) != (channels_[peer] == nullptr))
      throw make_error(ErrorCode::kInternal, "rank {}: channel to rank {} is {}", rank_, peer,
                       peer == rank_ ? "set (no channel to self)" : "missing");
    if (channels_[peer]) channels_[peer]->bind_call(rank_, &call_);
  }
}

void Transport::announce_call() {
  if (!call_.stamped()) return;
  // Only to the peers this wait is for: a peer owed nothing may already have finished the job and
  // exited, and writing to it would fail a call that is going well.
  for (auto& c : channels_)
    if (c && c->busy()) c->announce_call();
}

void Transport::check_call_agreement() {
  if (!call_.stamped()) return;
  // Posted here, in the slow path, not at the start of every call: only a rank that stalls can be
  // part of a deadlock, and a stalled rank gets here.
  if (window_ && !(posted_call_ == call_)) {
    window_->announce(call_);
    posted_call_ = call_;
  }
  for (auto& c : channels_)
    if (c) c->check_early_messages();
  if (window_) {
    CallSignature theirs;
    if (int peer = window_->find_disagreement(call_, theirs); peer >= 0)
      throw call_mismatch(rank_, call_, peer, theirs);
  }
}

void Transport::share_links(std::shared_ptr<std::atomic<int>> live) {
  live_sharers_ = std::move(live);
  live_sharers_->fetch_add(1);
}

void Transport::set_interrupt(const std::atomic<bool>* flag, std::function<Error()> interrupted) {
  interrupt_flag_ = flag;
  interrupted_ = std::move(interrupted);
}

Transport::~Transport() {
  if (live_sharers_) live_sharers_->fetch_sub(1);
  // After abort notices, closing at once could reset the connections before the peers read them
  // (they would report a lost connection instead of the reason): give them a moment, all
  // channels together. (Channels that are views of shared links leave this to the links' owner.)
  if (!aborted_) return;
  const Deadline deadline = Deadline::after(kAbortLinger);
  for (auto& c : channels_)
    if (c) c->drain_before_close(deadline);
}

Channel& Transport::channel(int peer) {
  if (peer < 0 || peer >= size() || peer == rank_)
    throw make_error(ErrorCode::kInvalidArgument, "rank {} has no channel to rank {} (world of {})",
                     rank_, peer, size());
  return *channels_[peer];
}

void Transport::wait(std::span<const Request> requests, Deadline deadline, std::string_view what) {
  if (all_complete(requests)) {
    verify_delivered();
    return;
  }
  const auto start = Clock::now();
  auto last_progress = start;
  auto next_announcement = start;
  int idle_rounds = 0;
  long sleep_ns = kMinSleepNs;
  for (;;) {
    check_interrupt();
    // Every channel, busy or not: an abort notice may come from any peer.
    bool moved = progress_all();
    if (all_complete(requests)) {
      verify_delivered();
      return;
    }
    if (moved) {
      last_progress = Clock::now();
      idle_rounds = 0;
      sleep_ns = kMinSleepNs;
      continue;
    }
    if (deadline.expired())
      throw_timeout(what, std::chrono::duration<double>(Clock::now() - start).count());
    const auto now = Clock::now();
    const auto announce_at = std::max(last_progress + kFirstAnnouncement, next_announcement);
    if (now >= announce_at) {
      announce_call();
      next_announcement = now + kAnnouncementInterval;
    }

    // The longest a sleep may last before this wait must look at its deadline or announce.
    const auto sleep_cap = [&](long most) {
      const long until_announcement =
          std::chrono::duration_cast<std::chrono::nanoseconds>(announce_at - now).count();
      return std::min<long>({most, deadline.remaining().count(), std::max(until_announcement, 0L)});
    };
    bool must_poll = std::any_of(channels_.begin(), channels_.end(),
                                 [](const auto& c) { return c && c->busy() && c->wait_fd() < 0; });
    if (!must_poll) {
      // Only socket channels are busy: the kernel wakes us when their bytes arrive.
      const long cap = sleep_cap(kMaxBlockNs);
      check_call_agreement();
      sleep_on_fds(cap);
      continue;
    }
    if (now - last_progress < kSpinPhase) {
      if (idle_rounds++ < kSpinRounds) {
        cpu_relax();
      } else if (idle_rounds > kSpinRounds + kYieldsBeforeSleep &&
                 now - last_progress >= kSleepAfter && sleep_on_rings(sleep_cap(kMaxSleepNs))) {
        // After each sleep (a sleep is long next to a look): a peer in another call.
        check_call_agreement();
      } else {
        // A peer in another collective (its messages or its window entry say so) would leave this
        // wait to the deadline; looking costs a little, so only once the wait stopped spinning.
        if (idle_rounds % kAgreementCheckRounds == 0) check_call_agreement();
        sched_yield();
      }
      continue;
    }
    check_call_agreement();
    sleep_on_fds(std::min<long>(sleep_ns, deadline.remaining().count()));
    sleep_ns = std::min(sleep_ns * 2, kMaxSleepNs);
  }
}

bool Transport::progress_all() {
  bool moved = false;
  for (auto& c : channels_)
    if (c) moved = c->progress() || moved;
  return moved;
}

void Transport::set_local_window(std::unique_ptr<LocalWindow> window, std::string reason_if_none) {
  window_ = std::move(window);
  peer_pidfds_.clear();
  owned_pidfds_.clear();
  if (window_) {
    no_window_reason_.clear();
    peer_pidfds_.assign(channels_.size(), -1);
    for (size_t peer = 0; peer < channels_.size(); ++peer) {
      if (!channels_[peer]) continue;
      if (int lent = channels_[peer]->peer_pidfd(); lent >= 0) {
        peer_pidfds_[peer] = lent;
      } else if (int fd = channels_[peer]->liveness_fd(); fd >= 0) {
        owned_pidfds_.emplace_back(fcntl(fd, F_DUPFD_CLOEXEC, 0));
        peer_pidfds_[peer] = owned_pidfds_.back().get();
      }
    }
  } else {
    no_window_reason_ = std::move(reason_if_none);
  }
}

void Transport::defer_local_window(std::function<void(Transport&)> build) {
  window_factory_ = std::move(build);
  no_window_reason_ = "the shared-memory window is built when a collective first needs it";
}

void Transport::build_deferred_window() {
  auto build = std::move(window_factory_);
  window_factory_ = nullptr;
  // A peer that already failed this communicator may have taken its half of the window with it:
  // its abort notice says why, not a missing segment.
  progress_all();
  build(*this);
}

void Transport::sleep_on_fds(long timeout_ns) {
  pollfds_.clear();
  for (auto& c : channels_) {
    if (!c) continue;
    if (int fd = c->wait_fd(); fd >= 0)
      pollfds_.push_back({fd, static_cast<short>(POLLIN | (c->wants_writable() ? POLLOUT : 0)), 0});
    if (int fd = c->liveness_fd(); fd >= 0) pollfds_.push_back({fd, POLLIN, 0});
  }
  // Another thread's communicator may read the bytes meant for this one off a shared link.
  if (live_sharers_ && live_sharers_->load(std::memory_order_relaxed) > 1)
    timeout_ns = std::min(timeout_ns, kSharedLinkMaxSleepNs);
  // Nor would poll() see an interrupt.
  if (interrupt_flag_) timeout_ns = std::min(timeout_ns, kInterruptCheckNs);
  timespec ts{timeout_ns / 1'000'000'000, timeout_ns % 1'000'000'000};
  if (ppoll(pollfds_.data(), pollfds_.size(), &ts, nullptr) < 0 && errno != EINTR)
    throw_system_error(fmt::format("rank {}: ppoll on {} channel fds", rank_, pollfds_.size()),
                       errno);
  // Whatever woke us is read by the next progress() round.
}

bool Transport::sleep_on_rings(long timeout_ns) {
  bells_.clear();
  for (auto& c : channels_) {
    if (!c || !c->busy()) continue;
    if (c->arm_doorbells(bells_) != Bells::kArmed) {
      lower_doorbells(bells_);
      return false;
    }
  }
  if (bells_.empty()) return false;
  // Bytes for this wait that another thread's communicator reads off a shared link ring no bell
  // here, nor does an interrupt, nor an idle channel's abort notice: the caller keeps the sleep
  // within kMaxSleepNs.
  return sleep_on_doorbells(bells_, std::max(timeout_ns, 0L));
}

void Transport::throw_timeout(std::string_view what, double waited_seconds) const {
  std::string pending;
  for (const auto& c : channels_) {
    if (!c || !c->busy()) continue;
    if (!pending.empty()) pending += "; ";
    pending += c->describe();
  }
  if (pending.empty()) pending = "no peer (the requests belong to no channel of this transport)";
  throw make_error(
      ErrorCode::kTimeout,
      "rank {} timed out after {:.1f} s waiting for {}; still pending with: {}. A peer "
      "may be stalled, deadlocked, or calling a different collective; if the job is "
      "only slow, raise TUTTI_COLLECTIVE_TIMEOUT",
      rank_, waited_seconds, what, pending);
}

void Transport::check_peers(std::span<const int> awaited, std::string_view what) {
  check_interrupt();
  progress_all();
  check_call_agreement();
  throw_if_dead(awaited, what);
}

void Transport::check_peers_between_calls(std::span<const int> awaited, std::string_view what) {
  check_interrupt();
  progress_all();
  throw_if_dead(awaited, what);
}

void Transport::throw_if_dead(std::span<const int> awaited, std::string_view what) {
  for (int peer : awaited) {
    Channel& c = channel(peer);
    int fd = static_cast<size_t>(peer) < peer_pidfds_.size() ? peer_pidfds_[peer] : -1;
    // Before a window copied them (a deferred window being built): the fabric's own copy, which
    // outlives the link's report. A link stops reporting its pidfd once it saw the peer go, so
    // its liveness_fd alone would miss a death that a wait for the window must see.
    if (fd < 0) fd = c.peer_pidfd();
    if (fd < 0) fd = c.liveness_fd();
    if (fd < 0) continue;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 0) <= 0) continue;
    // What it wrote before dying (an abort notice with the real reason) comes first.
    c.progress();
    throw make_error(ErrorCode::kPeerFailure,
                     "{} died while rank {} waited for it in {}; see that rank's output for why",
                     c.describe(), rank_, what);
  }
}

void Transport::throw_window_timeout(std::string_view what, std::span<const int> awaited,
                                     double waited_seconds) const {
  std::string pending;
  for (int peer : awaited) {
    if (!pending.empty()) pending += "; ";
    pending += channels_[peer] ? channels_[peer]->describe() : fmt::format("rank {}", peer);
  }
  throw make_error(
      ErrorCode::kTimeout,
      "rank {} timed out after {:.1f} s waiting in {} for: {} (shared-memory window). A peer "
      "may be stalled, deadlocked, or calling a different collective; if the job is only slow, "
      "raise TUTTI_COLLECTIVE_TIMEOUT",
      rank_, waited_seconds, what, pending);
}

void Transport::abort_all(const std::string& reason, ErrorCode code) noexcept {
  aborted_ = true;
  if (window_) window_->poison();
  for (auto& c : channels_)
    if (c) c->send_abort(code, reason);
}

}  // namespace tutti::transport
