#include "launcher/host_source.hpp"

#include <charconv>
#include <fstream>
#include <set>

#include "core/error.hpp"
#include "core/parse.hpp"
#include "core/slurm_lists.hpp"
#include "hostfile/build.hpp"
#include "hostfile/dns_name.hpp"
#include "hostfile/parse.hpp"
#include "hostfile/slurm.hpp"

namespace tutti::launcher {
namespace {

std::string read_pods_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw make_error(ErrorCode::kConfig, "--pods-file {}: cannot be read", path);
  return hostfile::read_limited(in, path);
}

}  // namespace

std::optional<std::string> mpijob_hostfile(const EnvLookup& env, const FileExists& exists) {
  // What mpi-operator sets per mpiImplementation (OpenMPI; Open MPI 5's name; Intel; MPICH).
  for (const char* var : {"OMPI_MCA_orte_default_hostfile", "PRTE_MCA_prte_default_hostfile",
                          "I_MPI_HYDRA_HOST_FILE", "HYDRA_HOST_FILE"})
    if (auto path = env(var); path && !path->empty()) return *path;
  if (exists("/etc/mpi/hostfile")) return std::string("/etc/mpi/hostfile");
  return std::nullopt;
}

bool in_slurm_allocation(const EnvLookup& env) {
  return env("SLURM_JOB_ID") && env("SLURM_JOB_NODELIST") && !env("SLURM_STEP_ID") &&
         !env("SLURM_STEPID");
}

hostfile::Hostfile parse_host_list(std::string_view text, int default_slots) {
  hostfile::Hostfile out;
  std::set<std::string> seen;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string_view entry =
        text.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    pos = comma == std::string_view::npos ? text.size() + 1 : comma + 1;
    if (entry.empty()) continue;
    hostfile::Host host;
    host.slots = default_slots;
    size_t colon = entry.find(':');
    host.name = std::string(entry.substr(0, colon));
    if (colon != std::string_view::npos) {
      host.slots = static_cast<int>(parse::integer(
          entry.substr(colon + 1), fmt::format("-H {}: slots", hostfile::printable(entry)), 1,
          hostfile::kMaxSlots));
    }
    if (std::string why = hostfile::subdomain_problem(host.name); !why.empty())
      throw make_error(ErrorCode::kConfig, "-H {}: {}", hostfile::printable(host.name), why);
    if (!seen.insert(host.name).second)
      throw make_error(ErrorCode::kConfig, "-H: host {} is listed twice; give it :SLOTS once",
                       host.name);
    out.hosts.push_back(std::move(host));
  }
  if (out.hosts.empty()) throw make_error(ErrorCode::kConfig, "-H names no host");
  return out;
}

HostSelection select_hosts(const HostOptions& o, const EnvLookup& env, const FileExists& exists) {
  int given = !o.hostfile.empty() + !o.host_list.empty() + !o.pods.empty() + !o.pods_file.empty();
  if (given > 1)
    throw make_error(ErrorCode::kConfig,
                     "give the hosts one way: --hostfile, -H, --pods or --pods-file");
  if (o.slots < 0 || o.slots > hostfile::kMaxSlots)
    throw make_error(ErrorCode::kConfig, "--slots {} is not a slot count", o.slots);
  if (o.slots != 0 && (!o.hostfile.empty() || given == 0))
    throw make_error(ErrorCode::kConfig,
                     "--slots applies to -H and --pods; a hostfile gives slots per host");
  int slots = o.slots == 0 ? 1 : o.slots;

  HostSelection sel;
  if (!o.hostfile.empty()) {
    sel.origin = HostOrigin::kHostfile;
    sel.source = o.hostfile;
    sel.hosts = hostfile::read_file(o.hostfile);
  } else if (!o.host_list.empty()) {
    sel.origin = HostOrigin::kHostList;
    sel.source = "-H";
    sel.hosts = parse_host_list(o.host_list, slots);
  } else if (!o.pods.empty() || !o.pods_file.empty()) {
    sel.origin = HostOrigin::kPods;
    std::vector<std::string> pods;
    if (!o.pods.empty()) {
      sel.source = "--pods";
      pods = hostfile::split_pod_list(o.pods);
    } else {
      sel.source = o.pods_file;
      pods = hostfile::parse_pods_file(read_pods_file(o.pods_file), o.pods_file);
    }
    sel.hosts = hostfile::from_pods(pods, slots, "");
  } else if (auto path = mpijob_hostfile(env, exists)) {
    sel.origin = HostOrigin::kMpiJob;
    sel.source = *path;
    sel.hosts = hostfile::read_file(*path);
    for (const char* var : {"OMPI_MCA_plm_rsh_agent", "PRTE_MCA_plm_ssh_agent"})
      if (auto agent = env(var); agent && !agent->empty()) sel.mpijob_agent = *agent;
  } else if (in_slurm_allocation(env)) {
    // The allocation's nodes with the tasks Slurm placed on each, as Open MPI's and Horovod's
    // launchers read them. Without SLURM_TASKS_PER_NODE (an allocation by nodes only), one slot
    // per node.
    sel.origin = HostOrigin::kSlurm;
    sel.source = fmt::format("the Slurm allocation (job {})", *env("SLURM_JOB_ID"));
    std::string nodelist = *env("SLURM_JOB_NODELIST");
    std::string tasks = env("SLURM_TASKS_PER_NODE").value_or("");
    if (tasks.empty())
      tasks = fmt::format("1(x{})", slurm::expand_nodelist(nodelist, "SLURM_JOB_NODELIST").size());
    sel.hosts = hostfile::from_slurm_allocation(nodelist, tasks);
  }
  return sel;
}

}  // namespace tutti::launcher
