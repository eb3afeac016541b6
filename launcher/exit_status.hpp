// How a rank ended, in the words tuttirun prints and the exit code it returns.
#pragma once

#include <sys/types.h>

#include <string>

namespace tutti::launcher {

struct ExitStatus {
  enum class Kind { kExited, kSignaled };
  Kind kind = Kind::kExited;
  int value = 0;  // exit code, or signal number

  static ExitStatus exited(int code) { return {Kind::kExited, code}; }
  static ExitStatus signaled(int sig) { return {Kind::kSignaled, sig}; }
  // From waitpid()'s status word.
  static ExitStatus from_wait_status(int status);

  bool success() const { return kind == Kind::kExited && value == 0; }
  // What a shell would report: the exit code, or 128 + signal.
  int shell_code() const { return kind == Kind::kExited ? value : 128 + value; }
  // "exited with status 3" / "was killed by signal 9 (SIGKILL)"
  std::string describe() const;
};

// "SIGKILL" for 9; "signal 77" style fallback for numbers without a name.
std::string signal_name(int sig);

// "tuttirun: rank 2 (pid 1234) exited with status 3", or with a remote host:
// "tuttirun: rank 2 on job-worker-1 (pid 1234) exited with status 137" (the pid is the local
// ssh/kubexec process).
std::string rank_failure_line(int rank, pid_t pid, const ExitStatus& status,
                              const std::string& host = "");

// "rank 2" or "rank 2 on job-worker-1".
std::string rank_and_host(int rank, const std::string& host);

}  // namespace tutti::launcher
