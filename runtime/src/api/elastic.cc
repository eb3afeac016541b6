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

// Failures the survivors go on from: ranks died (kPeerFailure), peers failed because of it
// (kAborted), or a rank stopped answering (kTimeout: a collective that waited past
// TUTTI_COLLECTIVE_TIMEOUT for it, or its abort notice). A mismatch, a bad argument or a bug is the
// program's to handle.
bool survivable(const Error& e) {
  return e.code() == ErrorCode::kPeerFailure || e.code() == ErrorCode::kAborted ||
         e.code() == ErrorCode::kTimeout;
}

// The fewest ranks the job goes on with: RunOptions::wait_for_size, else the job's --min-np
// (TUTTI_ELASTIC_MIN_NP, set by tuttirun; 0 when unset: any number).
int min_ranks(const RunOptions& options) {
  return options.wait_for_size >= 0 ? options.wait_for_size
                                    : static_cast<int>(env::get_int("TUTTI_ELASTIC_MIN_NP"));
}

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
  const int wanted = min_ranks(options);
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

namespace {

// shrink(), again while the lowest survivor dies inside it before it made the new communicator
// (kPeerFailure there): at most once per rank. Any other failure of the shrink ends this rank's
// run, saying what it recovered from (a store that stopped answering, or the survivors agreed
// without this rank: it was taken for hung and must not come back with its stale state).
Communicator shrink_again_and_again(const Communicator& comm, const std::string& cause) {
  for (int attempt = 1;; ++attempt) {
    try {
      return comm.shrink();
    } catch (const Error& s) {
      if (s.code() == ErrorCode::kPeerFailure && attempt < comm.size()) continue;
      throw Error(s.code(), fmt::format("elastic::run on rank {}: the shrink after a failure "
                                        "failed; the failure was: {}; the shrink: {}",
                                        comm.rank(), cause, s.what()));
    }
  }
}

struct Recovery {
  State& state;
  const RunOptions& options;
  bool elastic;
  int64_t& epoch;
  int resets = 0;

  // After `failure` on `comm`: shrink, roll back to the last commit, wait for ranks when below
  // the job's minimum (a job that grows), sync from rank 0 and run the callbacks. A rank that dies
  // or stops answering during any of it makes the survivors shrink again, as often as ranks die
  // and enough are left: every survivor fails in the step it shares with the dead rank or in its
  // first collective after it, and each one shrinks the same communicator, so that all agree.
  Communicator operator()(Communicator comm, const Error& failure) {
    std::string cause = failure.what();
    ErrorCode code = failure.code();
    for (;;) {
      if (resets >= options.max_resets) throw Error(code, cause);
      ++resets;
      const int before = comm.size();
      Communicator next = shrink_again_and_again(comm, cause);
      if (next.size() < options.min_size)
        throw Error(code, fmt::format("elastic::run: {} rank(s) left, fewer than min_size {}; "
                                      "the failure was: {}",
                                      next.size(), options.min_size, cause));
      const int min_np = min_ranks(options);
      if (!elastic && next.size() < min_np)
        throw Error(code, fmt::format("elastic::run on rank {}: {} rank(s) left, fewer than the "
                                      "job's --min-np {}: no step runs below it and no ranks can "
                                      "join (a job that grows needs --host-discovery-script); "
                                      "the job stops. The failure was: {}",
                                      next.rank(), next.size(), min_np, cause));
      log::warn("elastic::run: {} of {} ranks go on after: {}", next.size(), before, cause);
      comm = std::move(next);
      state.restore();
      if (elastic) comm = wait_for_ranks(std::move(comm), epoch, options);
      try {
        state.sync(comm, 0);
        state.reset(comm);
        return comm;
      } catch (const Error& e) {
        if (!survivable(e)) throw;
        log::warn(
            "elastic::run on rank {}: a rank failed while the {} survivors took the state "
            "({}); shrinking again",
            comm.rank(), comm.size(), e.what());
        cause = e.what();
        code = e.code();
      }
    }
  }
};

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
  Recovery recover{state, options, elastic, epoch};
  for (;;) {
    try {
      state.watched_ = elastic ? &comm : nullptr;
      state.epoch_ = std::max(state.epoch_, epoch);
      work(comm);
      return comm;
    } catch (const MembershipChanged& m) {
      state.watched_ = nullptr;
      const int before = comm.size();
      epoch = m.epoch();  // met, or abandoned: either way no commit asks for it again
      try {
        comm = comm.regroup(m.epoch());
      } catch (const Error& e) {
        // A member ended before the new membership formed: the launcher abandoned it, and every
        // running member goes on in the communicator it had, shrunk.
        if (!survivable(e)) throw;
        log::warn("elastic::run: {}", e.what());
        comm = recover(std::move(comm), e);
        continue;
      }
      log::info("elastic::run: membership {}: {} ranks (were {}); this is rank {}", epoch,
                comm.size(), before, comm.rank());
      try {
        state.sync(comm, 0);
        state.reset(comm);
      } catch (const Error& e) {
        if (!survivable(e)) throw;
        comm = recover(std::move(comm), e);
      }
    } catch (const Error& e) {
      state.watched_ = nullptr;
      if (!survivable(e)) throw;
      comm = recover(std::move(comm), e);
    }
  }
}

}  // namespace tutti::elastic
