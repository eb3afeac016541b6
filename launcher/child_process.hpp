// One started process that tuttirun owns: it is reaped exactly once, and a ChildProcess destroyed
// while its process still runs kills it (SIGKILL) and reaps it, so no error path leaves one behind.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "launcher/exit_status.hpp"
#include "net/fd.hpp"

namespace tutti::launcher {

struct SpawnRequest {
  std::string path;               // what execve runs (already resolved)
  std::vector<std::string> argv;  // argv[0] included
  std::vector<std::string> env;   // "NAME=VALUE" each
  pid_t process_group = 0;        // 0: the child leads a new process group
  // A pipe to the child's stdin instead of /dev/null: remote ranks get their identity through it,
  // and its closing tells the remote side to stop the rank.
  bool pipe_stdin = false;
  // Keep tuttirun's stdout/stderr instead of pipes (the rank agent passes its rank's output
  // straight through).
  bool inherit_output = false;
  // Keep PR_SET_PDEATHSIG(SIGKILL): the child dies with its parent.
  bool die_with_parent = true;
};

class ChildProcess {
 public:
  // Forks and execs with stdin /dev/null and stdout/stderr into pipes, in the requested process
  // group, with PR_SET_PDEATHSIG(SIGKILL) so the child dies if tuttirun is killed. Throws kSystem
  // naming the program when fork or exec fails.
  static ChildProcess spawn(const SpawnRequest& request);

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) = delete;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  pid_t pid() const { return pid_; }
  bool reaped() const { return status_.has_value(); }
  const std::optional<ExitStatus>& status() const { return status_; }

  // The read ends of the child's stdout/stderr pipes (non-blocking); each can be taken once.
  net::Fd take_stdout() { return std::move(stdout_); }
  net::Fd take_stderr() { return std::move(stderr_); }
  // The write end of the child's stdin pipe (blocking), when SpawnRequest::pipe_stdin asked for
  // one.
  net::Fd take_stdin() { return std::move(stdin_); }

  // waitpid(WNOHANG): the status when the process has ended (and it is now reaped), else nullopt.
  std::optional<ExitStatus> try_reap();
  // Sends sig unless already reaped (a reaped pid may belong to someone else by now).
  void signal(int sig);

 private:
  ChildProcess(pid_t pid, net::Fd in, net::Fd out, net::Fd err)
      : pid_(pid), stdin_(std::move(in)), stdout_(std::move(out)), stderr_(std::move(err)) {}

  pid_t pid_ = -1;
  std::optional<ExitStatus> status_;
  net::Fd stdin_;
  net::Fd stdout_;
  net::Fd stderr_;
};

}  // namespace tutti::launcher
