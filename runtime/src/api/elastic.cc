// tutti::elastic (tutti/elastic.hpp): State's copies and the loop that shrinks and goes on.
#include "tutti/elastic.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "core/deadline.hpp"
#include "core/env.hpp"
#include "core/log.hpp"

namespace tutti::elastic {
namespace {

// Shrinks run() tries in a row when ranks keep dying during the shrink itself.
constexpr int kShrinkAttempts = 3;

}  // namespace

void State::add(const std::string& name, std::span<std::byte> bytes) {
  if (std::any_of(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.name == name; }))
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("elastic::State::add: '{}' is already in the state", name));
  entries_.push_back(Entry{name, bytes, {}});
}

MembershipChanged::MembershipChanged(int64_t epoch)
    : epoch_(epoch),
      what_(fmt::format("elastic: the launcher published membership {}: ranks joined the job; "
                        "elastic::run regroups (outside run(), call Communicator::regroup({}) on "
                        "every member, then State::sync)",
                        epoch, epoch)) {}

void State::commit() {
  for (Entry& e : entries_) e.committed.assign(e.bytes.begin(), e.bytes.end());
  ++commits_;
  if (watched_ != nullptr) check_membership();
}

void State::check_membership() const {
  // Rank 0 asks the store and tells the others, so that every member throws at this same commit
  // (two members that read the store a moment apart could see two answers).
  int64_t latest = watched_->rank() == 0 ? watched_->membership_epoch() : 0;
  watched_->broadcast(&latest, 1, DataType::kInt64, 0);
  if (latest > epoch_) throw MembershipChanged(latest);
}

void State::restore() {
  if (commits_ == 0)
    throw Error(ErrorCode::kInvalidArgument,
                "elastic::State::restore: nothing was committed yet; commit() the starting state "
                "first");
  for (Entry& e : entries_) {
    // An entry added after the last commit has no copy: it keeps what it holds.
    if (e.committed.size() != e.bytes.size()) continue;
    std::memcpy(e.bytes.data(), e.committed.data(), e.bytes.size());
  }
}

void State::sync(const Communicator& comm, int root) {
  // The entries in the order added, which every rank shares (a rank that added other sizes fails
  // the broadcast with kMismatch naming both).
  for (Entry& e : entries_) {
    comm.broadcast(e.bytes.data(), e.bytes.size(), DataType::kUInt8, root);
    e.committed.assign(e.bytes.begin(), e.bytes.end());
  }
  int64_t commits = static_cast<int64_t>(commits_);
  comm.broadcast(&commits, 1, DataType::kInt64, root);
  commits_ = static_cast<uint64_t>(commits);
}

void State::on_reset(std::function<void(const Communicator&)> callback) {
  callbacks_.push_back(std::move(callback));
}

void State::reset(const Communicator& comm) const {
  for (const auto& callback : callbacks_) callback(comm);
}

