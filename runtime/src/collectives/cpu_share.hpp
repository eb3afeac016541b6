// How many ranks share a CPU while a collective runs: the cost model's view of hosts (pods,
// containers) that are not machines of their own. Several pods of one job on one Kubernetes node,
// or network-namespace pods on one machine, each look like a host with its own CPUs, but every
// rank's socket copies and wake-ups run on the node's CPUs. A TCP link there costs that many times
// its price on a machine of its own (docs/PERFORMANCE.md, "Scale across pods"), and the cost
// model scales it so.
#pragma once

#include <span>

namespace tutti::collectives {

struct CpuShare {
  double ranks = 1;    // the most ranks per CPU on any host or machine, at least 1
  double leaders = 1;  // the same counting one rank per host (hier's cross-host phase)
};

// One entry per rank: its host index, its machine index (ranks whose hosts share a kernel), the
// CPUs it may use (affinity and quota; 0 unknown) and its machine's CPUs (0 unknown). A host's
// CPUs are the most any of its ranks may use; a machine's are the fewer of its own and the sum of
// its hosts'. Unknowns count as plenty: they never raise the share.
CpuShare cpu_share_of(std::span<const int> host_of_rank, std::span<const int> machine_of_rank,
                      std::span<const int> usable_cpus, std::span<const int> machine_cpus);

}  // namespace tutti::collectives
