#include "launcher/slurm_binding.hpp"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <string>

#include "core/deadline.hpp"
#include "core/env.hpp"
#include "launcher/child_process.hpp"
#include "launcher/command_lookup.hpp"
#include "launcher/job_env.hpp"

namespace tutti::launcher {

namespace {

bool read_slurm_binds_tasks() {
  Environment env = Environment::from_process();
  CommandLookup scontrol =
      find_executable("scontrol", env.get("PATH").value_or("/usr/local/bin:/usr/bin:/bin"));
  if (!scontrol.found()) return true;
  ChildProcess child = ChildProcess::spawn(
      SpawnRequest{scontrol.path, {"scontrol", "show", "config"}, env.to_strings(), 0});
  net::Fd out = child.take_stdout();
  std::string text;
  Deadline deadline = Deadline::after_seconds(5);
  while (!deadline.expired()) {
    pollfd p{out.get(), POLLIN, 0};
    if (::poll(&p, 1, deadline.remaining_ms(100)) <= 0) continue;
    char buf[4096];
    ssize_t n = ::read(out.get(), buf, sizeof buf);
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  child.signal(SIGKILL);
  while (!child.try_reap()) ::usleep(1000);
  // "TaskPlugin              = task/affinity,task/cgroup"
  size_t at = text.find("\nTaskPlugin ");
  if (at == std::string::npos) return true;
  std::string line = text.substr(at + 1, text.find('\n', at + 1) - at - 1);
  return line.find("affinity") != std::string::npos || line.find("cgroup") != std::string::npos;
}

}  // namespace

bool slurm_binds_tasks() {
  // The probe's backend and the job's ask alike; the cluster's configuration does not change.
  static const bool binds = read_slurm_binds_tasks();
  return binds;
}

}  // namespace tutti::launcher
