// SilentRanks: the processes tuttirun's store server found silent (no heartbeat for --hang-timeout:
// stopped, or hung in the kernel). The server's threads report them; the supervisor's loop takes
// them and ends each one, so that the job treats it as a failed rank.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <mutex>
#include <vector>

namespace tutti::launcher {

struct SilentRank {
  int64_t launch_id = -1;  // TUTTI_LAUNCH_ID: the index of its process in the supervisor's list
  pid_t pid = 0;           // its own pid, in its host's pid namespace
  double seconds = 0;      // how long it had been silent
};

class SilentRanks {
 public:
  void report(SilentRank rank) {
    std::lock_guard lock(mutex_);
    reported_.push_back(rank);
  }
  std::vector<SilentRank> take() {
    std::lock_guard lock(mutex_);
    std::vector<SilentRank> out;
    out.swap(reported_);
    return out;
  }

 private:
  std::mutex mutex_;
  std::vector<SilentRank> reported_;
};

}  // namespace tutti::launcher
