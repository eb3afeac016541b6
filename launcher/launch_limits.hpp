// What this machine lets one tuttirun start, checked before the first fork: a job that cannot be
// started whole is refused with the limit to raise, instead of failing halfway with some ranks
// already running.
#pragma once

namespace tutti::launcher {

// tuttirun keeps a few pipes per rank (output, stdin of remote helpers) and one child process per
// rank, whatever the backend.
inline constexpr int kFilesPerRank = 4;
inline constexpr int kFilesReserved = 64;
// Ranks per CPU beyond which a single-host job is refused as a mistake (a typo in -np).
inline constexpr int kMaxLocalRanksPerCpu = 64;

struct LaunchLimits {
  long open_files = -1;  // RLIMIT_NOFILE (soft); -1: unlimited
  long processes = -1;   // RLIMIT_NPROC (soft); -1: unlimited
  int cpus = 1;
  static LaunchLimits of_this_process();
};

// Throws Error(kConfig) naming the limit and how to raise it when `ranks` (`local` of them on this
// host) do not fit.
void check_launch_capacity(int ranks, int local, const LaunchLimits& limits);

}  // namespace tutti::launcher
