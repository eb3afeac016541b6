// How many CPUs this process may run on and which machine (kernel) it runs on: what every rank
// announces at init beside its host id, so that the cost model can see ranks of several hosts
// (pods, containers) sharing one machine's CPUs (collectives/cpu_share.hpp).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tutti::bootstrap {

struct NodeCpus {
  int usable = 0;    // CPUs this process may use: its affinity mask, capped by a cgroup CPU quota
  int online = 0;    // CPUs of the machine (sysconf), which a container still sees in full
  std::string node;  // the kernel's boot id: equal on every pod or container of one machine
};

// This process's, read now. A part that cannot be read stays 0 (or empty): unknown.
NodeCpus node_cpus_here();

// A cgroup v2 `cpu.max` ("max 100000" or "<quota> <period>") or v1 cfs quota and period as CPUs,
// rounded up; 0 for no limit or text that is not a quota.
int cpus_of_quota(std::string_view cpu_max);

// "<usable> <online> <node>", and back (nullopt for text of another form).
std::string to_string(const NodeCpus& cpus);
std::optional<NodeCpus> parse_node_cpus(std::string_view text);

}  // namespace tutti::bootstrap