namespace {

// Below the job's --min-np after a shrink: the launcher adds ranks (a new membership) when hosts
// come, and the survivors regroup with them. Every survivor polls the store for it on its own; all
// regroup into the same membership, the next one published.
Communicator wait_for_ranks(Communicator comm, int64_t& epoch, const RunOptions& options) {
  const int wanted = options.wait_for_size >= 0
                         ? options.wait_for_size
                         : static_cast<int>(env::get_int("TUTTI_ELASTIC_MIN_NP"));
  if (comm.size() >= wanted) return comm;
  const auto timeout = options.wait_timeout.count() >= 0
                           ? options.wait_timeout
                           : std::chrono::milliseconds(static_cast<int64_t>(
                                 env::get_seconds("TUTTI_ELASTIC_TIMEOUT") * 1000));
  log::warn(
      "elastic::run: {} rank(s) left, fewer than the job's --min-np {}: waiting up to {} s "
      "for the launcher to add ranks",
      comm.size(), wanted, std::chrono::duration<double>(timeout).count());
  const Deadline deadline = Deadline::after(timeout);
  while (comm.size() < wanted) {
    const int64_t latest = comm.membership_epoch();
    if (latest > epoch) {
      comm = comm.regroup(latest);
      epoch = latest;
      log::info("elastic::run: membership {}: {} ranks; this is rank {}", epoch, comm.size(),
                comm.rank());
      continue;
    }
    if (deadline.expired())
      throw Error(ErrorCode::kTimeout,
                  fmt::format("elastic::run on rank {}: {} rank(s) left, fewer than the job's "
                              "--min-np {}, and no ranks joined within {} s "
                              "(TUTTI_ELASTIC_TIMEOUT, tuttirun --elastic-timeout): are there "
                              "hosts for the launcher to add?",
                              comm.rank(), comm.size(), wanted,
                              std::chrono::duration<double>(timeout).count()));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return comm;
}

}  // namespace

Communicator run(Communicator comm, State& state,
                 const std::function<void(const Communicator&)>& work, const RunOptions& options) {
  // An elastic job's ranks (tuttirun --max-np) watch for newcomers at each commit; a process
  // started into a running job's membership (epoch > 0) takes the state from rank 0 first, when
  // its first run() begins: the running members sync at the same point, right after they
  // regrouped.
  const bool elastic = env::is_set("TUTTI_ELASTIC_EPOCH");
  static bool joined = false;  // this process's first run() in a later membership synced already
  int64_t epoch = elastic ? env::get_int("TUTTI_ELASTIC_EPOCH") : 0;
  if (elastic && epoch > 0 && !joined) {
    joined = true;
    // Started for membership `epoch`, it was placed in the one published for it (no newer one
    // comes before every member met there).
    epoch = comm.membership_epoch();
    log::info("elastic::run: joined membership {} as rank {} of {}; taking the state from rank 0",
              epoch, comm.rank(), comm.size());
    state.sync(comm, 0);
    state.reset(comm);
  } else if (state.commits() == 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "elastic::run: commit() the state once before run(): it is what a failure rolls "
                "back to");
  }
  struct Unwatch {
    State& state;
    ~Unwatch() { state.watched_ = nullptr; }
  } unwatch{state};
  for (int resets = 0;; ++resets) {
    try {
      state.watched_ = elastic ? &comm : nullptr;
      state.epoch_ = std::max(state.epoch_, epoch);
      work(comm);
      return comm;
    } catch (const MembershipChanged& m) {
      state.watched_ = nullptr;
      const int before = comm.size();
      comm = comm.regroup(m.epoch());
      epoch = m.epoch();
      log::info("elastic::run: membership {}: {} ranks (were {}); this is rank {}", epoch,
                comm.size(), before, comm.rank());
      state.sync(comm, 0);
      state.reset(comm);
    } catch (const Error& e) {
      state.watched_ = nullptr;
      // Ranks that died, or peers that failed because of it: the survivors go on. Anything else
      // (a mismatch, a timeout, a bad argument) is the program's to handle.
      if (e.code() != ErrorCode::kPeerFailure && e.code() != ErrorCode::kAborted) throw;
      if (resets >= options.max_resets) throw;
      const int before = comm.size();
      Communicator next;
      // The lowest survivor may die inside the shrink itself (kPeerFailure on the others): shrink
      // again, a few times at most.
      for (int attempt = 1;; ++attempt) {
        try {
          next = comm.shrink();
          break;
        } catch (const Error& s) {
          if (s.code() != ErrorCode::kPeerFailure || attempt >= kShrinkAttempts) throw;
        }
      }
      if (next.size() < options.min_size)
        throw Error(e.code(), fmt::format("elastic::run: {} rank(s) left, fewer than min_size {}; "
                                          "the failure was: {}",
                                          next.size(), options.min_size, e.what()));
      log::warn("elastic::run: {} of {} ranks go on after: {}", next.size(), before, e.what());
      comm = next;
      state.restore();
      if (elastic) comm = wait_for_ranks(std::move(comm), epoch, options);
      state.sync(comm, 0);
      state.reset(comm);
    }
  }
}

}  // namespace tutti::elastic
