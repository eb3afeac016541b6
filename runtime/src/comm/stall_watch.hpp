// The hang report (docs/OBSERVABILITY.md): which rank a stalled collective waits for, named within
// seconds instead of at TUTTI_COLLECTIVE_TIMEOUT. One thread per job looks at its communicators'
// calls (call_progress.hpp) a few times per TUTTI_STALL_REPORT period:
// - a rank that has been in a call for TUTTI_STALL_REPORT writes <job>/stall/<context>/<sequence>/
//   <rank> once (nothing is written while calls finish in time);
// - a moment later the lowest rank that wrote one reads which members did (Store::missing) and logs
//   one line naming the call, how long it has waited, the ranks in it and the ranks not in it with
//   their hosts. When every member is in it the call is long, not stalled (256 MiB on a slow
//   link), and nothing is said;
// - a rank whose communicator has been idle that long looks (once per period) for such keys of its
//   next call: finding them, it says that the others wait for it, and what it last called.
// The store is the job's own, which every launcher gives (tuttirun, torchrun, mpirun, srun), so the
// same lines come under any of them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/store.hpp"
#include "comm/call_progress.hpp"
#include "core/log.hpp"

namespace tutti::comm {

class StallWatch {
 public:
  struct Watched {
    std::weak_ptr<const CallProgress> progress;
    uint64_t context = 0;  // the communicator's id: the same on every member
    int rank = 0;
    std::vector<std::string> hosts;  // each member's host id, by communicator rank
  };

  // Where the report's lines go: the log by default, a test's collector otherwise.
  using Report = std::function<void(log::Level level, const std::string& line)>;

  StallWatch(std::shared_ptr<bootstrap::Store> store, std::string job_id,
             std::chrono::milliseconds threshold, Report report = nullptr);
  ~StallWatch();
  StallWatch(const StallWatch&) = delete;
  StallWatch& operator=(const StallWatch&) = delete;

  void add(Watched watched);

 private:
  using Clock = CallProgress::Clock;
  struct Entry {
    Watched watched;
    uint64_t keyed = 0;      // the call this rank wrote its stall key for
    uint64_t looked = 0;     // the call whose keys it read (reported or found not stalled)
    uint64_t told_idle = 0;  // the next call it said the others wait in, while idle
    // Idle after call #idle_after (first seen so at idle_since): no clock read on the call's path.
    uint64_t idle_after = UINT64_MAX;
    Clock::time_point idle_since{};
    Clock::time_point idle_looked_at{};
  };

  void loop(std::stop_token stop);
  void check(Entry& e, const CallProgress::Snapshot& s, Clock::time_point now);
  void check_idle(Entry& e, const CallProgress::Snapshot& s, Clock::time_point now);
  std::string key(const Entry& e, uint64_t sequence, int rank) const;

  std::shared_ptr<bootstrap::Store> store_;
  std::string job_id_;
  std::chrono::milliseconds threshold_;
  std::chrono::milliseconds period_;
  Report report_;
  std::mutex mutex_;
  std::condition_variable_any wake_;
  std::vector<Entry> entries_;
  std::jthread thread_;  // last: stopped and joined before the members above go
};

}  // namespace tutti::comm
