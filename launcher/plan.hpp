// The plan: which rank runs where, with its local and cross (host) coordinates. Ranks fill hosts in
// order, each host's slots before the next host's, like mpirun's default --map-by slot.
#pragma once

#include <string>
#include <vector>

#include "hostfile/hostfile.hpp"

namespace tutti::launcher {

struct RankSlot {
  int rank = 0;
  int local_rank = 0;
  int local_size = 1;
  int cross_rank = 0;  // index of the slot's host among the job's hosts
  int cross_size = 1;
  std::string host;  // "localhost" in local mode
};

struct JobPlan {
  std::vector<RankSlot> slots;  // indexed by rank
  int world_size() const { return static_cast<int>(slots.size()); }
  // Hosts that run at least one rank, in cross_rank order.
  std::vector<std::string> hosts() const;
};

// np ranks, all on this host: local rank == rank.
JobPlan plan_local(int np);

// np ranks over the hosts' slots in order; np == 0 means every slot. Hosts left without a rank are
// not part of the job. kConfig when np exceeds the slots, naming the count of each.
JobPlan plan_hosts(const hostfile::Hostfile& hosts, int np);

}  // namespace tutti::launcher
