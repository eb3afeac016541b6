// New communicators from an existing one: split (MPI_Comm_split), group (the listed ranks only)
// and dup. They open no connections: each is a new context on the job's fabric, with an id drawn
// from one counter in the job's store, so no two communicators of the job ever share one.
#include <algorithm>
#include <charconv>
#include <numeric>
#include <optional>
#include <tuple>

#include "comm/communicator.hpp"
#include "core/error.hpp"
#include "core/id_list.hpp"
#include "core/log.hpp"

namespace tutti::comm {
namespace {

// How often a wait on the store for other members looks at them (aborts, deaths).
constexpr std::chrono::milliseconds kStoreWatchSlice{100};

}  // namespace

transport::ContextId Communicator::publish_new_context(const std::string& key) {
  const int64_t id = job_->store->add(fmt::format("{}/next_context", job_->job_id), 1);
  if (id < 1 || id > static_cast<int64_t>(transport::kMaxContextId))
    throw make_error(ErrorCode::kConfig,
                     "rank {}: the job has made {} communicators, more than the {} a job may "
                     "make; free and re-create fewer of them",
                     rank_, id, transport::kMaxContextId);
  job_->store->set(key, std::to_string(id));
  return static_cast<transport::ContextId>(id);
}

transport::ContextId Communicator::read_new_context(const std::string& key, Deadline deadline) {
  const std::string value = job_->store->get(key, deadline);
  // The store is shared with the caller (a torch Store, say): refuse anything but an id we wrote.
  uint64_t id = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), id);
  if (error != std::errc() || end != value.data() + value.size() || id < 1 ||
      id > transport::kMaxContextId)
    throw make_error(ErrorCode::kConfig,
                     "rank {}: store key '{}' holds '{}', not a communicator id; another program "
                     "writes under this job's keys (give it another TUTTI_JOB_ID or store prefix)",
                     rank_, key, value.substr(0, 40));
  return static_cast<transport::ContextId>(id);
}

transport::ContextId Communicator::draw_context(std::string_view purpose,
                                                std::span<const int> members) {
  const Deadline deadline = Deadline::after(options_.init_timeout);
  const std::string key = fmt::format("{}/c{}/{}", job_->job_id, context_, purpose);
  const int lowest = *std::min_element(members.begin(), members.end());
  if (rank_ == lowest) return publish_new_context(key);
  // The lowest member may have died or aborted: look at it while waiting, not only at the end.
  const std::vector<int> lowest_only{lowest};
  if (!wait_for_ranks({key}, lowest_only, deadline,
                      fmt::format("creating a communicator ({})", purpose))
           .empty())
    throw make_error(ErrorCode::kTimeout,
                     "rank {} timed out after {} ms waiting for rank {} to create communicator "
                     "({}); every member must make the same call",
                     rank_, options_.init_timeout.count(), lowest, purpose);
  return read_new_context(key, deadline);
}

std::shared_ptr<Communicator> Communicator::split(int color, int key) {
  // Every rank's (color, key), through an allgather on this communicator: a collective call like
  // any other, so a rank that calls something else instead fails with kMismatch.
  // The third value says whether this rank has an NCCL communicator: when every rank has one,
  // the child's is split from it (ncclCommSplit is collective over all of the parent's ranks,
  // which all call split here), else the child makes its own on its first device call.
  auto device = device_if_any();
  const bool has_nccl = device && device->has_nccl();
  std::vector<int64_t> mine = {color, key, has_nccl ? 1 : 0};
  std::vector<int64_t> all(3 * static_cast<size_t>(size_));
  allgather(mine.data(), all.data(), 3, DataType::kInt64);
  uint64_t child = 0;
  {
    ExclusiveCall exclusive(busy_, rank_, "split", [&] { abort_for_second_thread("split"); });
    child = ++children_;
  }
  bool all_have_nccl = true;
  for (int r = 0; r < size_; ++r) all_have_nccl = all_have_nccl && all[3 * r + 2] == 1;
  std::unique_ptr<device::NcclComm> child_nccl;
  if (all_have_nccl)
    child_nccl = device->split_nccl(color < 0 ? -1 : color, key, options_.init_timeout);
  if (color < 0) return nullptr;
  std::vector<std::tuple<int64_t, int>> order;  // (key, rank) of my color
  for (int r = 0; r < size_; ++r)
    if (all[3 * r] == color) order.emplace_back(all[3 * r + 1], r);
  std::sort(order.begin(), order.end());
  std::vector<int> ranks;
  for (auto [k, r] : order) ranks.push_back(r);
  const transport::ContextId context =
      draw_context(fmt::format("split/{}/{}", child, color), ranks);
  std::vector<int> members;
  for (int r : ranks) members.push_back(members_[r]);
  auto made =
      make(job_, context, std::move(members), options_, Deadline::after(options_.init_timeout));
  made->inherited_nccl_ = std::move(child_nccl);
  log::debug("rank {}: split #{} color {} -> context {}, rank {} of {}", rank_, child, color,
             context, made->rank(), made->size());
  return made;
}

