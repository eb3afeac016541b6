#include "launcher/launch_limits.hpp"

#include <gtest/gtest.h>

#include <string>

#include "tutti/error.hpp"

namespace tutti::launcher {
namespace {

std::string refusal(int ranks, int local, const LaunchLimits& limits) {
  try {
    check_launch_capacity(ranks, local, limits);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConfig);
    return e.what();
  }
  return "";
}

TEST(LaunchLimits, FitsWithinTheLimits) {
  EXPECT_EQ(refusal(8, 8, {.open_files = 1024, .processes = 1000, .cpus = 2}), "");
  EXPECT_EQ(refusal(1000, 0, {.open_files = -1, .processes = -1, .cpus = 2}), "");  // remote ranks
}

TEST(LaunchLimits, TooManyOpenFilesNamesTheLimitToRaise) {
  // -np 100000 was not refused before forking.
  std::string m = refusal(100000, 100000, {.open_files = 20000, .processes = -1, .cpus = 2});
  EXPECT_NE(m.find("100000 ranks need about 400064 open files"), std::string::npos) << m;
  EXPECT_NE(m.find("ulimit -n 400064"), std::string::npos) << m;
}

TEST(LaunchLimits, TooManyProcesses) {
  std::string m = refusal(500, 0, {.open_files = -1, .processes = 400, .cpus = 2});
  EXPECT_NE(m.find("this user may have 400"), std::string::npos) << m;
}

TEST(LaunchLimits, AbsurdRanksPerCpuOnOneHost) {
  std::string m = refusal(129, 129, {.open_files = -1, .processes = -1, .cpus = 2});
  EXPECT_NE(m.find("more than 64 per CPU"), std::string::npos) << m;
  EXPECT_EQ(refusal(128, 128, {.open_files = -1, .processes = -1, .cpus = 2}), "");
  EXPECT_EQ(refusal(129, 0, {.open_files = -1, .processes = -1, .cpus = 2}), "");
}

}  // namespace
}  // namespace tutti::launcher
