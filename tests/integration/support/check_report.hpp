// How the integration check programs report: an "ok: WHAT" line for each check that passed,
// printed by rank 0 alone so a job says it once, and a "FAIL: rank R: WHAT" line for each failure
// on any rank. ctest fails a test on a "FAIL:" line, and the program exits 1 after any failure.
// Each line is flushed at once: the ranks' output is interleaved by tuttirun, and a rank that is
// killed or hangs must not take its last lines with it.
#pragma once

#include <atomic>
#include <cstdio>
#include <string>

namespace tutti::testing {

// This process's rank once it is known. Until then (and in a program of one process) it is -1,
// and failures are reported without a rank.
inline int g_rank = -1;
// The failures reported so far, from any thread.
inline std::atomic<int> g_failures{0};

inline void fail(const std::string& what) {
  if (g_rank >= 0)
    std::printf("FAIL: rank %d: %s\n", g_rank, what.c_str());
  else
    std::printf("FAIL: %s\n", what.c_str());
  std::fflush(stdout);
  ++g_failures;
}

inline void ok(const std::string& what) {
  if (g_rank == 0) std::printf("ok: %s\n", what.c_str());
  std::fflush(stdout);
}

}  // namespace tutti::testing
