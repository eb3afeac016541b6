#include "launcher/exit_status.hpp"

#include <fmt/format.h>
#include <sys/wait.h>

#include <cstring>

namespace tutti::launcher {

ExitStatus ExitStatus::from_wait_status(int status) {
  if (WIFSIGNALED(status)) return signaled(WTERMSIG(status));
  if (WIFEXITED(status)) return exited(WEXITSTATUS(status));
  // Stopped/continued states are never asked for (no WUNTRACED); treat as a failure, not success.
  return exited(255);
}

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  if (abbrev == nullptr) return fmt::format("signal {}", sig);
  return fmt::format("SIG{}", abbrev);
}

std::string ExitStatus::describe() const {
  if (kind == Kind::kExited) return fmt::format("exited with status {}", value);
  return fmt::format("was killed by signal {} ({})", value, signal_name(value));
}

std::string rank_and_host(int rank, const std::string& host) {
  return host.empty() ? fmt::format("rank {}", rank) : fmt::format("rank {} on {}", rank, host);
}

std::string rank_failure_line(int rank, pid_t pid, const ExitStatus& status,
                              const std::string& host) {
  return fmt::format("tuttirun: {} (pid {}) {}", rank_and_host(rank, host), pid, status.describe());
}

}  // namespace tutti::launcher
