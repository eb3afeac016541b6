// How a rank's process gets started. Local mode forks on this host; later backends (ssh, kubexec)
// start a local helper process that runs the rank elsewhere, so every backend hands back a local
// ChildProcess with its output pipes and the supervisor does not care which one ran.
#pragma once

#include <memory>
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

}  // namespace tutti::launcher