std::shared_ptr<Communicator> Communicator::dup() {
  return split(0, rank_);
}

std::vector<int> Communicator::wait_for_ranks(
    const std::vector<std::string>& keys, std::span<const int> ranks, Deadline deadline,
    std::string_view what, const std::function<void(std::span<const int>)>& look) {
  bootstrap::Store& store = *job_->store;
  for (;;) {
    try {
      store.wait(keys, Deadline::after(kStoreWatchSlice).earlier(deadline));
      return {};
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kTimeout) throw;
    }
    const std::vector<std::string> absent = store.missing(keys);
    std::vector<int> missing;
    for (size_t i = 0; i < keys.size(); ++i)
      if (std::find(absent.begin(), absent.end(), keys[i]) != absent.end())
        missing.push_back(ranks[i]);
    if (missing.empty()) return {};
    if (transport_) transport_->check_peers_between_calls(missing, what);
    if (look) look(missing);
    if (deadline.expired()) return missing;
  }
}

void Communicator::agree_on_group_order(const std::string& purpose, std::span<const int> set,
                                        std::span<const int> listed) {
  bootstrap::Store& store = *job_->store;
  const Deadline deadline = Deadline::after(options_.init_timeout);
  const std::string base = fmt::format("{}/c{}/{}/order/", job_->job_id, context_, purpose);
  const std::string mine = format_ids(listed);
  const std::string set_text = format_ids(set);
  // Which group call each rank is in ("<set> <nth> waiting|done|failed"), so that members that list
  // different sets of ranks, each waiting for the other under its own set's keys, see it and fail
  // at once naming both lists instead of both timing out.
  auto grouping_key = [&](int r) {
    return fmt::format("{}/c{}/grouping/{}", job_->job_id, context_, r);
  };
  const uint64_t nth = groups_[std::vector<int>(set.begin(), set.end())];
  store.set(grouping_key(rank_), fmt::format("{} {} waiting", set_text, nth));
  store.set(base + std::to_string(rank_), mine);
  std::vector<std::string> keys;
  for (int r : set) keys.push_back(base + std::to_string(r));
  // What a missing rank is doing instead, if it is in a group call: "" when nothing is known.
  auto elsewhere = [&](int r) -> std::string {
    const std::string key = grouping_key(r);
    if (!store.missing({key}).empty()) return "";
    const std::string value = store.get(key, deadline);
    return value;
  };
  int slices = 0;
  auto look = [&](std::span<const int> missing) {
    if (++slices % 5 != 0) return;  // every half second: a store read per missing rank
    for (int r : missing) {
      // "<set> <nth> <state>": r waits in group call nth of its set; it waits for this rank when
      // the set holds this rank and this rank has not made that call yet.
      const std::string value = elsewhere(r);
      const size_t first = value.find(' '), second = value.rfind(' ');
      if (first == std::string::npos || second == first) continue;
      const std::string theirs = value.substr(0, first);
      uint64_t their_nth = 0;
      std::from_chars(value.data() + first + 1, value.data() + second, their_nth);
      if (value.substr(second + 1) != "waiting" || theirs == set_text) continue;
      // Not a set of ranks (another program wrote under our key): no disagreement to report.
      const std::optional<std::vector<int>> their_set = parse_ids(theirs);
      if (!their_set || std::find(their_set->begin(), their_set->end(), rank_) == their_set->end())
        continue;
      const auto made = groups_.find(*their_set);
      if (made != groups_.end() && made->second >= their_nth) continue;  // a call already made
      throw make_error(ErrorCode::kInvalidArgument,
                       "group on rank {}: rank {} called group with the ranks {} while this rank "
                       "called it with {}; each waits for the other, so both fail: every listed "
                       "rank must call group with the same ranks",
                       rank_, r, theirs, mine);
    }
  };
  std::vector<int> missing;
  try {
    missing = wait_for_ranks(keys, set, deadline, "group", look);
  } catch (const Error& e) {
    // No longer waiting (an abort, a dead member): a peer that read a stale "waiting" would take
    // it for a disagreement with its next, correct call. Not after a disagreement this rank saw
    // (kInvalidArgument): the other side must still see it waiting, to fail too. Best effort (the
    // store may be what failed).
    if (e.code() != ErrorCode::kInvalidArgument) {
      try {
        store.set(grouping_key(rank_), fmt::format("{} {} failed", set_text, nth));
      } catch (const Error&) {
      }
    }
    throw;
  }
  if (!missing.empty()) {
    store.set(grouping_key(rank_), fmt::format("{} {} failed", set_text, nth));
    std::string who, doing;
    for (int r : missing) {
      who += fmt::format("{}{}", who.empty() ? "" : ", ", r);
      const std::string value = elsewhere(r);
      if (!value.empty())
        doing += fmt::format("; rank {}'s last group call listed {}", r,
                             value.substr(0, value.find(' ')));
    }
    throw make_error(ErrorCode::kTimeout,
                     "group on rank {}: timed out after {} ms waiting for rank(s) {} to call group "
                     "with the ranks {} too{}; every listed rank must call group with the same "
                     "list",
                     rank_, options_.init_timeout.count(), who, mine, doing);
  }
  store.set(grouping_key(rank_), fmt::format("{} {} done", set_text, nth));
  std::string differences;
  for (size_t i = 0; i < keys.size(); ++i) {
    const std::string theirs = store.get(keys[i], deadline);
    if (theirs != mine)
      differences += fmt::format("; rank {} listed {}", set[i], theirs.substr(0, 200));
  }
  if (!differences.empty())
    throw make_error(ErrorCode::kInvalidArgument,
                     "group on rank {}: the members list the same ranks in different orders (rank "
                     "{} listed {}{}); the order gives the new ranks, so every member must pass "
                     "the same list",
                     rank_, rank_, mine, differences);
}

