#include "launcher/exit_status.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launcher/supervisor.hpp"

namespace tutti::launcher {
namespace {

// A real wait status from a real child, so the decoding is checked against the kernel's encoding.
int wait_status_of_child(int exit_code, int signal_number) {
  pid_t pid = ::fork();
  if (pid == 0) {
    if (signal_number != 0) {
      ::signal(signal_number, SIG_DFL);
      ::raise(signal_number);
    }
    ::_exit(exit_code);
  }
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, 0), pid);
  return status;
}

class ExitCodes : public ::testing::TestWithParam<int> {};

TEST_P(ExitCodes, ExitedChild) {
  ExitStatus s = ExitStatus::from_wait_status(wait_status_of_child(GetParam(), 0));
  EXPECT_EQ(s.kind, ExitStatus::Kind::kExited);
  EXPECT_EQ(s.value, GetParam());
  EXPECT_EQ(s.success(), GetParam() == 0);
  EXPECT_EQ(s.shell_code(), GetParam());
  EXPECT_EQ(s.describe(), "exited with status " + std::to_string(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(Codes, ExitCodes, ::testing::Values(0, 1, 3, 127, 255));

struct SignalCase {
  int sig;
  const char* name;
};
class Signals : public ::testing::TestWithParam<SignalCase> {};

TEST_P(Signals, KilledChild) {
  ExitStatus s = ExitStatus::from_wait_status(wait_status_of_child(0, GetParam().sig));
  EXPECT_EQ(s.kind, ExitStatus::Kind::kSignaled);
  EXPECT_FALSE(s.success());
  EXPECT_EQ(s.shell_code(), 128 + GetParam().sig);
  EXPECT_EQ(s.describe(),
            fmt::format("was killed by signal {} ({})", GetParam().sig, GetParam().name));
}

INSTANTIATE_TEST_SUITE_P(Names, Signals,
                         ::testing::Values(SignalCase{SIGKILL, "SIGKILL"},
                                           SignalCase{SIGTERM, "SIGTERM"},
                                           SignalCase{SIGSEGV, "SIGSEGV"},
                                           SignalCase{SIGABRT, "SIGABRT"},
                                           SignalCase{SIGINT, "SIGINT"}));

TEST(ExitStatusText, FailureLine) {
  EXPECT_EQ(rank_failure_line(2, 1234, ExitStatus::exited(3)),
            "tuttirun: rank 2 (pid 1234) exited with status 3");
  EXPECT_EQ(rank_failure_line(0, 7, ExitStatus::signaled(9)),
            "tuttirun: rank 0 (pid 7) was killed by signal 9 (SIGKILL)");
  EXPECT_EQ(rank_failure_line(2, 8, ExitStatus::exited(137), "job-worker-1"),
            "tuttirun: rank 2 on job-worker-1 (pid 8) exited with status 137");
  EXPECT_EQ(signal_name(9), "SIGKILL");
  EXPECT_EQ(signal_name(1000), "signal 1000");
}

TEST(ExitStatusText, Summary) {
  EXPECT_EQ(failure_summary({}, 4), "");
  std::vector<RankOutcome> failed{{1, 10, ExitStatus::exited(3), false, ""},
                                  {2, 11, ExitStatus::signaled(15), true, ""}};
  EXPECT_EQ(failure_summary(failed, 4),
            "tuttirun: 2 of 4 ranks failed: rank 1 (pid 10) exited with status 3; rank 2 (pid 11) "
            "was killed by "
            "signal 15 (SIGTERM) sent by tuttirun");
  EXPECT_EQ(failure_summary({{4, 12, ExitStatus::exited(143), true, "job-worker-2"}}, 8),
            "tuttirun: 1 of 8 ranks failed: rank 4 on job-worker-2 (pid 12) exited with status 143 "
            "(stopped by tuttirun)");
  EXPECT_EQ(failure_summary({{0, 5, ExitStatus::exited(1), false, ""}}, 1),
            "tuttirun: 1 of 1 rank failed: rank 0 (pid 5) exited with status 1");
  EXPECT_EQ(failure_summary({{3, 6, ExitStatus::exited(137), false, "job-worker-1"}}, 4),
            "tuttirun: 1 of 4 ranks failed: rank 3 on job-worker-1 (pid 6) exited with status 137");
}

}  // namespace
}  // namespace tutti::launcher
