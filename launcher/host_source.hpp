// Where the job's hosts come from: --hostfile, -H, --pods/--pods-file, or, with none of them, the
// hostfile an MPIJob launcher pod already has (/etc/mpi/hostfile, or the one Open MPI / PRTE is
// told about in the environment), or the Slurm allocation tuttirun runs in (salloc, sbatch). No
// host source at all means this host only.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "hostfile/hostfile.hpp"

namespace tutti::launcher {

struct HostOptions {
  std::string hostfile;   // --hostfile
  std::string host_list;  // -H
  std::string pods;       // --pods
  std::string pods_file;  // --pods-file
  int slots = 0;          // --slots; 0: not given (1 for pods and -H entries without :N)
};

enum class HostOrigin { kThisHost, kHostfile, kHostList, kPods, kMpiJob, kSlurm };

struct HostSelection {
  HostOrigin origin = HostOrigin::kThisHost;
  hostfile::Hostfile hosts;  // empty for kThisHost
  std::string source;        // where the hosts came from, for messages: a path or an option
  // For kMpiJob: the remote shell the MPIJob set up for mpirun (OMPI_MCA_plm_rsh_agent or
  // PRTE_MCA_plm_ssh_agent), which tells v1 (kubexec) from v2beta1 (ssh) jobs.
  std::string mpijob_agent;
};

// The variables read here are Open MPI's and Kubeflow's, not TUTTI_* ones: the process's are
// env::process_value (core/env.hpp), tests pass their own.
using EnvLookup = std::function<std::optional<std::string>(std::string_view)>;
using FileExists = std::function<bool(const std::string&)>;

// The MPIJob launcher's hostfile, in the order Kubeflow sets it up; nullopt outside a launcher pod.
std::optional<std::string> mpijob_hostfile(const EnvLookup& env, const FileExists& exists);

// Whether this process runs in a Slurm allocation (an salloc shell or a batch script: SLURM_JOB_ID
// and SLURM_JOB_NODELIST) and not inside one of its job steps, where tuttirun would be a task.
bool in_slurm_allocation(const EnvLookup& env);

// Throws kConfig naming the option (or file:line) and what is wrong: two sources at once, --slots
// with --hostfile, bad names or slot counts.
HostSelection select_hosts(const HostOptions& options, const EnvLookup& env,
                           const FileExists& exists);

// -H "a:2,b,c:1": slots after ':' (default_slots without one).
hostfile::Hostfile parse_host_list(std::string_view text, int default_slots);

}  // namespace tutti::launcher
