#include "comm/stall_watch.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <utility>

#include "core/deadline.hpp"
#include "core/log.hpp"

namespace tutti::comm {
namespace {

using Seconds = std::chrono::duration<double>;

// How long a rank is in a call before it writes its key. Well under the threshold, so that when
// the first rank looks, every rank that has been in the call for more than this and a period has
// written one: a rank reported as not in the call was absent for nearly the whole threshold.
std::chrono::milliseconds mark_after(std::chrono::milliseconds threshold) {
  return std::min<std::chrono::milliseconds>(threshold / 4, std::chrono::seconds(1));
}

std::string communicator_name(uint64_t context) {
  return context == 0 ? std::string("the world communicator")
                      : fmt::format("communicator {}", context);
}

// "2 (host vm-1)", "2, 3 (hosts vm-1, vm-2)".
std::string ranks_on_hosts(const std::vector<int>& ranks, const std::vector<std::string>& hosts) {
  std::vector<std::string> names;
  for (int r : ranks) names.push_back(hosts[static_cast<size_t>(r)]);
  return fmt::format("{} ({} {})", fmt::join(ranks, ", "), ranks.size() == 1 ? "host" : "hosts",
                     fmt::join(names, ", "));
}

}  // namespace

StallWatch::StallWatch(std::shared_ptr<bootstrap::Store> store, std::string job_id,
                       std::chrono::milliseconds threshold, Report report)
    : store_(std::move(store)),
      job_id_(std::move(job_id)),
      threshold_(threshold),
      period_(std::clamp<std::chrono::milliseconds>(threshold / 4, std::chrono::milliseconds(50),
                                                    std::chrono::seconds(1))),
      report_(report ? std::move(report) : Report([](log::Level level, const std::string& line) {
        if (log::enabled(level)) log::write(level, line);
      })),
      thread_([this](std::stop_token stop) { loop(std::move(stop)); }) {}

StallWatch::~StallWatch() {
  thread_.request_stop();
  wake_.notify_all();
}

void StallWatch::add(Watched watched) {
  std::lock_guard lock(mutex_);
  Entry entry;
  entry.watched = std::move(watched);
  entries_.push_back(std::move(entry));
}

std::string StallWatch::key(const Entry& e, uint64_t sequence, int rank) const {
  return fmt::format("{}/stall/{}/{}/{}", job_id_, e.watched.context, sequence, rank);
}

void StallWatch::loop(std::stop_token stop) {
  std::vector<Entry> mine;
  while (!stop.stop_requested()) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, stop, period_, [] { return false; });
      if (stop.stop_requested()) return;
      // Taken out while the store is asked (a slow store must not hold up a communicator being
      // made), put back after.
      for (auto& e : entries_) mine.push_back(std::move(e));
      entries_.clear();
    }
    const auto now = Clock::now();
    std::erase_if(mine, [&](Entry& e) {
      const auto progress = e.watched.progress.lock();
      if (!progress) return true;
      try {
        check(e, progress->snapshot(), now);
      } catch (const std::exception& error) {
        // The store went away or stopped answering: the job's own calls say so; this thread
        // only stops looking at this communicator.
        log::debug("stall watch of {}: {}; no more stall reports for it",
                   communicator_name(e.watched.context), error.what());
        return true;
      }
      return false;
    });
    std::lock_guard lock(mutex_);
    for (auto& e : mine) entries_.push_back(std::move(e));
    mine.clear();
  }
}