std::shared_ptr<Communicator> Communicator::group(std::span<const int> ranks) {
  if (ranks.empty())
    throw make_error(ErrorCode::kInvalidArgument, "group on rank {}: no ranks listed", rank_);
  std::vector<int> sorted(ranks.begin(), ranks.end());
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (sorted[i] < 0 || sorted[i] >= size_)
      throw make_error(ErrorCode::kInvalidArgument,
                       "group on rank {}: rank {} is not a rank of this communicator (size {})",
                       rank_, sorted[i], size_);
    if (i > 0 && sorted[i] == sorted[i - 1])
      throw make_error(ErrorCode::kInvalidArgument, "group on rank {}: rank {} is listed twice",
                       rank_, sorted[i]);
  }
  if (!std::binary_search(sorted.begin(), sorted.end(), rank_))
    throw make_error(ErrorCode::kInvalidArgument,
                     "group on rank {}: this rank is not among the listed ranks ({}); only the "
                     "listed ranks may call group",
                     rank_, format_ids(ranks));
  // group() is collective over the listed ranks only, so its namespace comes from what they all
  // know: the set of ranks and how often they have grouped it. The order (which gives the new
  // ranks) must agree too: every member publishes its list under the set's key and reads the
  // others', so members that list the same ranks in different orders all fail at once naming the
  // difference (keyed by the list, they used to wait under different keys: one rank went on alone,
  // the other timed out, and later calls hung).
  std::vector<int> listed(ranks.begin(), ranks.end());
  std::string purpose;
  try {
    // The counts are this communicator's state, and its transport is looked at while waiting:
    // one thread at a time, like its calls.
    ExclusiveCall exclusive(busy_, rank_, "group", [&] { abort_for_second_thread("group"); });
    const uint64_t nth = ++groups_[sorted];
    purpose = fmt::format("group/{}/{}", format_ids(sorted), nth);
    agree_on_group_order(purpose, sorted, listed);
  } catch (const Error&) {
    // An abort() from another thread while this rank waited: tell the peers now (an abort that
    // finds a call in progress leaves that to the call).
    deliver_abort_if_idle();
    throw;
  }
  const transport::ContextId context = draw_context(purpose, sorted);
  std::vector<int> members;
  for (int r : listed) members.push_back(members_[r]);
  return make(job_, context, std::move(members), options_, Deadline::after(options_.init_timeout));
}

}  // namespace tutti::comm
