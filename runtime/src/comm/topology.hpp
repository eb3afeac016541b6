// Where each rank lives: derived from every rank's host id, so local/cross ranks are right even
// when the launcher did not say (torchrun without LOCAL_RANK, a hand-written env).
#pragma once

#include <string>
#include <vector>

#include "bootstrap/node_cpus.hpp"
#include "collectives/cpu_share.hpp"

namespace tutti::comm {

struct Topology {
  int local_rank = 0;
  int local_size = 1;
  int cross_rank = 0;  // index of this rank's host, hosts ordered by their lowest rank
  int cross_size = 1;
};

Topology topology_from_hosts(const std::vector<std::string>& host_ids, int rank);

// Every rank's host index (cross rank): equal ids get equal indices, hosts numbered by their
// lowest rank, as the hierarchical allreduce and the cost model expect (collectives::Context).
std::vector<int> host_index_of_ranks(const std::vector<std::string>& host_ids);

// Ranks per CPU for the cost model, from every rank's host index and announced CPUs: ranks whose
// machine (boot id) is the same share its CPUs, whatever their hosts. A rank whose machine is not
// known counts as a machine of its host's own; no CPUs at all (cpus empty) gives share 1.
// `host_cpus`: host_cpus_of_ranks' answer for the same ranks (a rank's usable CPUs are its
// host's: a rank bound to one core is not a host of one CPU).
collectives::CpuShare cpu_share_of_ranks(const std::vector<int>& host_of_rank,
                                         const std::vector<bootstrap::NodeCpus>& cpus,
                                         const std::vector<int>& host_cpus);

// The CPUs each host's ranks may run on together (bootstrap::shared_cpus), by host index: ranks
// bound to a core each (mpirun's default) have as many CPUs between them as ranks. 0: unknown.
std::vector<int> host_cpus_of_ranks(const std::vector<int>& host_of_rank,
                                    const std::vector<bootstrap::NodeCpus>& cpus);

}  // namespace tutti::comm
