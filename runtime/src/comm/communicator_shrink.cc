// shrink(): the survivors of a communicator whose peers died go on in a communicator of their own
// (ULFM's MPI_Comm_shrink, NCCL's ncclCommShrink), with no process restarted. The members are
// agreed through the job's store, not through the old communicator, whose calls fail once a peer
// died and whose channels carry the abort notices of that failure:
//   1. every caller publishes "here"; a caller that finds a rank's process gone (its pidfd, or its
//      link failed as a whole) publishes that too, so that callers that cannot see it themselves
//      (a peer on another host whose link they have not used since) stop waiting for it;
//   2. once every rank is here or gone, or at the init deadline, the first caller to take the
//      store's ticket writes the member list (the ranks here, in their order), and every caller
//      reads that one list: all agree even when they decided at different moments;
//   3. the lowest member draws the new context id; the communicator is a new context on the
//      job's fabric among the members (no connection is opened).
// A rank alive but late (it reaches shrink after the list was written) is not a member: its shrink
// fails naming the members, and the members never wait for it again.
#include <algorithm>
#include <optional>

#include "comm/communicator.hpp"
#include "core/error.hpp"
#include "core/id_list.hpp"
#include "core/log.hpp"

namespace tutti::comm {
namespace {

// How often the wait for the others looks at the store and at the peers' links.
constexpr std::chrono::milliseconds kShrinkSlice{20};
// How long a caller that decided at the deadline waits for the decider's list.
constexpr std::chrono::seconds kDecisionGrace{5};

// The member list as the decider wrote it: ascending ranks below `size`. Anything else (another
// program's value under our key) gives an empty list.
std::vector<int> parse_members(std::string_view text, int size) {
  std::optional<std::vector<int>> ranks = parse_ids(text, size);
  if (!ranks || !std::is_sorted(ranks->begin(), ranks->end())) return {};
  return std::move(*ranks);
}

}  // namespace

std::shared_ptr<Communicator> Communicator::shrink() {
  bootstrap::Store& store = *job_->store;
  const Deadline deadline = Deadline::after(options_.init_timeout);
  uint64_t nth = 0;
  std::vector<int> members;
  {
    // This communicator's state (the count of shrinks): one thread at a time, like its calls.
    ExclusiveCall exclusive(busy_, rank_, "shrink", [&] { abort_for_second_thread("shrink"); });
    nth = ++shrinks_;
    const std::string base = fmt::format("{}/c{}/shrink/{}/", job_->job_id, context_, nth);
    auto here_key = [&](int r) { return fmt::format("{}here/{}", base, r); };
    auto gone_key = [&](int r) { return fmt::format("{}gone/{}", base, r); };
    const std::string members_key = base + "members";
    store.set(here_key(rank_), "1");

    std::vector<bool> here(static_cast<size_t>(size_), false), gone(here);
    here[static_cast<size_t>(rank_)] = true;
    for (;;) {
      if (store.missing({members_key}).empty()) break;  // another caller decided
      std::vector<std::string> keys;
      std::vector<int> whose;
      for (int r = 0; r < size_; ++r) {
        if (here[r] || gone[r]) continue;
        keys.push_back(here_key(r));
        keys.push_back(gone_key(r));
        whose.push_back(r);
      }
      if (!keys.empty()) {
        const std::vector<std::string> absent = store.missing(keys);
        auto present = [&](const std::string& k) {
          return std::find(absent.begin(), absent.end(), k) == absent.end();
        };
        for (int r : whose) {
          if (present(here_key(r))) {
            here[r] = true;
          } else if (present(gone_key(r))) {
            gone[r] = true;
          } else if (job_->fabric && job_->fabric->peer_gone(members_[r], context_)) {
            gone[r] = true;
            store.set(gone_key(r), std::to_string(rank_));
          }
        }
      }
      const bool accounted =
          std::all_of(whose.begin(), whose.end(), [&](int r) { return here[r] || gone[r]; });
      if (accounted || deadline.expired()) {
        // The first to decide writes the list; the rest wait for it below.
        if (store.add(base + "decider", 1) == 1) {
          std::vector<int> chosen;
          for (int r = 0; r < size_; ++r)
            if (here[r]) chosen.push_back(r);
          if (!accounted) {
            std::vector<int> late;
            for (int r = 0; r < size_; ++r)
              if (!here[r] && !gone[r]) late.push_back(r);
            log::warn(
                "rank {}: shrink goes on without rank(s) {}, which neither called shrink nor "
                "were seen to die within {} ms",
                rank_, format_ids(late), options_.init_timeout.count());
          }
          store.set(members_key, format_ids(chosen));
        }
        break;
      }
      try {
        store.wait({members_key}, Deadline::after(kShrinkSlice).earlier(deadline));
      } catch (const Error& e) {
        if (e.code() != ErrorCode::kTimeout) throw;
      }
    }
    // The decider writes its list right after its ticket; should it die in between, this wait
    // ends (a decision at the deadline still gets a moment to be written).
    const std::string text =
        store.get(members_key, deadline.expired() ? Deadline::after(kDecisionGrace) : deadline);
    members = parse_members(text, size_);
    if (members.empty())
      throw make_error(ErrorCode::kConfig,
                       "rank {}: store key '{}' holds '{}', not a list of ranks; another program "
                       "writes under this job's keys",
                       rank_, members_key, text.substr(0, 60));
  }
  if (!std::binary_search(members.begin(), members.end(), rank_))
    throw make_error(ErrorCode::kTimeout,
                     "shrink on rank {}: the survivors agreed on ranks {} without this rank (it "
                     "reached shrink after they had waited {} ms, the init timeout); it is no "
                     "member of the shrunk communicator",
                     rank_, format_ids(members), options_.init_timeout.count());

  // The new context id: the lowest member draws it, the others read it (watching that it lives).
  // A deadline of its own: the agreement may have used all of the first one (a late rank).
  const Deadline setup = Deadline::after(options_.init_timeout);
  const std::string purpose = fmt::format("shrink/{}", nth);
  const std::string context_key = fmt::format("{}/c{}/{}", job_->job_id, context_, purpose);
  transport::ContextId context = 0;
  if (rank_ == members.front()) {
    context = publish_new_context(context_key);
  } else {
    for (;;) {
      try {
        store.wait({context_key}, Deadline::after(kShrinkSlice * 5).earlier(setup));
        break;
      } catch (const Error& e) {
        if (e.code() != ErrorCode::kTimeout) throw;
      }
      // Gone after it published the id (the key may have landed since the last look) is no
      // failure: every member reads the same id, and the first call on it finds the loss.
      if (job_->fabric && job_->fabric->peer_gone(members_[members.front()], context_) &&
          !store.missing({context_key}).empty())
        throw make_error(ErrorCode::kPeerFailure,
                         "shrink on rank {}: rank {}, the lowest survivor, died before it made "
                         "the shrunk communicator; shrink again",
                         rank_, members.front());
      if (setup.expired())
        throw make_error(ErrorCode::kTimeout,
                         "shrink on rank {}: timed out after {} ms waiting for rank {} to make "
                         "the shrunk communicator",
                         rank_, options_.init_timeout.count(), members.front());
    }
    context = read_new_context(context_key, setup);
  }
  std::vector<int> fabric_ranks;
  for (int r : members) fabric_ranks.push_back(members_[r]);
  auto made = make(job_, context, std::move(fabric_ranks), options_, setup);
  log::info("rank {}: shrink #{}: {} of {} ranks go on (ranks {} here), as rank {}", rank_, nth,
            members.size(), size_, format_ids(members), made->rank());
  return made;
}

}  // namespace tutti::comm
