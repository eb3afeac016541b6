// Runs `tuttirun --mpirun`: finds and asks the real mpirun for its version, writes the job's
// hostfile to a temporary file, and runs mpirun (see mpirun_mode.hpp) with tuttirun's terminal,
// passing SIGINT/SIGTERM/SIGHUP on to it, until it exits. Returns mpirun's exit status.
#pragma once

#include <string>
#include <vector>

#include "launcher/host_source.hpp"
#include "launcher/job_env.hpp"
#include "launcher/options.hpp"
#include "launcher/plan.hpp"

namespace tutti::launcher {

int run_mpirun(const LaunchOptions& options, const HostSelection& hosts, const JobPlan& plan,
               const std::string& remote_shell, bool no_tree_spawn,
               const std::vector<EnvExport>& exports, const Environment& launcher_env);

}  // namespace tutti::launcher