void StallWatch::check(Entry& e, const CallProgress::Snapshot& s, Clock::time_point now) {
  const int rank = e.watched.rank;
  const int size = static_cast<int>(e.watched.hosts.size());
  // A call this rank marked has returned: its key goes (only stalls and long calls leave keys).
  if (e.keyed != 0 && s.finished >= e.keyed) {
    store_->remove(key(e, e.keyed, rank));
    e.keyed = 0;
  }
  if (!s.in_call()) {
    check_idle(e, s, now);
    return;
  }
  const uint64_t sequence = s.call.sequence;
  const auto waited = now - s.entered_at;
  if (waited < mark_after(threshold_)) return;
  if (e.keyed != sequence) {
    store_->set(key(e, sequence, rank), s.call.describe());
    e.keyed = sequence;
  }
  if (waited < threshold_ || e.looked == sequence) return;
  e.looked = sequence;
  std::vector<std::string> keys;
  for (int r = 0; r < size; ++r) keys.push_back(key(e, sequence, r));
  const std::vector<std::string> missing = store_->missing(keys);
  std::vector<int> in, out;
  for (int r = 0; r < size; ++r)
    (std::find(missing.begin(), missing.end(), keys[static_cast<size_t>(r)]) == missing.end() ? in
                                                                                              : out)
        .push_back(r);
  if (out.empty()) {
    if (rank != 0) return;
    report_(log::Level::kInfo,
            fmt::format("{} on {}: all {} ranks have been in it for {:.1f} s; a long call, "
                        "not a stall",
                        s.call.describe(), communicator_name(e.watched.context), size,
                        Seconds(waited).count()));
    return;
  }
  // One line per stall: from the lowest rank in the call.
  if (in.empty() || in.front() != rank) return;
  report_(log::Level::kWarn,
          fmt::format(
              "stall: {} on {} has waited {:.1f} s for rank {}, which {} not called it; ranks {} "
              "are in it. Look at what rank {} is doing (its own output says what it last called). "
              "This is a report (TUTTI_STALL_REPORT); the call fails at TUTTI_COLLECTIVE_TIMEOUT",
              s.call.describe(), communicator_name(e.watched.context), Seconds(waited).count(),
              ranks_on_hosts(out, e.watched.hosts), out.size() == 1 ? "has" : "have",
              fmt::join(in, ", "), fmt::join(out, ", ")));
}

void StallWatch::check_idle(Entry& e, const CallProgress::Snapshot& s, Clock::time_point now) {
  // Idle for the threshold: do others wait in this communicator's next call? Asked once per
  // threshold period, and only while idle that long (a training loop never is).
  if (e.idle_after != s.finished) {
    e.idle_after = s.finished;
    e.idle_since = now;
  }
  if (now - e.idle_since < threshold_ || now - e.idle_looked_at < threshold_) return;
  e.idle_looked_at = now;
  const uint64_t next = s.finished + 1;
  if (e.told_idle == next) return;
  const int size = static_cast<int>(e.watched.hosts.size());
  std::vector<std::string> keys;
  std::vector<int> others;
  for (int r = 0; r < size; ++r) {
    if (r == e.watched.rank) continue;
    keys.push_back(key(e, next, r));
    others.push_back(r);
  }
  if (keys.empty()) return;
  const std::vector<std::string> missing = store_->missing(keys);
  std::vector<int> waiting;
  std::string call;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (std::find(missing.begin(), missing.end(), keys[i]) != missing.end()) continue;
    waiting.push_back(others[i]);
    if (call.empty()) call = store_->get(keys[i], Deadline::after(std::chrono::seconds(5)));
  }
  if (waiting.empty()) return;
  e.told_idle = next;
  const std::string last =
      s.finished == 0 ? fmt::format("it has made no call there in the {:.1f} s since it was made",
                                    Seconds(now - e.idle_since).count())
                      : fmt::format("its last call there (#{}) returned {:.1f} s ago or more",
                                    s.finished, Seconds(now - e.idle_since).count());
  report_(
      log::Level::kWarn,
      fmt::format(
          "stall: ranks {} wait in {} on {} for this rank, which has not called it: {}. Every rank "
          "must make the same collective calls in the same order",
          fmt::join(waiting, ", "), call, communicator_name(e.watched.context), last));
}

}  // namespace tutti::comm
