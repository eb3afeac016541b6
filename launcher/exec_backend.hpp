// How a rank's process gets started. Local mode forks on this host; later backends (ssh, kubexec)
// start a local helper process that runs the rank elsewhere, so every backend hands back a local
// ChildProcess with its output pipes and the supervisor does not care which one ran.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/deadline.hpp"
#include "launcher/child_process.hpp"
#include "launcher/job_env.hpp"
#include "launcher/plan.hpp"

namespace tutti::launcher {

class ExecBackend {
 public:
  virtual ~ExecBackend() = default;

  virtual std::string name() const = 0;

  // Remote backends run each rank under `tuttirun --rank-agent` on its host: the rank's
  // environment then starts from the host's own, not from tuttirun's.
  virtual bool remote() const { return false; }

  // Starts a trivial command on `host` the way ranks will be started there, to find out whether the
  // host can run them yet; its stderr says why not, and exit status 127 means it never will (the
  // command or the exec tool is missing). Local backends have nothing to probe: nullopt.
  virtual std::optional<ChildProcess> start_probe(const std::string& host) {
    (void)host;
    return std::nullopt;
  }

  // Checks, before any rank starts, that the command can be run. Returns an empty string when it
  // can, else a message naming the command and what is wrong.
  virtual std::string check_command(const std::vector<std::string>& command,
                                    const Environment& env) = 0;

  virtual ChildProcess start(const RankSlot& slot, const std::vector<std::string>& command,
                             const Environment& env) = 0;

  // Signals every process of the job, including the ranks' own children.
  virtual void signal_job(int sig) = 0;

  // Called once every rank has been reaped: kills whatever the ranks left running (their children,
  // daemons) and waits until it is gone. Returns false when something survived the deadline.
  virtual bool finish_job(Deadline deadline) = 0;
};

// Ranks are forked on this host into one process group, which the destructor SIGKILLs as a last
// safety net. tuttirun becomes a child subreaper, so processes the ranks leave behind become its
// children and finish_job can kill and reap them even when they left the process group.
std::unique_ptr<ExecBackend> make_local_backend();

enum class RemoteShell { kSsh, kKubexec, kSrun };

struct RemoteBackendOptions {
  RemoteShell shell = RemoteShell::kKubexec;
  std::string program;          // the ssh, kubexec or srun executable on this host
  std::string remote_tuttirun;  // tuttirun's path on the hosts, which runs the rank agent
  double grace_seconds = 5.0;   // the agent's wait between SIGTERM and SIGKILL
  std::string cwd;              // tried as the ranks' working directory
  bool srun_unbind = true;      // srun: --cpu-bind=none (slurm_binding.hpp)
};

// Each rank is a local ssh/kubexec process running `tuttirun --rank-agent` on the rank's host; its
// request goes over that process's stdin, which stays open until the job stops (see
// rank_agent.hpp).
std::unique_ptr<ExecBackend> make_remote_backend(RemoteBackendOptions options);

// Quotes a word for a POSIX shell (ssh and kubexec hand the remote command to `sh -c`).
std::string shell_quote(const std::string& word);

}  // namespace tutti::launcher
