// `tuttirun --mpirun`: for programs that bootstrap from MPI, or users who want Open MPI's own
// launcher, tuttirun does the Kubernetes part and hands the rest to the real mpirun: it writes the
// hostfile, points Open MPI's remote shell at kubexec (or ssh), forwards TUTTI_* and -x variables,
// and runs mpirun with the user's command. Open MPI 4 reads OMPI_MCA_plm_rsh_agent; Open MPI 5's
// PRRTE reads PRTE_MCA_plm_ssh_agent and ignores the OMPI_MCA_orte_* names (a job then silently
// runs on one node), so the version is asked first.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hostfile/hostfile.hpp"

namespace tutti::launcher {

// The major version from `mpirun --version` output ("mpirun (Open MPI) 4.1.4"); nullopt when it
// is not Open MPI.
std::optional<int> open_mpi_major(std::string_view version_output);

struct MpirunInputs {
  std::string mpirun;         // resolved path
  int major = 4;              // Open MPI major version
  std::string hostfile_path;  // empty: no --hostfile (this host only)
  int np = 0;                 // 0: let mpirun use every slot
  std::string remote_shell;   // kubexec or ssh path; empty: mpirun's default
  // Only the launcher may start daemons: workers have neither kubectl nor the RBAC to exec into
  // each other, so Open MPI's tree spawn is turned off for kubexec.
  bool no_tree_spawn = false;
  std::vector<std::string> forwarded;  // variable names for -x
  std::vector<std::string> command;
};

struct MpirunCommand {
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;  // set over tuttirun's environment
};

MpirunCommand mpirun_command(const MpirunInputs& in);

}  // namespace tutti::launcher
